// The sync as the rest of efsync uses it: jobs hand the sync (run.ts) what it needs of their run.
import { qualitySettingsFromConfig, type Resource, sizesOf } from '../config.js';
import type { JobContext } from '../job.js';
import type { JobOutcome } from '../outcome.js';
import { backfillOf, syncAll } from './run.js';

/**
 * Runs the sync of `resources` (default: `--only`, else config.sync.resources) with what it needs
 * of the job's context.
 */
export async function runSync(ctx: JobContext, resources?: readonly Resource[]): Promise<JobOutcome> {
  const { config, options } = ctx;
  const backfill = backfillOf(options); // a usage error before the service is connected
  return syncAll({
    client: await ctx.service(),
    warehouse: ctx.warehouse,
    log: ctx.log,
    progress: ctx.progress,
    signal: ctx.signal,
    runId: ctx.runId,
    now: ctx.now(),
    resources: resources ?? options.only ?? config.sync.resources,
    sites: options.sites,
    shard: options.shard,
    backfill,
    sync: config.sync,
    intervalLabels: config.service.interval_label,
    quality: qualitySettingsFromConfig(config.accuracy.quality, config.service.interval_label.actuals),
    heapFloorMb: sizesOf(config).syncHeapFloorMb,
  });
}
