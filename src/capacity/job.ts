// The push of the capacity folder as a run does it: the body of the push-capacity job
// (jobs/push-capacity.ts, which `efsync capacity apply` runs).
import type { JobContext } from '../job.js';
import type { JobOutcome } from '../outcome.js';
import { applyOutcome, applyPlan } from './apply.js';
import { onlySites, planCapacity } from './plan.js';

/** Validates every file, then pushes the sites that changed (`--site` narrows the push, never the validation). */
export async function pushCapacity(ctx: JobContext): Promise<JobOutcome> {
  const client = await ctx.service();
  const plan = onlySites(
    await planCapacity(ctx.config.capacity.dir, client, ctx.warehouse, ctx.config.capacity.max_over_nameplate_pct),
    ctx.options.sites,
  );
  const result = await applyPlan(plan, client, ctx.warehouse, {
    runId: ctx.runId,
    now: ctx.now,
    signal: ctx.signal,
    concurrency: ctx.config.sync.concurrency,
  });
  return applyOutcome(result);
}
