/**
 * One run of one job, whoever asked for it (`efsync run`, the daemon, another command):
 *
 *   const result = await runJob(job, { config, options?, trigger?: 'manual', scheduledFor?, attempt?,
 *                                      log?, signal?, now?, progress?, timeoutMs?, lockWaitMs? });
 *   result.status    // ok | partial | failed | interrupted | skipped | busy
 *   result.outcome   // its outcome for the boundary (usage, config, service, ... when it failed)
 *   result.exitCode  // the documented exit code of that outcome (EXIT of src/outcome.ts)
 *
 * It takes the warehouse writer lock (waiting at most `lockWaitMs`, then `busy` naming the holder),
 * marks runs left `running` by a killed process as crashed, writes the `runs` row (running),
 * runs the job with a child logger carrying the run id, a lazily connected service and a signal
 * aborted by the caller's signal (SIGINT/SIGTERM) or the per-run timeout, then records the outcome
 * and the failures, publishes the snapshot for analysts, and closes everything. While the job runs,
 * a second SIGINT/SIGTERM (signals.ts) records the run as interrupted before the process exits.
 * A scheduled slot (`scheduledFor` with trigger schedule, catch-up or retry) that the ledger
 * already holds (ledger.ts `slotTakenBy`) is not run again (`skipped`, nothing written).
 */
import type { RequestObserver } from '../api/client.js';
import { type LoadedConfig, sizesOf } from '../config.js';
import { belowSmallest, describeSizes } from '../resources/sizes.js';
import type { Job, JobContext, JobOptions } from '../job.js';
import { createLogger, newRunId, runLogger, type Logger } from '../log.js';
import { EXIT, type ExitCode, type Failure, type JobOutcome, type Outcome } from '../outcome.js';
import { silentProgress, type Progress } from '../progress.js';
import type { ServiceConnection } from '../service.js';
import { describeHolder, WarehouseBusyError } from '../warehouse/lock.js';
import { describeRecovery, Warehouse } from '../warehouse/warehouse.js';
import { measureStep, type StepCost } from './measure.js';
import { handBackMemory } from '../warehouse/executor.js';
import { outcomeOf } from './outcome.js';
import { onSecondSignal, stoppingHard } from './signals.js';
import { openSink, type RunSink } from './sink.js';
import {
  finishRun,
  insertFailures,
  insertRun,
  lastAttempt,
  markOrphanedRuns,
  recordInterrupted,
  slotTakenBy,
  THIS_PROCESS,
  type RunStatus,
  type Trigger,
} from './ledger.js';
import { HOUR } from '../time.js';

export interface RunJobOptions {
  config: LoadedConfig;
  options?: JobOptions;
  trigger?: Trigger;
  /** The schedule slot this run stands for (epoch ms); none for manual runs. */
  scheduledFor?: number;
  /** Attempt number for the slot, from 1. */
  attempt?: number;
  log?: Logger;
  /** Aborting it (SIGINT, SIGTERM) interrupts the run: the current site finishes or rolls back. */
  signal?: AbortSignal;
  now?: () => number;
  progress?: Progress;
  /** A chain's step ended with these summary lines (JobContext.stepEnded). */
  stepEnded?: (lines: readonly string[]) => void;
  /** Abort the run after this long; default `schedule.timeout`; 0 for none. */
  timeoutMs?: number;
  /** How long to wait for another writer; default `warehouse.lock_wait`. */
  lockWaitMs?: number;
  /** Ledger rows to write first, once the lock is held (skips the daemon noted while it was busy). */
  pendingSkips?: SkipNote[];
  /** Told of every service request and retry of the run (metrics.ts). */
  observer?: RequestObserver;
}

/** A run that did not happen, recorded as `skipped` with the reason. */
export interface SkipNote {
  job: string;
  trigger: Trigger;
  scheduledFor: number | null;
  attempt: number;
  at: number;
  reason: string;
}

export interface RunResult {
  runId: string;
  job: string;
  /** The attempt number the run was recorded with (a catch-up continues after earlier attempts). */
  attempt: number;
  /** `busy`: another process held the warehouse; nothing was written. */
  status: RunStatus | 'busy';
  /** What the status means for the exit code: a failed run is failed, usage, config or service. */
  outcome: Outcome;
  exitCode: ExitCode;
  rows: Record<string, number>;
  /** Rows removed per table (retention). */
  removed: Record<string, number>;
  failures: Failure[];
  summary: string[];
  /** One line on what went wrong (or why the run was skipped), null when all went well. */
  error: string | null;
  startedAt: number;
  endedAt: number;
  /** What publishing the snapshot cost (measure.ts); null when the run did not publish. */
  published: StepCost | null;
}

