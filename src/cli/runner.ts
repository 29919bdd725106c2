// `efsync run`, `efsync schedule`, `efsync status` and `efsync config schema|check`, and the one
// way every writing command runs a job (`runCommandJob`): the human summary on stdout, pino JSON
// logs on stderr, the outcome for the boundary's exit-code table.
import type { Command } from 'commander';
import { configJsonSchema, loadConfig, resolveApiKey, RESOURCES, type LoadedConfig, type Resource } from '../config.js';
import { ConfigError } from '../errors.js';
import type { Job, JobOptions } from '../job.js';
import { parseShard, shardFromEnv } from '../lake/shard.js';
import { createLogger, type Logger } from '../log.js';
import type { Outcome } from '../outcome.js';
import { printAbove, terminalProgress } from '../progress.js';
import { describeCost, processPeakRssMb } from '../runner/measure.js';
import { loadJob, loadJobs } from '../runner/registry.js';
import type { RunnerMetrics } from '../runner/metrics.js';
import type { RunResult } from '../runner/run.js';
import { stopSignal } from '../runner/signals.js';
import { parseDuration, parseInstant } from '../time.js';
import { command, UsageError } from './boundary.js';
import { clockOverride, CLOCK_VARIABLE, runClock } from './clock.js';
import { describeSink, LAKE_OPTION, SINK_OPTION, withSinkFlags, type SinkFlags } from './sink-flags.js';

/** What SIGINT/SIGTERM does to a run, the daemon's included. */
const STOPPING_RUN = 'stopping after the site in flight (the run is recorded as interrupted)';

export interface CommonFlags extends SinkFlags {
  db?: string;
  config?: string;
  memory?: string;
}

export interface RunFlags extends CommonFlags {
  site?: string[];
  shard?: string;
  from?: string;
  to?: string;
  only?: string;
  timeout?: string;
  wait?: string;
  metricsFile?: string;
  pushgateway?: string;
}

interface ScheduleFlags extends CommonFlags {
  metricsPort?: string;
  metricsHost: string;
}

export const DB_OPTION = ['--db <path>', 'the warehouse file (overrides warehouse.path and EFSYNC_DB)'] as const;
export const MEMORY_OPTION = [
  '--memory <size>',
  "the process's memory budget, e.g. 256MB or 1GB (overrides resources.memory and EFSYNC_MEMORY)",
] as const;
export const CONFIG_OPTION = ['--config <file>', 'config file (default config/efsync.yaml, or EFSYNC_CONFIG)'] as const;

/** The options of every command that runs a job (`efsync run`, `efsync sync`). */
export function runOptions(cmd: Command): Command {
  return cmd
    .option('--site <id...>', 'only these sites (id or name); repeatable')
    .option(
      '--shard <I/N>',
      'only the sites of shard I of N (from 0; or EFSYNC_SHARD, or JOB_COMPLETION_INDEX with EFSYNC_SHARDS)',
    )
    .option('--from <iso>', 'backfill a historical window from this instant (with --to)')
    .option('--to <iso>', 'end of the backfill window')
    .option('--only <resources>', `comma-separated subset of ${RESOURCES.join(',')}`)
    .option('--timeout <duration>', 'abort the run after this long (default schedule.timeout; 0 for none)')
    .option('--wait <duration>', 'wait this long for another writer (default warehouse.lock_wait)')
    .option(
      '--metrics-file <path>',
      "write the run's Prometheus metrics to this file (node_exporter's textfile collector)",
    )
    .option('--pushgateway <url>', "push the run's Prometheus metrics to this Pushgateway")
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...SINK_OPTION)
    .option(...LAKE_OPTION)
    .option(...CONFIG_OPTION);
}

