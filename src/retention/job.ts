// Retention as a run does it: the body of the retention job (jobs/retention.ts, which the nightly
// chain and `efsync retention` run).
import type { JobContext } from '../job.js';
import type { JobOutcome } from '../outcome.js';
import { withDuckDBSettings } from '../warehouse/settings.js';
import { applyRetention, describeRetention, retentionPolicy } from './apply.js';

/** Removes what retention no longer keeps, or with `--dry-run` counts it and removes nothing. */
export async function retainInRun(ctx: JobContext): Promise<JobOutcome> {
  const dryRun = ctx.options.dryRun === true;
  if (!ctx.config.retention.enabled && !dryRun)
    return { status: 'ok', rows: {}, failures: [], summary: ['retention.enabled is false: nothing removed'] };
  const policy = retentionPolicy(ctx.config.retention);
  // It deletes, a slice at a time, what the sync wrote: under the sync's DuckDB settings. The
  // closed days go cold first, so that a first sync's long history is thinned a file at a time.
  const { memory_limit, threads } = ctx.config.sync;
  const result = await withDuckDBSettings(ctx.warehouse, { memory_limit, threads }, async () => {
    if (!dryRun) await ctx.warehouse.moveClosedDays();
    return applyRetention(ctx.warehouse, policy, { runId: ctx.runId, now: ctx.now(), dryRun, signal: ctx.signal });
  });
  return {
    status: 'ok',
    rows: {},
    removed: dryRun ? {} : result.removed,
    failures: [],
    summary: describeRetention(result, policy, dryRun),
  };
}