export async function runJob(job: Job, opts: RunJobOptions): Promise<RunResult> {
  const now = opts.now ?? Date.now;
  // Until the lock is ours the run has not started: started_at is set once it is.
  let startedAt = now();
  const runId = newRunId(startedAt);
  const log = runLogger(opts.log ?? createLogger({ level: opts.config.log.level }), job.name, runId);
  const trigger = opts.trigger ?? 'manual';
  let attempt = opts.attempt ?? 1;
  const result = (
    status: RunStatus | 'busy',
    error: string | null,
    outcome?: JobOutcome,
    kind = outcomeOfStatus(status),
    published: StepCost | null = null,
  ): RunResult => ({
    runId,
    job: job.name,
    attempt,
    status,
    outcome: kind,
    exitCode: EXIT[kind],
    error,
    startedAt,
    endedAt: now(),
    rows: outcome?.rows ?? {},
    removed: outcome?.removed ?? {},
    failures: outcome?.failures ?? [],
    summary: outcome?.summary ?? [],
    published,
  });

  // The service's client loads while the warehouse opens (DuckDB opens on a thread of its own);
  // connect() awaits the same module. A failure to load is connect()'s to report.
  import('../service.js').catch(() => undefined);
  let sink: RunSink;
  try {
    sink = await openSink({
      config: opts.config,
      job,
      options: opts.options ?? {},
      log,
      open: {
        path: opts.config.warehouse.path,
        lockWaitMs: opts.lockWaitMs ?? opts.config.warehouse.lock_wait,
        hotWindowMs: opts.config.warehouse.hot_window,
        coldGraceMs: opts.config.warehouse.cold_grace,
        memoryLimit: opts.config.warehouse.memory_limit,
        rows: sizesOf(opts.config).rows,
        now,
        holder: { job: job.name, runId },
        onWait: (holder) => log.warn({ holder }, `waiting for the warehouse: ${describeHolder(holder)}`),
        onRecover: (recovery) => log.warn({ recovery }, describeRecovery(recovery)),
        onCompactionSkipped: (reason) =>
          log.warn(
            { compaction: 'skipped', reason },
            `the writer file is mostly free space and was not compacted (${reason}): the publish copies it whole; the next run tries again`,
          ),
      },
    });
  } catch (error) {
    if (outcomeOf(error) === 'usage') return result('failed', (error as Error).message, undefined, 'usage');
    if (!(error instanceof WarehouseBusyError)) throw error;
    log.warn({ err: error.message }, 'warehouse busy: another efsync process is writing');
    return result('busy', error.message);
  }
  const warehouse = sink.warehouse;

  try {
    startedAt = now();
    const tidied = await tidyLedger(warehouse, opts.pendingSkips ?? [], startedAt, log);
    if (opts.scheduledFor !== undefined && trigger !== 'manual') {
      // A catch-up redoes an interrupted slot as its next attempt.
      if (trigger === 'catch-up') attempt = (await lastAttempt(warehouse, job.name, opts.scheduledFor)) + 1;
      const earlier = await slotTakenBy(warehouse, job.name, opts.scheduledFor, attempt);
      if (earlier) {
        const reason = `slot ${new Date(opts.scheduledFor).toISOString()} already run (run ${earlier})`;
        log.info({ earlier }, reason);
        if (tidied) await sink.publish();
        return result('skipped', reason);
      }
    }
    await insertRun(warehouse, {
      runId,
      job: job.name,
      trigger,
      scheduledFor: opts.scheduledFor ?? null,
      attempt,
      startedAt,
      status: 'running',
      errorSummary: null,
      ...THIS_PROCESS,
    });
    log.info({ trigger, scheduledFor: opts.scheduledFor, attempt }, 'run started');
    const memory = sizesOf(opts.config);
    log.info({ memory }, describeSizes(memory));
    const tooSmall = belowSmallest(memory.budget);
    if (tooSmall) log.warn({ budget: memory.budget }, tooSmall);
    // Stopped hard (a second signal): the statement in flight is interrupted (a long accuracy
    // pass or merge would otherwise hold the exit for minutes) and its site rolls back; the
    // ledger says so at once, on a connection of its own, and the next run publishes it. The
    // hook stays until the run's own record is written, since the signal may come while it is.
    const removeHook = onSecondSignal(() => {
      warehouse.interrupt();
      return recordInterrupted(warehouse, runId, now(), 'interrupted (second signal): the site in flight rolled back');
    });
    let ended: Ended;
    let published: StepCost | null = null;
    try {
      ended = await execute(job, warehouse, { ...opts, now }, runId, log);
      // The hook records the run; every statement from here on is interrupted until the exit.
      if (stoppingHard()) return result('interrupted', ended.error, ended.outcome);
      try {
        const publish = changedAnything(ended) || !(await sink.publishedHoldsAllBut(runId));
        if (publish) await handBackMemory(warehouse);
        const publishing = publish ? measureStep() : null;
        if (publish) await sink.prepareToPublish();
        await insertFailures(warehouse, runId, ended.outcome.failures, now());
        await finishRun(warehouse, runId, {
          status: ended.status,
          endedAt: now(),
          rowsWritten: ended.outcome.rows,
          rowsRemoved: ended.outcome.removed,
          errorSummary: ended.error,
          defaulted: ended.outcome.defaulted,
        });
        if (publishing) {
          await sink.publish();
          published = publishing();
        } else log.info('the run changed nothing: the published snapshot stays as it is');
      } catch (error) {
        // A second signal interrupts these statements too: its hook has recorded the run as interrupted.
        if (stoppingHard()) return result('interrupted', ended.error, ended.outcome);
        // Not recorded or not published (a full disk): the run failed, whatever the job did.
        const cause = (error as Error).message.split('\n')[0];
        log.error({ err: error }, `run failed: ${cause}`);
        await recordFailed(warehouse, runId, { ...ended.outcome, failures: [] }, cause, now(), log);
        return result('failed', cause, ended.outcome);
      }
    } finally {
      removeHook();
    }
    log.info({ status: ended.status, rows: ended.outcome.rows, failures: ended.outcome.failures.length }, 'run ended');
    return result(ended.status, ended.error, ended.outcome, ended.kind, published);
  } finally {
    await sink.close();
  }
}

