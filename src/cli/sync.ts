// `efsync sync`: `efsync run sync` under its own name. The same job through the same runner (lock,
// ledger, timeout, signals, publish), the same options and the same exit codes. With `--plan` it
// runs nothing: it prints what the next run will cost the service (plan.ts).
import type { Command } from 'commander';
import type { LoadedConfig } from '../config.js';
import { createLogger } from '../log.js';
import type { Outcome } from '../outcome.js';
import { loadJob } from '../runner/registry.js';
import { backfillOf } from '../sync/run.js';
import { command } from './boundary.js';
import { runClock } from './clock.js';
import { configWithDb, jobOptions, runCommandJob, runOptions, type RunFlags } from './runner.js';

export function registerSyncCommands(program: Command): void {
  runOptions(program.command('sync'))
    .description(
      'Sync sites, models, forecasts, model outputs and actuals from the service into the warehouse (the job `sync`)',
    )
    .option(
      '--plan',
      'write nothing: print how many requests the next run makes per resource, and how long at service.rate_limit (lists the sites, and each site models and forecast updates)',
    )
    .action(
      command<[], RunFlags & { plan?: boolean }>(async (flags): Promise<Outcome> => {
        const config = configWithDb(flags);
        if (flags.plan) return planCommand(config, flags);
        return runCommandJob(await loadJob('sync'), config, flags, jobOptions(flags));
      }),
    );
}

async function planCommand(config: LoadedConfig, flags: RunFlags): Promise<Outcome> {
  const options = jobOptions(flags);
  const backfill = backfillOf(options);
  const log = createLogger({ level: config.log.level });
  const [{ connectService }, { planSync, formatPlan }] = await Promise.all([
    import('../service.js'),
    import('../sync/plan.js'),
  ]);
  const connection = await connectService(config, log);
  try {
    const plan = await planSync({
      client: connection.client,
      warehousePath: config.warehouse.path,
      log,
      // The run's clock, so that the plan is of the night the sync with the same environment makes.
      now: runClock()(),
      resources: options.only ?? config.sync.resources,
      sites: options.sites,
      shard: options.shard,
      backfill,
      sync: config.sync,
    });
    const rate = config.service.rate_limit;
    process.stdout.write(`${formatPlan(plan, rate && { requests: rate.requests, perMs: rate.per }).join('\n')}\n`);
    return 'ok';
  } finally {
    await connection.close();
  }
}