export function registerRunnerCommands(program: Command): void {
  runOptions(program.command('run'))
    .description(
      'Run one job now (for cron, systemd timers, Kubernetes CronJobs); exit 0 ok, 1 partial, 2 usage, 3 busy, 4 failed, 5 interrupted',
    )
    .argument('<job>', 'the job (see `efsync status` for the list)')
    .option('--dry-run', 'show what the job would do and change nothing (jobs that can: retention)')
    .action(
      command<[string], RunFlags & { dryRun?: boolean }>(async (name, flags) => {
        const config = configWithDb(flags);
        const job = await loadJob(name);
        if (flags.dryRun && !job.dryRun) throw new UsageError(`--dry-run: job "${name}" has no dry run`);
        return runCommandJob(job, config, flags, { ...jobOptions(flags), ...(flags.dryRun ? { dryRun: true } : {}) });
      }),
    );

  program
    .command('schedule')
    .description('Run the scheduler daemon (schedule.* in the config); stops gracefully on SIGINT/SIGTERM and exits 0')
    .option('--metrics-port <port>', 'serve /metrics, /healthz and /readyz on this port (0: any free one)')
    .option('--metrics-host <host>', 'the address the metrics port listens on', '0.0.0.0')
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .action(command<[], ScheduleFlags>((flags) => scheduleCommand(flags)));

  program
    .command('status')
    .description('Last run of each job, next scheduled times, freshness per site and recent failures')
    .option('--json', 'print one JSON object')
    .option(
      '--check',
      'one line and exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN from the monitoring.* thresholds (a Nagios plugin)',
    )
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .action(
      command<[], CommonFlags & { json?: boolean; check?: boolean }>((flags) =>
        flags.check ? checkStatusCommand(flags) : statusCommand(flags),
      ),
    );

  const config = program.command('config').description('The config file: its JSON Schema, and a check of it');
  config
    .command('schema')
    .description('Print the JSON Schema of config/efsync.yaml (for editors: yaml-language-server)')
    .action(
      command<[], object>(() => {
        process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
        return 'ok';
      }),
    );
  config
    .command('check')
    .description('Validate the config file and the schedules in it; exit 2 naming the key and line when invalid')
    .option(...CONFIG_OPTION)
    .action(command<[], CommonFlags>((flags) => checkCommand(flags)));
}

/** The config, with `--db`, `--memory` (and `--sink`, `--lake`) taking precedence over the file and the environment. */
export function configWithDb(flags: CommonFlags): LoadedConfig {
  const config = loadConfig(flags.config, process.env, { memory: flags.memory });
  return withSinkFlags(flags.db ? { ...config, warehouse: { ...config.warehouse, path: flags.db } } : config, flags);
}

/** The job options from the flags; anything wrong is a usage error naming the flag. */
export function jobOptions(
  flags: Pick<RunFlags, 'only' | 'site' | 'shard' | 'from' | 'to'>,
  env: NodeJS.ProcessEnv = process.env,
): JobOptions {
  const options: JobOptions = {};
  const shard = flags.shard !== undefined ? parseShard(flags.shard, '--shard') : shardFromEnv(env);
  if (shard) options.shard = shard;
  if (flags.only !== undefined) options.only = parseResources(flags.only);
  if (flags.site && flags.site.length > 0) options.sites = flags.site;
  if ((flags.from === undefined) !== (flags.to === undefined)) throw new UsageError('--from and --to go together');
  if (flags.from !== undefined && flags.to !== undefined) {
    options.from = instantFlag('--from', flags.from);
    options.to = instantFlag('--to', flags.to);
    checkWindow(options.from, options.to, flags.from, flags.to);
  }
  return options;
}

/** `--from` after `--to` is a usage error for every command. */
export function checkWindow(from: number | undefined, to: number | undefined, fromText: string, toText: string): void {
  if (from !== undefined && to !== undefined && from >= to)
    throw new UsageError(`--from ${fromText} must be before --to ${toText}`);
}

function parseResources(text: string): Resource[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(RESOURCES as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) {
    throw new UsageError(
      `--only: unknown resource ${unknown.map((n) => JSON.stringify(n)).join(', ') || '(none given)'}; use a comma-separated subset of ${RESOURCES.join(',')}`,
    );
  }
  return RESOURCES.filter((r) => names.includes(r));
}

export function instantFlag(flag: string, text: string): number {
  try {
    return parseInstant(text);
  } catch {
    throw new UsageError(`${flag}: not a timestamp: ${JSON.stringify(text)} (use ISO 8601, e.g. 2026-11-01T00:00Z)`);
  }
}

