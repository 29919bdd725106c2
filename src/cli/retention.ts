// `efsync retention [--dry-run]`: the retention job run now through the runner (lock, ledger,
// publish), as `efsync run retention` is; with --dry-run it counts what would go and removes nothing.
import type { Command } from 'commander';
import { loadJob } from '../runner/registry.js';
import { command } from './boundary.js';
import {
  CONFIG_OPTION,
  configWithDb,
  DB_OPTION,
  MEMORY_OPTION,
  runCommandJob,
  type CommonFlags,
  type RunFlags,
} from './runner.js';

type RetentionFlags = CommonFlags & Pick<RunFlags, 'timeout' | 'wait'> & { dryRun?: boolean };

export function registerRetentionCommands(program: Command): void {
  program
    .command('retention')
    .description(
      'Remove old vintages but the kept ones, old revisions of actuals and stale accuracy pairs (retention.* in the config); exit 0 ok, 2 usage, 3 busy, 4 failed',
    )
    .option('--dry-run', 'count what would go, per table, and remove nothing')
    .option('--timeout <duration>', 'abort the run after this long (default schedule.timeout; 0 for none)')
    .option('--wait <duration>', 'wait this long for another writer (default warehouse.lock_wait)')
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .action(
      command<[], RetentionFlags>(async (flags) => {
        const job = await loadJob('retention');
        return runCommandJob(job, configWithDb(flags), flags, flags.dryRun ? { dryRun: true } : {});
      }),
    );
}
