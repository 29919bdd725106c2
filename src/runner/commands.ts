// `efsync run`, `efsync schedule`, `efsync status` and `efsync config schema|check`: the human
// summary on stdout, pino JSON logs on stderr, and the exit codes of exit-codes.ts.
import type { Command } from 'commander';
import { configJsonSchema, loadConfig, resolveApiKey, type LoadedConfig } from '../config.js';
import { createLogger } from '../log.js';
import { terminalProgress } from '../progress.js';
import { jobOptions } from '../sync/commands.js';
import { parseDuration } from '../time.js';
import { EXIT } from './exit-codes.js';
import type { Job, JobOptions } from './job.js';
import { loadJobs, type JobRegistry } from './registry.js';
import { onShutdownSignals } from './signals.js';

export interface CommonFlags {
  db?: string;
  config?: string;
}

export interface RunFlags extends CommonFlags {
  site?: string[];
  shard?: string;
  from?: string;
  to?: string;
  only?: string;
  timeout?: string;
  wait?: string;
}

export function registerRunnerCommands(program: Command): void {
  usageExits(program.command('run'))
    .description('Run one job now (for cron, systemd timers, Kubernetes CronJobs); exit 0 ok, 1 partial, 2 usage, 3 busy, 4 failed, 5 interrupted')
    .argument('<job>', 'the job (see `efsync status` for the list)')
    .option('--site <id...>', 'only these sites (id or name); repeatable')
    .option('--shard <I/N>', 'only the sites of shard I of N (from 0; or EFSYNC_SHARD, or JOB_COMPLETION_INDEX with EFSYNC_SHARDS)')
    .option('--from <iso>', 'backfill a historical window from this instant (with --to)')
    .option('--to <iso>', 'end of the backfill window')
    .option('--only <resources>', 'comma-separated subset of sites,models,forecasts,outputs,actuals')
    .option('--timeout <duration>', 'abort the run after this long (default schedule.timeout; 0 for none)')
    .option('--wait <duration>', 'wait this long for another writer (default warehouse.lock_wait)')
    .option('--db <path>', 'the warehouse file (overrides warehouse.path and EFSYNC_DB)')
    .option('--config <file>', 'config file (default config/efsync.yaml, or EFSYNC_CONFIG)')
    .action(async (name: string, flags: RunFlags) => {
      process.exitCode = await runJobCommand(name, flags);
    });

  usageExits(program.command('schedule'))
    .description('Run the scheduler daemon (schedule.* in the config); stops gracefully on SIGINT/SIGTERM and exits 0')
    .option('--db <path>', 'the warehouse file (overrides warehouse.path and EFSYNC_DB)')
    .option('--config <file>', 'config file (default config/efsync.yaml, or EFSYNC_CONFIG)')
    .action(async (flags: CommonFlags) => {
      process.exitCode = await scheduleCommand(flags);
    });

  usageExits(program.command('status'))
    .description('Last run of each job, next scheduled times, freshness per site and recent failures')
    .option('--json', 'print one JSON object')
    .option('--db <path>', 'the warehouse file (overrides warehouse.path and EFSYNC_DB)')
    .option('--config <file>', 'config file (default config/efsync.yaml, or EFSYNC_CONFIG)')
    .action(async (flags: CommonFlags & { json?: boolean }) => {
      process.exitCode = await statusCommand(flags);
    });

  const config = usageExits(program.command('config')).description('The config file: its JSON Schema, and a check of it');
  usageExits(config.command('schema'))
    .description('Print the JSON Schema of config/efsync.yaml (for editors: yaml-language-server)')
    .action(() => {
      process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    });
  usageExits(config.command('check'))
    .description('Validate the config file and the schedules in it; exit 2 naming the key and line when invalid')
    .option('--config <file>', 'config file (default config/efsync.yaml, or EFSYNC_CONFIG)')
    .action(async (flags: CommonFlags) => {
      process.exitCode = await checkCommand(flags);
    });
}

/** Commander's own errors (unknown option, missing argument) exit with the usage code, not 1. */
function usageExits(command: Command): Command {
  return command.exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : EXIT.usage);
  });
}