function durationFlag(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  try {
    return parseDuration(text === '0' ? '0s' : text);
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`);
  }
}

export interface CommandJobOutput {
  /** Prints the result (default: the job's summary), before the line naming run, status and exit code. */
  print?: (result: RunResult) => void;
  /** Where that line goes (default stdout). */
  runLineTo?: NodeJS.WritableStream;
}

/**
 * One run of `job` for a command (`run`, `sync`, `demo`, `accuracy`, `capacity apply`): the lock,
 * the ledger row, the timeout, the process's stop signal and the publish of the runner, the
 * summary on stdout. Resolves to the run's outcome.
 */
export async function runCommandJob(
  job: Job,
  config: LoadedConfig,
  flags: Pick<RunFlags, 'timeout' | 'wait' | 'metricsFile' | 'pushgateway'>,
  options: JobOptions,
  output: CommandJobOutput = {},
): Promise<Outcome> {
  const timeoutMs = durationFlag('--timeout', flags.timeout);
  const lockWaitMs = durationFlag('--wait', flags.wait);
  if (flags.pushgateway !== undefined) urlFlag('--pushgateway', flags.pushgateway);
  const { runJob } = await import('../runner/run.js');
  const metrics =
    flags.metricsFile || flags.pushgateway ? new (await import('../runner/metrics.js')).RunnerMetrics() : null;
  const now = runClock();
  const log = createLogger({ level: config.log.level });
  // With the default summary, a chain's steps are printed as each ends, above the progress bar;
  // the run's summary begins with those lines, and the rest is printed after the run.
  let printed = 0;
  const stepEnded = (lines: readonly string[]) => {
    printAbove(process.stdout, lines.map((line) => `${line}\n`).join(''));
    printed += lines.length;
  };
  const result = await runJob(job, {
    config,
    options,
    trigger: 'manual',
    log,
    signal: stopSignal(STOPPING_RUN),
    progress: terminalProgress(),
    stepEnded: output.print ? undefined : stepEnded,
    timeoutMs,
    lockWaitMs,
    now,
    ...(metrics ? { observer: metrics.observer } : {}),
  });
  if (result.status !== 'busy') await alertAfterRun(config, now(), log);
  if (metrics) {
    metrics.recordRun(result);
    await exportMetrics(metrics, config, flags, now());
  }
  if (output.print) output.print(result);
  else printSummary(result, printed);
  (output.runLineTo ?? process.stdout).write(
    `${result.job} run ${result.runId}: ${result.status} (exit ${result.exitCode}); ${describeSink(config, options.shard)}\n`,
  );
  return result.outcome;
}

/** Alerts (config `alerts:`) after a run; a failure to evaluate them is logged, never the run's outcome. */
async function alertAfterRun(config: LoadedConfig, now: number, log: Logger): Promise<void> {
  if (config.alerts.webhooks.length === 0) return;
  const { evaluateAlerts } = await import('../runner/alerts.js');
  const { jobSchedules } = await import('../runner/schedule.js');
  try {
    const schedules = jobSchedules(config, await loadJobs()).flatMap((s) =>
      s.expr === null ? [] : [{ name: s.job, expr: s.expr }],
    );
    await evaluateAlerts({ config, schedules, log, now, lockWaitMs: config.warehouse.lock_wait });
  } catch (error) {
    log.error({ err: error }, 'alerts could not be evaluated');
  }
}

/**
 * The run's metrics to `--metrics-file` and/or `--pushgateway`. Where they could not go is said on
 * stderr and logged, and the run keeps its outcome: the run itself is recorded and published,
 * and a stale textfile or group is what the monitoring sees (docs/runner.md, "Metrics").
 */
async function exportMetrics(
  metrics: RunnerMetrics,
  config: LoadedConfig,
  flags: Pick<RunFlags, 'metricsFile' | 'pushgateway'>,
  now: number,
): Promise<void> {
  const { pushMetrics, writeMetricsFile } = await import('../runner/metrics-out.js');
  // text() sets the warehouse's gauges in the registry, which the push then reads as they are.
  const text = await metrics.text(config, now);
  const targets: [string, string, () => Promise<void> | void][] = [];
  if (flags.metricsFile)
    targets.push(['--metrics-file', flags.metricsFile, () => writeMetricsFile(flags.metricsFile!, text)]);
  if (flags.pushgateway)
    targets.push(['--pushgateway', flags.pushgateway, () => pushMetrics(flags.pushgateway!, metrics.registry)]);
  for (const [flag, value, write] of targets) {
    try {
      await write();
    } catch (error) {
      // A Pushgateway URL may carry a password: only its origin is named.
      const where = flag === '--pushgateway' ? new URL(value).origin : value;
      process.stderr.write(`efsync: ${flag} ${where}: the metrics were not written: ${(error as Error).message}\n`);
      createLogger({ level: config.log.level }).error({ err: error, flag, where }, 'metrics not written');
    }
  }
}

function urlFlag(flag: string, text: string): void {
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol))
    throw new UsageError(`${flag}: not an http(s) URL: ${JSON.stringify(text)}`);
}

/** The summary but its first `printed` lines, then the publish and what went wrong. */
function printSummary(result: RunResult, printed: number): void {
  const lines = result.summary.slice(printed);
  if (result.published) lines.push(`publish: ${describeCost(result.published)}`);
  const peak = processPeakRssMb();
  if (peak !== null) lines.push(`peak RSS: ${Math.round(peak)} MB, the process's, every step included`);
  if (result.status === 'busy') lines.push(`not run: ${result.error}`);
  else if (result.error) lines.push(`error: ${result.error}`);
  if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
}

async function scheduleCommand(flags: ScheduleFlags): Promise<Outcome> {
  // The daemon's timers wait on the wall clock; a run clock set elsewhere would fire slots at the
  // wrong times or never, so the daemon refuses it rather than mixing two clocks.
  if (clockOverride() !== null) {
    throw new UsageError(
      `${CLOCK_VARIABLE} is for single runs in tests and benchmarks; the daemon keeps the wall clock`,
    );
  }
  const port = flags.metricsPort === undefined ? undefined : portFlag('--metrics-port', flags.metricsPort);
  const config = configWithDb(flags);
  const registry = await loadJobs();
  const { runDaemon, jobSchedules } = await import('../runner/schedule.js');
  const { readiness } = await import('../runner/readiness.js');
  jobSchedules(config, registry);
  const log = createLogger({ level: config.log.level });
  await runDaemon({
    config,
    registry,
    log,
    signal: stopSignal(STOPPING_RUN),
    print: (line) => process.stdout.write(`${line}\n`),
    ...(port === undefined
      ? {}
      : { monitor: { host: flags.metricsHost, port, ready: () => readiness({ config, registry, clock: Date.now }) } }),
  });
  return 'ok';
}

function portFlag(flag: string, text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535)
    throw new UsageError(`${flag}: not a port (0-65535): ${JSON.stringify(text)}`);
  return port;
}

