/**
 * The scheduler's core, driven by an injected clock: `tick()` finds the slots that came due since
 * the last tick (slots.ts, in the schedule's time zone), retries that are due, and runs them one
 * at a time (every run writes the same warehouse). The daemon (schedule.ts) only calls `start()`,
 * `tick()` once a minute, and `stop()` on a signal.
 *
 * Decisions:
 * - overlap: a slot of a job that is running or waiting is not run; it is recorded as skipped;
 * - catch-up: at start, from the ledger (catchup.ts);
 * - another process holding the warehouse: runJob waits `warehouse.lock_wait`, then the slot is
 *   recorded as skipped naming the holder (written by the next run, or by `recordSkips` as soon
 *   as nothing runs and the lock is free: tried at every tick and at stop);
 * - retry: a failed run is tried again after `retry_backoff` × 2^(attempt-1), `retries` times;
 * - a slot is never run twice: runJob checks the ledger's `scheduled_for` under the lock.
 */
import type { Logger } from '../log.js';
import { formatInZone } from '../time.js';
import { planCatchUp, type CatchUpMode } from './catchup.js';
import type { Trigger } from './ledger.js';
import type { RunResult, SkipNote } from './run.js';
import { nextSlots } from './slots.js';

export interface ScheduledJob {
  name: string;
  /** Cron expression, five fields, in `SchedulerPolicy.timezone`. */
  expr: string;
}

export interface SchedulerPolicy {
  timezone: string;
  catchUp: CatchUpMode;
  catchUpLimit: number;
  /** Retries of a failed run after its first attempt. */
  retries: number;
  retryBackoffMs: number;
}

export interface RunRequest {
  job: string;
  trigger: Trigger;
  scheduledFor: number;
  attempt: number;
}

/** Runs one request (runJob in the daemon); `skips` are ledger notes to write once the lock is held. */
export type Execute = (request: RunRequest, signal: AbortSignal, skips: SkipNote[]) => Promise<RunResult>;

/** Writes skips to the ledger when nothing runs; false when another writer holds the warehouse. */
export type RecordSkips = (skips: SkipNote[]) => Promise<boolean>;

interface PendingRetry {
  request: RunRequest;
  notBefore: number;
}

export class Scheduler {
  private lastTick: number | null = null;
  private readonly queue: RunRequest[] = [];
  private retries: PendingRetry[] = [];
  /** The run in flight, or (request null) the writing of pending skips. */
  private current: { request: RunRequest | null; controller: AbortController; done: Promise<void> } | null = null;
  private stopping = false;
  /** Skips not yet in the ledger: written by the next run, or by `recordSkips` when idle. */
  readonly pendingSkips: SkipNote[] = [];
  /** Every result, in order (for the daemon's log and for tests). */
  readonly results: RunResult[] = [];

  constructor(
    private readonly jobs: readonly ScheduledJob[],
    private readonly policy: SchedulerPolicy,
    private readonly execute: Execute,
    private readonly clock: () => number,
    private readonly log: Logger,
    private readonly recordSkips?: RecordSkips,
  ) {}

  /** Queues the catch-up of slots missed while no daemon ran; `coveredUntil` comes from the ledger. */
  start(coveredUntil: ReadonlyMap<string, number>): void {
    const now = this.clock();
    this.lastTick = now;
    for (const job of this.jobs) {
      const plan = planCatchUp(
        { expr: job.expr, tz: this.policy.timezone },
        coveredUntil.get(job.name),
        now,
        this.policy.catchUp,
        this.policy.catchUpLimit,
      );
      if (plan.note) this.log.info({ job: job.name }, plan.note);
      if (plan.skip)
        this.note({
          job: job.name,
          trigger: 'catch-up',
          scheduledFor: plan.skip.slot,
          attempt: 1,
          at: now,
          reason: plan.skip.reason,
        });
      // Queued one after the other on purpose: the overlap rule is for slots that come due later.
      for (const slot of plan.run)
        this.queue.push({ job: job.name, trigger: 'catch-up', scheduledFor: slot, attempt: 1 });
    }
    this.pump();
  }