/** Config and jobs, or the usage exit code after saying what is wrong. */
async function setUp(command: string, flags: CommonFlags): Promise<{ config: LoadedConfig; registry: JobRegistry } | number> {
  try {
    const config = loadConfig(flags.config);
    const withDb = flags.db ? { ...config, warehouse: { ...config.warehouse, path: flags.db } } : config;
    return { config: withDb, registry: await loadJobs() };
  } catch (error) {
    process.stderr.write(`efsync ${command}: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
}

/** `efsync run <job>`: one run with the summary on stdout; resolves to the exit code. */
export async function runJobCommand(name: string, flags: RunFlags): Promise<number> {
  const setup = await setUp('run', flags);
  if (typeof setup === 'number') return setup;
  const { config, registry } = setup;
  let job: Job;
  let options: JobOptions;
  let timeoutMs: number | undefined;
  let lockWaitMs: number | undefined;
  try {
    job = registry.get(name);
    options = jobOptions(flags);
    timeoutMs = flags.timeout === undefined ? undefined : parseDuration(flags.timeout === '0' ? '0s' : flags.timeout);
    lockWaitMs = flags.wait === undefined ? undefined : parseDuration(flags.wait === '0' ? '0s' : flags.wait);
  } catch (error) {
    process.stderr.write(`efsync run: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
  const log = createLogger({ level: config.log.level });
  const shutdown = onShutdownSignals(log);
  try {
    const { runJob } = await import('./run.js');
    const result = await runJob(job, {
      config, options, trigger: 'manual', log, signal: shutdown.signal, progress: terminalProgress(), timeoutMs, lockWaitMs,
    }).catch((error: Error) => error);
    if (result instanceof Error) {
      // The run could not even be recorded (e.g. the warehouse file is unreadable).
      log.error({ err: result }, 'run failed before it started');
      process.stdout.write(`${job.name}: failed before it started: ${result.message}\n`);
      return EXIT.failed;
    }
    const lines = result.summary.length > 0 ? [...result.summary] : [];
    if (result.status === 'busy') lines.push(`not run: ${result.error}`);
    else if (result.error) lines.push(`error: ${result.error}`);
    lines.push(`${job.name} run ${result.runId}: ${result.status} (exit ${result.exitCode}); warehouse ${config.warehouse.path}`);
    process.stdout.write(`${lines.join('\n')}\n`);
    return result.exitCode;
  } finally {
    shutdown.dispose();
  }
}

async function scheduleCommand(flags: CommonFlags): Promise<number> {
  const setup = await setUp('schedule', flags);
  if (typeof setup === 'number') return setup;
  const { runDaemon, jobSchedules } = await import('./schedule.js');
  try {
    jobSchedules(setup.config, setup.registry);
  } catch (error) {
    process.stderr.write(`efsync schedule: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
  const log = createLogger({ level: setup.config.log.level });
  const shutdown = onShutdownSignals(log);
  try {
    await runDaemon({ ...setup, log, signal: shutdown.signal, print: (line) => process.stdout.write(`${line}\n`) });
    return EXIT.ok;
  } catch (error) {
    log.error({ err: error }, 'the scheduler stopped on an error');
    process.stderr.write(`efsync schedule: ${(error as Error).message}\n`);
    return EXIT.failed;
  } finally {
    shutdown.dispose();
  }
}

async function statusCommand(flags: CommonFlags & { json?: boolean }): Promise<number> {
  const setup = await setUp('status', flags);
  if (typeof setup === 'number') return setup;
  const { collectStatus, formatStatus } = await import('./status.js');
  let status;
  try {
    status = await collectStatus(setup.config, setup.registry);
  } catch (error) {
    process.stderr.write(`efsync status: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
  process.stdout.write(flags.json ? `${JSON.stringify(status, null, 2)}\n` : `${formatStatus(status).join('\n')}\n`);
  return EXIT.ok;
}

async function checkCommand(flags: CommonFlags): Promise<number> {
  const setup = await setUp('config check', flags);
  if (typeof setup === 'number') return setup;
  const { config, registry } = setup;
  const { jobSchedules } = await import('./schedule.js');
  try {
    const schedules = jobSchedules(config, registry).filter((s) => s.expr !== null);
    const service = config.service.base_url === null ? 'the embedded emulator (demo data)' : config.service.base_url;
    if (config.service.base_url !== null && resolveApiKey(config) === null) {
      throw new Error(`service.base_url is ${config.service.base_url} but there is no API key: set EFSYNC_API_KEY or EFSYNC_API_KEY_FILE (or service.api_key_file)`);
    }
    const key = config.service.base_url === null ? 'not needed' : 'found';
    process.stdout.write([
      `${config.file ?? 'defaults (no config file)'}: ok`,
      `  service ${service}; API key ${key}`,
      `  warehouse ${config.warehouse.path}`,
      `  schedule (${config.schedule.timezone}): ${schedules.map((s) => `${s.job} "${s.expr}"`).join(', ') || 'nothing scheduled'}`,
      '',
    ].join('\n'));
    return EXIT.ok;
  } catch (error) {
    process.stderr.write(`efsync config check: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
}
