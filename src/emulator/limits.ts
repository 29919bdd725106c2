// What the emulator does to an account's requests before it answers them, as the real service
// may: a quota (at most N requests per window, per key, answered 429 *without* Retry-After, as
// nothing says the service sends one) and a key revoked after N requests (401 with the service's
// error body from then on). Both are off unless asked for. Windows follow the wall clock, not the
// emulator's data clock (tests hold that one still).
import { errorReply, type Reply } from './handlers.js';

export interface Quota {
  requests: number;
  windowMs: number;
}

export interface LimitSettings {
  quota: Quota | null;
  /** Requests a key may make before it is revoked (null: never). */
  revokeAfter: number | null;
}

export class AccountLimits {
  /** Per key: requests made, and the current quota window with the requests served in it. */
  private readonly keys = new Map<string, { made: number; window: number; served: number }>();

  constructor(
    readonly settings: LimitSettings,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The refusal a request of `key` gets, or undefined when it is to be answered. */
  check(key: string): Reply | undefined {
    let seen = this.keys.get(key);
    if (!seen) {
      seen = { made: 0, window: -1, served: 0 };
      this.keys.set(key, seen);
    }
    seen.made += 1;
    const { quota, revokeAfter } = this.settings;
    if (revokeAfter !== null && seen.made > revokeAfter)
      return errorReply(401, 'Authorization', 'the API key has been revoked');
    if (quota === null) return undefined;
    const window = Math.floor(this.clock() / quota.windowMs);
    if (window !== seen.window) {
      seen.window = window;
      seen.served = 0;
    }
    // A refused request does not count against the quota: only the answered ones do.
    if (seen.served >= quota.requests) return errorReply(429, '(server)', 'too many requests (quota)');
    seen.served += 1;
    return undefined;
  }
}
