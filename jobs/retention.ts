// Removes what retention no longer keeps (retention.* in the config; docs/warehouse.md,
// "Retention"): old vintages but the kept ones, old revisions of actuals, accuracy pairs before
// the ledger's window. The nightly chain runs it between the sync and accuracy; `efsync retention
// --dry-run` (or `efsync run retention --dry-run`) counts what would go and removes nothing.
import { defineJob } from '../src/job.js';
import { retainInRun } from '../src/retention/job.js';

export default defineJob({
  name: 'retention',
  description: 'Remove old vintages but the kept ones, old revisions of actuals and stale accuracy pairs (retention.*)',
  // Run by the nightly chain after the sync, or when asked.
  schedule: null,
  dryRun: true,
  run: retainInRun,
});
