// Removes what retention no longer keeps (retention.* in the config; docs/warehouse.md,
// "Retention"): old vintages but the kept ones, old revisions of actuals, accuracy pairs before
// the ledger's window. The nightly chain runs it between the sync and accuracy; `efsync retention
// --dry-run` (or `efsync run retention --dry-run`) counts what would go and removes nothing.
import { defineJob } from '../src/job.js';
import { applyRetention, describeRetention, retentionPolicy } from '../src/retention/apply.js';
import { withDuckDBSettings } from '../src/warehouse/settings.js';

export default defineJob({
  name: 'retention',
  description: 'Remove old vintages but the kept ones, old revisions of actuals and stale accuracy pairs (retention.*)',
  // Run by the nightly chain after the sync, or when asked.
  schedule: null,
  dryRun: true,
  async run(ctx) {
    const dryRun = ctx.options.dryRun === true;
    if (!ctx.config.retention.enabled && !dryRun)
      return { status: 'ok', rows: {}, failures: [], summary: ['retention.enabled is false: nothing removed'] };
    const policy = retentionPolicy(ctx.config.retention);
    // It deletes, a slice at a time, what the sync wrote: under the sync's DuckDB settings.
    const { memory_limit, threads } = ctx.config.sync;
    const result = await withDuckDBSettings(ctx.warehouse, { memory_limit, threads }, () =>
      applyRetention(ctx.warehouse, policy, { runId: ctx.runId, now: ctx.now(), dryRun, signal: ctx.signal }),
    );
    return {
      status: 'ok',
      rows: {},
      removed: dryRun ? {} : result.removed,
      failures: [],
      summary: describeRetention(result, policy, dryRun),
    };
  },
});