/**
 * A run that ended ok with no row written or removed and no failure changed nothing readers of the snapshot
 * need: its runs row and the sync_state marks it advanced go out with the next publish.
 */
function changedAnything(ended: Ended): boolean {
  return (
    ended.status !== 'ok' ||
    ended.outcome.failures.length > 0 ||
    [...Object.values(ended.outcome.rows), ...Object.values(ended.outcome.removed ?? {})].some((count) => count > 0)
  );
}

/** Best effort: the run's row says failed with the cause; if even that cannot be written, the next run marks it crashed. */
async function recordFailed(
  warehouse: Warehouse,
  runId: string,
  outcome: JobOutcome,
  cause: string,
  at: number,
  log: Logger,
): Promise<void> {
  try {
    await finishRun(warehouse, runId, {
      status: 'failed',
      endedAt: at,
      rowsWritten: outcome.rows,
      rowsRemoved: outcome.removed,
      errorSummary: cause,
      defaulted: outcome.defaulted,
    });
  } catch (error) {
    log.error({ err: error }, 'could not record the run as failed; the next run marks it crashed');
  }
}

/**
 * Tidies the ledger without running anything: records skipped runs and marks runs of killed
 * processes as crashed, publishing when that changed anything. The daemon calls it at start
 * and to get its skips into the ledger while no run is due. False when another writer holds the
 * warehouse.
 */
export async function recordSkippedRuns(
  config: LoadedConfig,
  skips: SkipNote[],
  log: Logger,
  now = Date.now,
): Promise<boolean> {
  let warehouse: Warehouse;
  try {
    warehouse = await Warehouse.open({
      path: config.warehouse.path,
      lockWaitMs: 0,
      memoryLimit: config.warehouse.memory_limit,
      rows: sizesOf(config).rows,
      holder: { job: 'schedule', runId: newRunId(now()) },
    });
  } catch (error) {
    if (error instanceof WarehouseBusyError) return false;
    throw error;
  }
  try {
    if (await tidyLedger(warehouse, skips, now(), log)) await warehouse.publish();
    return true;
  } finally {
    await warehouse.close();
  }
}

/**
 * With the lock held: runs left `running` by a killed process become crashed, and the skips
 * the daemon noted while it could not write are recorded. True when it wrote anything.
 */
async function tidyLedger(warehouse: Warehouse, skips: SkipNote[], at: number, log: Logger): Promise<boolean> {
  const orphans = await markOrphanedRuns(warehouse, at);
  if (orphans.length > 0) log.warn({ runs: orphans }, 'marked runs left running by a killed process as crashed');
  await recordSkips(warehouse, skips);
  return orphans.length > 0 || skips.length > 0;
}

async function recordSkips(warehouse: Warehouse, skips: SkipNote[]): Promise<void> {
  for (const skip of skips) {
    await insertRun(warehouse, {
      runId: newRunId(skip.at),
      job: skip.job,
      trigger: skip.trigger,
      scheduledFor: skip.scheduledFor,
      attempt: skip.attempt,
      startedAt: skip.at,
      endedAt: skip.at,
      status: 'skipped',
      errorSummary: skip.reason,
      ...THIS_PROCESS,
    });
  }
}

