// Pushes the capacity timelines of the capacity folder (capacity.dir) to the service: every file
// validated first (one invalid file pushes nothing), then only the sites that changed, each push
// recorded in the ledger (capacity_pushes). `--site` narrows the push, never the validation.
import { applyOutcome, applyPlan } from '../src/capacity/apply.js';
import { onlySites, planCapacity } from '../src/capacity/plan.js';
import { defineJob } from '../src/job.js';

export default defineJob({
  name: 'push-capacity',
  description: 'Push changed capacity timelines from config/capacity/ to the service, with a ledger',
  // Hourly: a merged config change reaches the service within the hour; unchanged files push nothing.
  schedule: '5 * * * *',
  async run(ctx) {
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
  },
});
