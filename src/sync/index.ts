// The sync as the rest of efsync uses it: the orchestration and one job per resource set.
import type { Resource } from '../config.js';
import { defineJob, type Job, type JobContext, type JobOutcome } from '../runner/job.js';
import { syncAll } from './run.js';

export { syncAll } from './run.js';

/** The resources a sync run covers: `--only`, else config.sync.resources. */
export function resourcesOf(ctx: JobContext): Resource[] {
  return ctx.options.only ?? ctx.config.sync.resources;
}

/** Syncs the resources named by the run's options (`efsync sync --only ...`) or config. */
export const syncJob: Job = defineJob({
  name: 'sync',
  description: 'Sync sites, models, forecasts, model outputs and actuals (or --only some) into the warehouse',
  schedule: null,
  run: (ctx: JobContext): Promise<JobOutcome> => syncAll(ctx, resourcesOf(ctx)),
});
