/**
 * `efsync schedule`: the daemon. Which jobs run when (config `schedule.jobs` over each job's
 * default), the catch-up read from the published ledger, and the clock: a timer to each whole
 * minute that hands over to the Scheduler (scheduler.ts), which places the slots in
 * `schedule.timezone` itself (slots.ts, cron-parser over wall-clock time): on the days the clocks
 * change, efsync's rule is to run the gap's slot at the end of the gap and a doubled one once,
 * first, which no cron library given the zone does (test/runner-dst.test.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { LoadedConfig } from '../config.js';
import type { Logger } from '../log.js';
import { formatInZone, MINUTE } from '../time.js';
import { ConfigError } from '../errors.js';
import { InputFileError, parseYaml } from '../yaml.js';
import { Warehouse } from '../warehouse/warehouse.js';
import { ALERT_EVERY_MS, evaluateAlerts } from './alerts.js';
import { coveredUntil } from './ledger.js';
import { RunnerMetrics } from './metrics.js';
import { startMonitor, type Check } from './monitor.js';
import type { JobRegistry } from './registry.js';
import { recordSkippedRuns, runJob } from './run.js';
import { Scheduler, type ScheduledJob, type SchedulerPolicy } from './scheduler.js';
import { cronProblem, nextSlot } from './slots.js';

export interface JobSchedule {
  job: string;
  /** Null: the job runs only when asked (`efsync run`). */
  expr: string | null;
  /** Where the expression comes from. */
  source: 'config' | 'default';
}

/**
 * Every job's schedule: `schedule.jobs.<job>` in the config (null disables it), else the job's
 * default. An unknown job name or a bad expression is an error naming the key and line.
 */
export function jobSchedules(config: LoadedConfig, registry: JobRegistry): JobSchedule[] {
  for (const [name, expr] of Object.entries(config.schedule.jobs)) {
    if (!registry.has(name)) {
      const broken = registry.broken.get(name);
      const why = broken
        ? `jobs/${name}.ts did not load: ${broken.message}`
        : `unknown job; the jobs are: ${registry.names().join(', ')}`;
      throw configError(config, ['schedule', 'jobs', name], `schedule.jobs.${name}: ${why}`);
    }
    const problem = expr === null ? null : cronProblem(expr);
    if (problem) throw configError(config, ['schedule', 'jobs', name], `schedule.jobs.${name}: ${problem}`);
  }
  return registry.all().map((job) => {
    const configured = Object.hasOwn(config.schedule.jobs, job.name);
    const expr = configured ? config.schedule.jobs[job.name] : job.schedule;
    const problem = !configured && expr !== null ? cronProblem(expr) : null;
    if (problem) throw new ConfigError(`jobs/${job.name}.ts: default schedule ${problem}`);
    return { job: job.name, expr, source: configured ? 'config' : 'default' };
  });
}

/** The next `count` slots of a schedule, as instants. */
export function upcoming(expr: string, tz: string, after: number, count: number): number[] {
  const slots: number[] = [];
  let from = after;
  for (let i = 0; i < count; i++) {
    from = nextSlot(expr, tz, from);
    slots.push(from);
  }
  return slots;
}

function configError(config: LoadedConfig, path: string[], rule: string): Error {
  if (!config.file || !existsSync(config.file))
    return new ConfigError(`${rule} (set by the defaults or the environment)`);
  const where = parseYaml(readFileSync(config.file, 'utf8'), config.file).positionOf(path);
  return new InputFileError(config.file, where.line, where.column, rule);
}

export function schedulerPolicy(config: LoadedConfig): SchedulerPolicy {
  const s = config.schedule;
  return {
    timezone: s.timezone,
    catchUp: s.catch_up,
    catchUpLimit: s.catch_up_limit,
    retries: s.retries,
    retryBackoffMs: s.retry_backoff,
  };
}

/** Per job, how far the ledger of the published warehouse says it has run (none on a new warehouse). */
export async function readCoveredUntil(config: LoadedConfig): Promise<Map<string, number>> {
  if (!existsSync(config.warehouse.path)) return new Map();
  const warehouse = await Warehouse.open({ path: config.warehouse.path, readOnly: true });
  try {
    return await coveredUntil(warehouse);
  } finally {
    await warehouse.close();
  }
}

