// How fast one client (one process) talks to the service: every request of the client, retries
// included, passes here. Three things, all shared by every call:
//
// - a rate limit (`rateLimit`: N requests per window), as evenly spaced start times (a request
//   every window/N), so that no window of that length ever sees more than N starts, whatever
//   the service's window is aligned to;
// - adaptive concurrency (AIMD): a 429 halves the requests allowed in flight (once per burst:
//   the 429s of requests started before the last halving count as one), each success adds
//   1/limit back, up to `maxInFlight`;
// - a pause of the whole client after a 429, since a quota is the account's, not a request's:
//   the `Retry-After` when the service sent one, else exponential backoff with full jitter over
//   the throttled steps in a row (random(0, min(maxDelay, baseDelay * 2^(step-1)))). A quota
//   that resets by window is met again by the next window: a success after a streak of steps
//   keeps two steps less as the floor the next streak starts from, so the next exhaustion waits
//   about as long as the last one needed instead of climbing from the first step again.
//   The floor is forgotten once no 429 came for `maxDelay`.
//
// Every wait ends early when the caller's signal aborts.
import { setTimeout as sleep } from 'node:timers/promises';

export interface RateLimit {
  requests: number;
  /** The window, in milliseconds. */
  perMs: number;
}

export interface ThrottleOptions {
  /** How often one call repeats after a 429 (the v1 SDK's 10). */
  attempts: number;
  baseDelay: number;
  maxDelay: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { attempts: 10, baseDelay: 1_000, maxDelay: 300_000 };

/** What the pacer has seen since the client was made (for a run's summary and the tests). */
export interface PacingStats {
  /** Requests started (every attempt). */
  requests: number;
  /** Answers 429. */
  throttled: number;
  /** Pauses of the whole client after a 429. */
  pauses: number;
  /** Milliseconds of those pauses, summed. */
  pausedMs: number;
  /** Requests allowed in flight now. */
  inFlightLimit: number;
}

/** What was seen between two readings of the stats (a run's steps share one client). */
export function pacingSince(before: PacingStats, after: PacingStats): PacingStats {
  return {
    requests: after.requests - before.requests,
    throttled: after.throttled - before.throttled,
    pauses: after.pauses - before.pauses,
    pausedMs: after.pausedMs - before.pausedMs,
    inFlightLimit: after.inFlightLimit,
  };
}

/** One admitted request: tell the pacer when it left and how it ended. */
export interface Slot {
  /**
   * The request left now: the next start waits a full spacing after this moment, not after its
   * turn came (the first calls of a client leave a few milliseconds after their turn).
   */
  sent(): void;
  ok(): void;
  /** Answered 429; `retryAfterMs` when the service said how long to wait. */
  throttled(retryAfterMs: number | null): void;
  /** Any other end (an error that is not a quota). */
  done(): void;
}

/** Epoch milliseconds with a fraction: Date.now()'s whole milliseconds would cost a spacing up to 1 ms. */
function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

export class Pacer {
  private limit: number;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  /** Start time of the next request when rate limited (epoch ms). */
  private nextStart = 0;
  private readonly spacing: number;
  private pausedUntil = 0;
  /** A throttled burst: requests admitted before it began do not start another step. */
  private epoch = 0;
  private step = 0;
  private floor = 0;
  private lastThrottled = 0;
  private readonly counts = { requests: 0, throttled: 0, pauses: 0, pausedMs: 0 };

  constructor(
    private readonly maxInFlight: number,
    rateLimit: RateLimit | null,
    private readonly throttle: ThrottleOptions,
    private readonly now: () => number = preciseNow,
  ) {
    this.limit = maxInFlight;
    this.spacing = rateLimit ? rateLimit.perMs / rateLimit.requests : 0;
  }

  /** Waits for a place in flight, the end of any pause and the next start the rate allows. */
  async admit(signal?: AbortSignal): Promise<Slot> {
    await this.enter(signal);
    try {
      await this.waitForStart(signal);
    } catch (error) {
      this.leave();
      throw error;
    }
    this.counts.requests += 1;
    const epoch = this.epoch;
    let ended = false;
    const end = (then: () => void) => {
      if (ended) return;
      ended = true;
      then();
      this.leave();
    };
    return {
      sent: () => {
        if (this.spacing > 0) this.nextStart = Math.max(this.nextStart, this.now() + this.spacing);
      },
      ok: () => end(() => this.succeeded()),
      throttled: (retryAfterMs) => end(() => this.wasThrottled(epoch, retryAfterMs)),
      done: () => end(() => undefined),
    };
  }

  /** Milliseconds until the pause of the client ends (0 or less: not paused). */
  pausedFor(): number {
    return this.pausedUntil - this.now();
  }

  stats(): PacingStats {
    return { ...this.counts, inFlightLimit: Math.floor(this.limit) };
  }

  private async enter(signal?: AbortSignal): Promise<void> {
    while (this.inFlight >= Math.floor(this.limit)) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          const at = this.waiting.indexOf(wake);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(signal?.reason);
        };
        this.waiting.push(wake);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    this.inFlight += 1;
  }

  private leave(): void {
    this.inFlight -= 1;
    // Whoever fits now goes; the others wait again (the limit may have shrunk meanwhile).
    const free = Math.floor(this.limit) - this.inFlight;
    for (const wake of this.waiting.splice(0, Math.max(0, free))) wake();
  }

  /** Sleeps past the pause and to the next start the rate allows, then takes that start. */
  private async waitForStart(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const now = this.now();
      const start = Math.max(now, this.pausedUntil, this.nextStart);
      if (start <= now) break;
      await sleep(start - now, undefined, { signal });
    }
    if (this.spacing > 0) this.nextStart = Math.max(this.now(), this.nextStart) + this.spacing;
  }

  private succeeded(): void {
    if (this.step > 0) {
      this.floor = Math.max(0, this.step - 2);
      this.step = 0;
    }
    this.limit = Math.min(this.maxInFlight, this.limit + 1 / this.limit);
  }

  private wasThrottled(epoch: number, retryAfterMs: number | null): void {
    this.counts.throttled += 1;
    const now = this.now();
    if (epoch !== this.epoch) {
      // Part of a burst already paused for; a longer Retry-After still extends the pause.
      if (retryAfterMs !== null) this.pauseUntil(now + retryAfterMs);
      return;
    }
    this.epoch += 1;
    if (now - this.lastThrottled > this.throttle.maxDelay) this.floor = 0;
    this.lastThrottled = now;
    this.step = Math.max(this.step, this.floor) + 1;
    this.limit = Math.max(1, this.limit / 2);
    const ceiling = Math.min(this.throttle.maxDelay, this.throttle.baseDelay * 2 ** (this.step - 1));
    this.pauseUntil(now + (retryAfterMs ?? Math.random() * ceiling));
  }

  private pauseUntil(until: number): void {
    if (until <= this.pausedUntil) return;
    const now = this.now();
    this.counts.pauses += 1;
    this.counts.pausedMs += until - Math.max(now, this.pausedUntil);
    this.pausedUntil = until;
  }
}