interface Ended {
  status: RunStatus;
  kind: Outcome;
  outcome: JobOutcome;
  error: string | null;
}

/** Runs the job under the run's signal and turns whatever happens into a ledger outcome. */
async function execute(
  job: Job,
  warehouse: Warehouse,
  opts: RunJobOptions & { now: () => number },
  runId: string,
  log: Logger,
): Promise<Ended> {
  const abort = runSignal(opts.signal, opts.timeoutMs ?? opts.config.schedule.timeout);
  let connection: Promise<ServiceConnection> | undefined;
  const ctx: JobContext = {
    config: opts.config,
    log,
    runId,
    warehouse,
    service: async () => {
      connection ??= connect(opts.config, log, opts.now, abort.signal, opts.observer);
      return (await connection).client;
    },
    signal: abort.signal,
    options: opts.options ?? {},
    progress: opts.progress ?? silentProgress,
    stepEnded: opts.stepEnded,
    now: opts.now,
  };
  try {
    const outcome = await job.run(ctx);
    return judge(outcome, abort.reason());
  } catch (error) {
    const reason = abort.reason();
    const message = reason?.message ?? (error as Error).message ?? String(error);
    log.error({ err: error }, 'run failed');
    const outcome: JobOutcome = { status: 'failed', rows: {}, failures: [{ reason: message }] };
    return judge(outcome, reason, reason === null ? outcomeOf(error) : undefined);
  } finally {
    abort.dispose();
    ctx.progress.stop();
    if (connection)
      await connection.then(
        (c) => c.close(),
        () => undefined,
      );
  }
}

async function connect(
  config: LoadedConfig,
  log: Logger,
  now: () => number,
  signal: AbortSignal,
  observer: RequestObserver | undefined,
): Promise<ServiceConnection> {
  // The client follows the run's signal: a timeout or a signal also ends its waits (a quota's pauses).
  const { connectService } = await import('../service.js');
  return connectService(config, log, { now, signal, ...(observer ? { observer } : {}) });
}

/** The ledger status of an outcome-less end: busy and skipped runs ran nothing. */
function outcomeOfStatus(status: RunStatus | 'busy'): Outcome {
  switch (status) {
    case 'ok':
    case 'partial':
    case 'busy':
    case 'interrupted':
      return status;
    case 'skipped': // only scheduled runs are skipped: their slot was already run
      return 'busy';
    case 'failed':
    case 'crashed':
    case 'running':
      return 'failed';
  }
}

/**
 * The recorded status: an aborted run is interrupted (signal) or failed (timeout), whatever it
 * returned; a run that threw failed with the outcome of its error (usage, config, service ...).
 */
function judge(outcome: JobOutcome, abort: Abort | null, thrown?: Outcome): Ended {
  const status: RunStatus = abort === null ? outcome.status : abort.timedOut ? 'failed' : 'interrupted';
  const kind = abort === null ? (thrown ?? outcomeOfStatus(status)) : abort.timedOut ? 'failed' : 'interrupted';
  return { status, kind, outcome, error: abort?.message ?? firstFailure(outcome) };
}

function firstFailure(outcome: JobOutcome): string | null {
  if (outcome.failures.length === 0) return outcome.status === 'ok' ? null : outcome.status;
  const first = outcome.failures[0];
  const where = [first.siteId, first.resource].filter(Boolean).join(' ');
  const more = outcome.failures.length > 1 ? ` (and ${outcome.failures.length - 1} more)` : '';
  return `${where ? `${where}: ` : ''}${first.reason}${more}`;
}

/** Why a run was stopped before it ended by itself. */
interface Abort {
  message: string;
  timedOut: boolean;
}

/** The caller's signal joined with the per-run timeout; `reason()` says which fired first, if any. */
function runSignal(outer: AbortSignal | undefined, timeoutMs: number) {
  const controller = new AbortController();
  let reason: Abort | null = null;
  const stop = (why: Abort) => {
    reason ??= why;
    controller.abort(new Error(why.message));
  };
  const onOuter = () =>
    stop({
      message: `interrupted (${String(outer?.reason instanceof Error ? outer.reason.message : (outer?.reason ?? 'signal'))})`,
      timedOut: false,
    });
  if (outer?.aborted) onOuter();
  outer?.addEventListener('abort', onOuter, { once: true });
  const timer =
    timeoutMs > 0
      ? setTimeout(() => stop({ message: `timed out after ${formatMs(timeoutMs)}`, timedOut: true }), timeoutMs)
      : undefined;
  timer?.unref();
  return {
    signal: controller.signal,
    reason: (): Abort | null => reason,
    dispose: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}

function formatMs(ms: number): string {
  if (ms % HOUR === 0) return `${ms / HOUR}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