async function statusCommand(flags: CommonFlags & { json?: boolean }): Promise<Outcome> {
  const config = configWithDb(flags);
  const { collectStatus, formatStatus } = await import('../runner/status.js');
  const status = await collectStatus(config, await loadJobs());
  process.stdout.write(flags.json ? `${JSON.stringify(status, null, 2)}\n` : `${formatStatus(status).join('\n')}\n`);
  return 'ok';
}

/** The outcome whose exit code is the plugin's: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (src/outcome.ts EXIT). */
const CHECK_OUTCOMES = ['ok', 'partial', 'config', 'busy'] as const satisfies readonly Outcome[];

/**
 * `efsync status --check`: whatever goes wrong (no config, a warehouse that cannot be read) is
 * UNKNOWN on the same one line, never another exit code, as a monitor expects of a plugin.
 */
async function checkStatusCommand(flags: CommonFlags): Promise<Outcome> {
  const { checkStatus } = await import('../runner/check.js');
  let result: { code: 0 | 1 | 2 | 3; line: string };
  try {
    const config = configWithDb(flags);
    const { collectStatus } = await import('../runner/status.js');
    const now = Date.now();
    result = checkStatus(await collectStatus(config, await loadJobs(), now), config.monitoring, now);
  } catch (error) {
    result = { code: 3, line: `EFSYNC UNKNOWN - ${(error as Error).message.split('\n')[0].replace(/\|/g, '/')}` };
  }
  process.stdout.write(`${result.line}\n`);
  return CHECK_OUTCOMES[result.code];
}

async function checkCommand(flags: CommonFlags): Promise<Outcome> {
  const config = loadConfig(flags.config);
  const { jobSchedules } = await import('../runner/schedule.js');
  const schedules = jobSchedules(config, await loadJobs()).filter((s) => s.expr !== null);
  const service = config.service.base_url === null ? 'the embedded emulator (demo data)' : config.service.base_url;
  if (config.service.base_url !== null && resolveApiKey(config) === null) {
    throw new ConfigError(
      `service.base_url is ${config.service.base_url} but there is no API key`,
      'set EFSYNC_API_KEY or EFSYNC_API_KEY_FILE (or service.api_key_file)',
    );
  }
  const key = config.service.base_url === null ? 'not needed' : 'found';
  process.stdout.write(
    [
      `${config.file ?? 'defaults (no config file)'}: ok`,
      `  service ${service}; API key ${key}`,
      `  warehouse ${config.warehouse.path}`,
      `  schedule (${config.schedule.timezone}): ${schedules.map((s) => `${s.job} "${s.expr}"`).join(', ') || 'nothing scheduled'}`,
      '',
    ].join('\n'),
  );
  return 'ok';
}
