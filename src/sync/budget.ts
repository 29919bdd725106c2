// The rows a sync holds in JavaScript, bounded by design: a site's fetched series stay in memory
// until the loader has committed them, so the units in flight (a site, or a piece of a site's
// older vintages) are admitted by the rows they hold (config sync.rows_in_memory), not only by
// their number. The number of units alone bounded nothing: a site's rows grow with its models,
// its history and the horizon.
//
// A unit's rows are known only once fetched, so a unit not fetched yet counts as its weight (what
// it plans to read: a piece's vintages; 1 for a site) times the most rows per weight any unit
// fetched so far: a piece is counted as what it plans, not as the largest piece, so short pieces
// do not keep others waiting. The first unit, before any is known, goes alone; a unit above the
// whole budget still goes, alone.

/** One admitted unit: what it fetched and what of it has landed. */
export interface SiteRows {
  /** A step (resource) of the unit fetched `rows` rows (0 when it failed). */
  fetched(rows: number): void;
  /** `rows` of the unit landed (committed, or failed): no longer held. */
  released(rows: number): void;
  /** The unit is done: whatever it still counts is released. */
  done(): void;
}

export class RowBudget {
  private readonly active = new Set<Ticket>();
  private readonly waiting: (() => void)[] = [];
  /** The most rows per weight a unit has fetched so far; unknown (null) before the first unit has fetched. */
  private rowsPerWeight: number | null = null;

  /**
   * @param limit rows held at most (fetched, not yet committed, plus the estimate of the units
   *   still fetching)
   * @param steps the steps (resources) every unit fetches
   */
  constructor(
    private readonly limit: number,
    private readonly steps: number,
  ) {}

  /** Waits until one more unit of `weight` (> 0) fits, then counts it in. */
  async admit(weight = 1): Promise<SiteRows> {
    while (!this.fits(weight)) await new Promise<void>((resolve) => this.waiting.push(resolve));
    const estimate = this.rowsPerWeight === null ? null : weight * this.rowsPerWeight;
    const ticket = new Ticket(this.steps, weight, estimate, () => this.changed(ticket));
    this.active.add(ticket);
    return ticket;
  }

  /** Rows counted now (for the sync's summary and tests). */
  held(): number {
    let total = 0;
    for (const ticket of this.active) total += ticket.charge();
    return total;
  }

  private fits(weight: number): boolean {
    if (this.active.size === 0) return true;
    return this.rowsPerWeight !== null && this.held() + weight * this.rowsPerWeight <= this.limit;
  }

  private changed(ticket: Ticket): void {
    if (ticket.allFetched()) this.rowsPerWeight = Math.max(this.rowsPerWeight ?? 0, ticket.fetchedRows / ticket.weight);
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
    readonly weight: number,
    /** What the unit counts until all its steps have fetched: null, alone (the budget's first unit). */
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
