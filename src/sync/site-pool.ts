// The sites of a sync pass in flight: a number of them fetching at once (sync.concurrency), and
// behind them the ones whose loads wait for the loader, bounded by the rows they hold
// (sync.rows_in_memory, src/sync/budget.ts). A site gives up its fetching slot once its requests
// are answered, not once its loads are committed: the next site fetches while the loader merges,
// and the loader's next batch holds what every site brought meanwhile, so its per-batch cost
// (a transaction, the staging tables, the sync states) is shared by more rows. What a site holds
// beside its rows (its task, the lists of its vintages, its promises) is not in the row budget,
// so the sites waiting for the loader are bounded in number too: no more than the loader's next
// batch takes.
import type { RowBudget, SiteRows } from './budget.js';

/** A unit's work once its requests are answered: `landed` settles once its loads are committed. */
export interface Landing<T = void> {
  landed: Promise<T>;
}

export interface SitePool {
  /** Units fetching at once. */
  concurrency: number;
  /** Admits a unit while the rows the units hold (fetched, not yet landed) fit. */
  budget: RowBudget;
  /** Units fetched and waiting for the loader at most; a unit starts only below it. */
  landingAtMost: number;
  /** Once aborted, units not started are counted in `stopped` and not started. */
  signal: AbortSignal;
  stopped: Set<string>;
  /** Called as each unit lands without an error (a progress display's tick). */
  onLanded(): void;
}

/** A unit of a pass: a site (by its id, weight 1), or a piece of a site's work, weighing its items (what it plans to read). */
export type SiteUnit = string | { siteId: string; items: readonly unknown[] };

/**
 * Runs `work` for each unit, `pool.concurrency` fetching at once, a unit admitted while its rows
 * fit the pool's budget (by its weight) and fewer than `pool.landingAtMost` wait for the loader;
 * units are taken in order as slots free up, so a lazy source is read no further ahead than the
 * work. Returns once every unit taken has landed; the first error of a work or a landing is
 * thrown then.
 */
export async function eachSite<T extends SiteUnit>(
  pool: SitePool,
  units: Iterable<T> | AsyncIterable<T>,
  work: (unit: T, held: SiteRows) => Promise<Landing<unknown>>,
): Promise<void> {
  const source =
    Symbol.asyncIterator in units ? units[Symbol.asyncIterator]() : (units as Iterable<T>)[Symbol.iterator]();
  const landing = new Set<Promise<void>>();
  const failed: unknown[] = [];
  const fetcher = async () => {
    for (let next = await source.next(); !next.done; next = await source.next()) {
      const unit = next.value;
      while (landing.size >= pool.landingAtMost) await Promise.race(landing);
      const held = await pool.budget.admit(typeof unit === 'string' ? 1 : unit.items.length);
      if (pool.signal.aborted) {
        pool.stopped.add(typeof unit === 'string' ? unit : unit.siteId);
        held.done();
        continue;
      }
      let fetched: Landing<unknown>;
      try {
        fetched = await work(unit, held);
      } catch (error) {
        held.done();
        throw error;
      }
      const landed: Promise<void> = fetched.landed
        .then(
          () => pool.onLanded(),
          (error) => void failed.push(error),
        )
        .finally(() => {
          held.done();
          landing.delete(landed);
        });
      landing.add(landed);
    }
  };
  try {
    await Promise.all(Array.from({ length: pool.concurrency }, fetcher));
  } finally {
    while (landing.size > 0) await Promise.all(landing);
  }
  if (failed.length > 0) throw failed[0];
}
