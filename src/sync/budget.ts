// The rows a sync holds in JavaScript, bounded by design: a site's fetched series stay in memory
// until the loader has committed them, so the sites in flight are admitted by the rows they hold
// (config sync.rows_in_memory), not only by their number. The number of sites alone bounded
// nothing: a site's rows grow with its models, its history and the horizon.
//
// A site's rows are known only once fetched, so a site not fetched yet counts as the most any
// site fetched so far (the first site, before any is known, goes alone). A site above the whole
// budget still goes, alone.

/** One admitted site: what it fetched and what of it has landed. */
export interface SiteRows {
  /** A step (resource) of the site fetched `rows` rows (0 when it failed). */
  fetched(rows: number): void;
  /** `rows` of the site landed (committed, or failed): no longer held. */
  released(rows: number): void;
  /** The site is done: whatever it still counts is released. */
  done(): void;
}

export class RowBudget {
  private readonly active = new Set<Ticket>();
  private readonly waiting: (() => void)[] = [];
  /** The most rows one site has fetched so far; unknown (null) before the first site has fetched. */
  private estimate: number | null = null;

  /**
   * @param limit rows held at most (fetched, not yet committed, plus the estimate of the sites
   *   still fetching)
   * @param steps the steps (resources) every site fetches
   */
  constructor(
    private readonly limit: number,
    private readonly steps: number,
  ) {}

  /** Waits until one more site fits, then counts it in. */
  async admit(): Promise<SiteRows> {
    while (!this.fits()) await new Promise<void>((resolve) => this.waiting.push(resolve));
    const ticket = new Ticket(this.steps, this.estimate, () => this.changed(ticket));
    this.active.add(ticket);
    return ticket;
  }

  /** Rows counted now (for the sync's summary and tests). */
  held(): number {
    let total = 0;
    for (const ticket of this.active) total += ticket.charge();
    return total;
  }

  private fits(): boolean {
    if (this.active.size === 0) return true;
    return this.estimate !== null && this.held() + this.estimate <= this.limit;
  }

  private changed(ticket: Ticket): void {
    if (ticket.allFetched()) this.estimate = Math.max(this.estimate ?? 0, ticket.fetchedRows);
    if (ticket.finished) this.active.delete(ticket);
    // Every waiter checks again; the ones that do not fit wait again, in order.
    for (const wake of this.waiting.splice(0)) wake();
  }
}

class Ticket implements SiteRows {
  fetchedRows = 0;
  private releasedRows = 0;
  private stepsFetched = 0;
  finished = false;

  constructor(
    private readonly steps: number,
    /** What the site counts until all its steps have fetched: null, alone (the budget's first site). */
    private readonly estimate: number | null,
    private readonly onChange: () => void,
  ) {}

  allFetched(): boolean {
    return this.stepsFetched >= this.steps;
  }

  charge(): number {
    if (this.finished) return 0;
    const counted = this.allFetched() ? this.fetchedRows : Math.max(this.estimate ?? 0, this.fetchedRows);
    return counted - this.releasedRows;
  }

  fetched(rows: number): void {
    this.fetchedRows += rows;
    this.stepsFetched += 1;
    this.onChange();
  }

  released(rows: number): void {
    this.releasedRows += rows;
    this.onChange();
  }

  done(): void {
    this.finished = true;
    this.onChange();
  }
}
