// Whether the service is there at all. Each call gives up alone after its retries, so a run whose
// service is gone would otherwise go on through every site, each failing in turn. A stretch of
// failures for want of the service (no connection, no answer in time, a gateway's 502-504) with
// no answer between them that lasts `after` stops the client, as a refused key does.
// Two failures further apart than `gap` start different stretches: the client had nothing to
// send between them (a nightly chain's steps without requests), so no silence was observed.
import { performance } from 'node:perf_hooks';

export class Breaker {
  private since: number | null = null;
  private last = Number.NEGATIVE_INFINITY;

  /** `after` null: the client never stops for an absent service. */
  constructor(
    private readonly after: number | null,
    private readonly gap: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The service answered (any HTTP status but a gateway's 502-504): it is there. */
  answered(): void {
    this.since = null;
  }

  /** A request failed for want of the service: how long the stretch has lasted once that is `after` or more, else null. */
  failed(): number | null {
    if (this.after === null) return null;
    const now = this.now();
    if (this.since === null || now - this.last > this.gap) this.since = now;
    this.last = now;
    const lasted = now - this.since;
    return lasted >= this.after ? lasted : null;
  }
}