export interface DaemonOptions {
  config: LoadedConfig;
  registry: JobRegistry;
  log: Logger;
  /** Aborted on SIGINT/SIGTERM: the daemon stops after recording the current run as interrupted. */
  signal: AbortSignal;
  /** Lines for the operator (stdout). */
  print: (line: string) => void;
  clock?: () => number;
  /** Serve /metrics, /healthz and /readyz here (monitor.ts; `ready`: readiness.ts); none when absent. */
  monitor?: { host: string; port: number; ready: () => Promise<Check[]> };
}

/** Runs until `signal` aborts; resolves after a graceful stop. */
export async function runDaemon(options: DaemonOptions): Promise<Scheduler> {
  const { config, registry, log, print } = options;
  const clock = options.clock ?? Date.now;
  const scheduled: ScheduledJob[] = jobSchedules(config, registry)
    .filter((s): s is JobSchedule & { expr: string } => s.expr !== null)
    .map((s) => ({ name: s.job, expr: s.expr }));
  const tz = config.schedule.timezone;
  const metrics = new RunnerMetrics();
  // Alerts after each run, and between runs for stale sites and missed slots (alerts.ts).
  const alert = (lockWaitMs: number) =>
    evaluateAlerts({ config, schedules: scheduled, log, now: clock(), lockWaitMs }).catch((error: unknown) => {
      log.error({ err: error }, 'alerts could not be evaluated');
      return null;
    });
  const scheduler = new Scheduler(
    scheduled,
    schedulerPolicy(config),
    async (request, signal, skips) => {
      const result = await runJob(registry.get(request.job), {
        config,
        log,
        signal,
        now: clock,
        pendingSkips: skips,
        trigger: request.trigger,
        scheduledFor: request.scheduledFor,
        attempt: request.attempt,
        observer: metrics.observer,
      });
      metrics.recordRun(result);
      if (result.status !== 'busy') await alert(config.warehouse.lock_wait);
      print(
        `${formatInZone(result.endedAt, tz)} ${request.job} (${request.trigger} ${formatInZone(request.scheduledFor, tz)}): ` +
          `${result.status}${result.error ? `: ${result.error}` : ''} [run ${result.runId}]`,
      );
      return result;
    },
    clock,
    log,
    (skips) => recordSkippedRuns(config, skips, log, clock),
  );

  // Runs a killed process left `running` become crashed first, so that catch-up redoes them.
  await recordSkippedRuns(config, [], log, clock);
  scheduler.start(await readCoveredUntil(config));
  const ticking = everyMinute(() => scheduler.tick(), log);
  // Before the first line: a port in use fails the start (exit 4) rather than leaving probes unanswered.
  const monitor = options.monitor
    ? await startMonitor({
        ...options.monitor,
        config,
        metrics,
        lastTick: () => scheduler.lastTickAt,
        clock,
        log,
      }).catch(async (error: unknown) => {
        ticking.stop();
        await scheduler.stop('the monitoring port could not be opened');
        throw error;
      })
    : null;
  print(`efsync schedule: ${scheduled.length} job(s), time zone ${tz}, catch-up ${config.schedule.catch_up}`);
  if (monitor) print(`  monitoring on ${monitor.url}: /metrics, /healthz, /readyz`);
  for (const job of scheduled)
    print(`  ${job.name.padEnd(16)} ${job.expr.padEnd(16)} next ${formatInZone(nextSlot(job.expr, tz, clock()), tz)}`);
  // Idle checks give way at once to a run (lock wait 0): the run evaluates the alerts itself.
  const alerting = config.alerts.webhooks.length > 0 ? setInterval(() => void alert(0), ALERT_EVERY_MS) : null;
  await new Promise<void>((resolve) => {
    if (options.signal.aborted) resolve();
    options.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  if (alerting) clearInterval(alerting);
  ticking.stop();
  await monitor?.close();
  const reason = options.signal.reason instanceof Error ? options.signal.reason.message : 'shutdown';
  await scheduler.stop(reason);
  print(`efsync schedule: stopped (${reason})`);
  return scheduler;
}

/**
 * Calls `tick` at every whole minute (UTC) until stopped. A missed minute (a busy event loop) is
 * harmless: a tick picks up every slot since the last one.
 */
function everyMinute(tick: () => void, log: Logger): { stop(): void } {
  let timer: NodeJS.Timeout;
  const arm = () => {
    timer = setTimeout(
      () => {
        arm();
        try {
          tick();
        } catch (error) {
          log.error({ err: error }, 'the scheduler failed to tick; it tries again in a minute');
        }
      },
      MINUTE - (Date.now() % MINUTE),
    );
  };
  arm();
  return { stop: () => clearTimeout(timer) };
}