  /** Queues every slot that came due since the last tick, and the retries that are due. */
  tick(): void {
    if (this.stopping) return;
    const now = this.clock();
    const since = this.lastTick ?? now;
    this.lastTick = now;
    const due: RunRequest[] = [];
    for (const job of this.jobs) {
      const slots = nextSlots(job.expr, this.policy.timezone, since, now);
      if (slots.length === 0) continue;
      // Several slots at once mean the process was suspended: like a catch-up, run the newest.
      if (slots.length > 1)
        this.log.warn({ job: job.name, slots: slots.length }, 'several slots came due at once; running the newest');
      due.push({ job: job.name, trigger: 'schedule', scheduledFor: slots[slots.length - 1], attempt: 1 });
    }
    const [ready, later] = partition(this.retries, (r) => r.notBefore <= now);
    this.retries = later;
    due.push(...ready.map((r) => r.request));
    for (const request of due.sort((a, b) => a.scheduledFor - b.scheduledFor)) this.offer(request);
    this.pump();
  }

  /** Stops taking work, aborts the current run (it records itself as interrupted) and waits for it. */
  async stop(reason = 'shutdown'): Promise<void> {
    this.stopping = true;
    this.queue.length = 0;
    this.retries = [];
    if (this.current) {
      this.current.controller.abort(new Error(reason));
      await this.current.done;
    }
    if (this.pendingSkips.length > 0 && this.recordSkips) await this.flushSkips();
  }

  /** Resolves once nothing runs or waits (tests; a clean stop). */
  async idle(): Promise<void> {
    while (this.current) await this.current.done;
  }

  /** When `start()` or `tick()` last ran (the daemon's /healthz: is the scheduler ticking); null before start. */
  get lastTickAt(): number | null {
    return this.lastTick;
  }

  /** Retries waiting for their time. */
  get waitingRetries(): readonly RunRequest[] {
    return this.retries.map((r) => r.request);
  }

  private offer(request: RunRequest): void {
    const running = this.current?.request;
    const busy = running?.job === request.job ? running : this.queue.find((q) => q.job === request.job);
    if (busy) {
      const what = busy === running ? 'still running' : 'still waiting to run';
      this.note({
        ...request,
        at: this.clock(),
        reason: `overlap: the ${busy.trigger} run of ${request.job} for ${this.format(busy.scheduledFor)} is ${what}`,
      });
      return;
    }
    this.queue.push(request);
  }

  private note(skip: SkipNote): void {
    this.log.warn(
      { job: skip.job, scheduledFor: new Date(skip.scheduledFor ?? 0).toISOString() },
      `skipped: ${skip.reason}`,
    );
    this.pendingSkips.push(skip);
  }

  /** Starts the next queued run; when none waits, writes the pending skips so the ledger shows them. */
  private pump(): void {
    if (this.current || this.stopping) return;
    const request = this.queue.shift() ?? null;
    if (!request && (this.pendingSkips.length === 0 || !this.recordSkips)) return;
    const controller = new AbortController();
    const work = request ? this.runOne(request, controller.signal) : this.flushSkips();
    const done = work.finally(() => {
      this.current = null;
      // After a flush only new work continues the loop: a busy warehouse is tried again next tick.
      if (request || this.queue.length > 0) this.pump();
    });
    this.current = { request, controller, done };
  }

  private async flushSkips(): Promise<void> {
    const skips = this.pendingSkips.splice(0);
    const written = await this.recordSkips!(skips).catch((error: unknown) => {
      this.log.error({ err: error }, 'could not record skipped runs');
      return false;
    });
    if (!written) this.pendingSkips.unshift(...skips);
  }

  private async runOne(request: RunRequest, signal: AbortSignal): Promise<void> {
    const skips = this.pendingSkips.splice(0);
    let result: RunResult;
    try {
      result = await this.execute(request, signal, skips);
    } catch (error) {
      this.pendingSkips.unshift(...skips);
      this.log.error({ job: request.job, err: error }, 'the run could not start');
      this.planRetry(request, request.attempt);
      return;
    }
    this.results.push(result);
    if (result.status === 'busy') {
      this.pendingSkips.unshift(...skips);
      this.note({ ...request, at: this.clock(), reason: `warehouse busy: ${result.error}` });
      return;
    }
    if (result.status === 'failed') this.planRetry(request, result.attempt);
  }

  private planRetry(request: RunRequest, attempt: number): void {
    if (this.stopping || attempt > this.policy.retries) return;
    const notBefore = this.clock() + this.policy.retryBackoffMs * 2 ** (attempt - 1);
    this.retries.push({ request: { ...request, trigger: 'retry', attempt: attempt + 1 }, notBefore });
    this.log.info({ job: request.job, attempt: attempt + 1, at: new Date(notBefore).toISOString() }, 'retry planned');
  }

  private format(ms: number): string {
    return formatInZone(ms, this.policy.timezone);
  }
}

function partition<T>(items: T[], test: (item: T) => boolean): [T[], T[]] {
  return [items.filter(test), items.filter((item) => !test(item))];
}
