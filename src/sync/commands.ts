// `efsync sync`: one run of the sync job through the runner (lock, ledger, publish), a progress
// bar on a terminal, the summary on stdout, and the runner's exit codes.
import type { Command } from 'commander';
import { loadConfig, RESOURCES, type LoadedConfig, type Resource } from '../config.js';
import { createLogger } from '../log.js';
import { terminalProgress } from '../progress.js';
import { EXIT } from '../runner/exit-codes.js';
import type { JobOptions } from '../runner/job.js';
import { parseShard, shardFromEnv } from '../lake/shard.js';
import { parseInstant } from '../time.js';

interface SyncFlags {
  only?: string;
  site?: string[];
  shard?: string;
  from?: string;
  to?: string;
  db?: string;
  config?: string;
}

class UsageError extends Error {}

export function registerSyncCommands(program: Command): void {
  program
    .command('sync')
    .description('Sync sites, models, forecasts, model outputs and actuals from the service into the warehouse')
    .option('--only <resources>', `comma-separated subset of ${RESOURCES.join(',')}`)
    .option('--site <id...>', 'only these sites (id or name); repeatable')
    .option('--shard <I/N>', 'only the sites of shard I of N (from 0; or EFSYNC_SHARD, or JOB_COMPLETION_INDEX with EFSYNC_SHARDS)')
    .option('--from <iso>', 'backfill a historical window from this instant (with --to)')
    .option('--to <iso>', 'end of the backfill window')
    .option('--db <path>', 'the warehouse file (overrides warehouse.path and EFSYNC_DB)')
    .option('--config <file>', 'config file (default config/efsync.yaml)')
    // An unknown or incomplete option is a usage error (2), not commander's 1, which means partial here.
    // Commander calls this before any work starts, so leaving at once loses nothing.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : EXIT.usage))
    .action(async (flags: SyncFlags) => {
      process.exitCode = await syncCommand(flags);
    });
}

async function syncCommand(flags: SyncFlags): Promise<number> {
  let config: LoadedConfig;
  let options: JobOptions;
  try {
    config = withDb(loadConfig(flags.config), flags.db);
    options = jobOptions(flags);
  } catch (error) {
    process.stderr.write(`efsync sync: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
  // Loaded here, not at the top: the other commands start without the sync's dependencies.
  const [{ runJob }, { syncJob }] = await Promise.all([import('../runner/run.js'), import('./index.js')]);
  const abort = new AbortController();
  const stop = (signal: NodeJS.Signals) => abort.abort(new Error(signal));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const result = await runJob(syncJob, {
      config,
      options,
      trigger: 'manual',
      log: createLogger({ level: config.log.level }),
      signal: abort.signal,
      progress: terminalProgress(),
    });
    const lines = result.summary.length > 0 ? result.summary : [`sync ${result.status}${result.error ? `: ${result.error}` : ''}`];
    process.stdout.write(`${lines.join('\n')}\nrun ${result.runId}: ${result.status} (exit ${result.exitCode}); warehouse ${config.warehouse.path}\n`);
    return result.exitCode;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

function withDb(config: LoadedConfig, db: string | undefined): LoadedConfig {
  return db ? { ...config, warehouse: { ...config.warehouse, path: db } } : config;
}

/** The job options from the flags; anything wrong is a usage error naming the flag. */
export function jobOptions(flags: Pick<SyncFlags, 'only' | 'site' | 'shard' | 'from' | 'to'>, env: NodeJS.ProcessEnv = process.env): JobOptions {
  const options: JobOptions = {};
  const shard = flags.shard !== undefined ? parseShard(flags.shard, '--shard') : shardFromEnv(env);
  if (shard) options.shard = shard;
  if (flags.only !== undefined) options.only = parseResources(flags.only);
  if (flags.site && flags.site.length > 0) options.sites = flags.site;
  if ((flags.from === undefined) !== (flags.to === undefined)) throw new UsageError('--from and --to go together');
  if (flags.from !== undefined && flags.to !== undefined) {
    options.from = instantFlag('--from', flags.from);
    options.to = instantFlag('--to', flags.to);
    if (options.from >= options.to) throw new UsageError(`--from ${flags.from} must be before --to ${flags.to}`);
  }
  return options;
}

function parseResources(text: string): Resource[] {
  const names = text.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(RESOURCES as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) {
    throw new UsageError(`--only: unknown resource ${unknown.map((n) => JSON.stringify(n)).join(', ') || '(none given)'}; use a comma-separated subset of ${RESOURCES.join(',')}`);
  }
  return RESOURCES.filter((r) => names.includes(r));
}

function instantFlag(flag: string, text: string): number {
  try {
    return parseInstant(text);
  } catch {
    throw new UsageError(`${flag}: not a timestamp: ${JSON.stringify(text)} (use ISO 8601, e.g. 2026-11-01T00:00Z)`);
  }
}
