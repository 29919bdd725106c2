// `efsync sync`: `efsync run sync` under its own name. The same job through the same runner (lock,
// ledger, timeout, signals, publish), the same options and the same exit codes.
import type { Command } from 'commander';
import { command, type Outcome } from '../boundary.js';
import { configWithDb, jobOptions, runCommandJob, runOptions, type RunFlags } from '../runner/commands.js';
import { loadJobs } from '../runner/registry.js';

export function registerSyncCommands(program: Command): void {
  runOptions(program.command('sync'))
    .description(
      'Sync sites, models, forecasts, model outputs and actuals from the service into the warehouse (the job `sync`)',
    )
    .action(
      command<[], RunFlags>(async (flags): Promise<Outcome> => {
        const config = configWithDb(flags);
        return runCommandJob((await loadJobs()).get('sync'), config, flags, jobOptions(flags));
      }),
    );
}
