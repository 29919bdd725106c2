// The sites of a sync pass in flight (src/sync/site-pool.ts): a site gives up its fetching slot
// once its requests are answered, and the row budget, not the slots, bounds the sites whose loads
// wait for the loader.
import { describe, expect, it } from 'vitest';
import { RowBudget } from '../src/sync/budget.js';
import { eachSite, type SitePool } from '../src/sync/site-pool.js';

/** A promise and the functions that settle it. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets pending callbacks run. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

function poolOf(concurrency: number, rows: number, signal = new AbortController().signal, landingAtMost = 100) {
  const landedUnits: string[] = [];
  const pool: SitePool = {
    concurrency,
    budget: new RowBudget(rows, 1),
    landingAtMost,
    signal,
    stopped: new Set(),
    onLanded: () => landedUnits.push('x'),
  };
  return { pool, landedUnits };
}

describe('the sites in flight', () => {
  it('a site fetches while the one before it waits for the loader, and the pass ends once both have landed', async () => {
    const { pool } = poolOf(1, 1_000);
    const started: string[] = [];
    const loads = new Map(['a', 'b'].map((id) => [id, deferred()]));
    let ended = false;
    const pass = eachSite(pool, ['a', 'b'], async (siteId, held) => {
      started.push(siteId);
      held.fetched(10);
      return { landed: loads.get(siteId)!.promise };
    }).then(() => (ended = true));
    await tick();
    // one fetching slot, and a's loads not committed: b has started all the same
    expect(started).toEqual(['a', 'b']);
    loads.get('b')!.resolve();
    await tick();
    expect(ended).toBe(false);
    loads.get('a')!.resolve();
    await pass;
    expect(ended).toBe(true);
  });

  it('holds a site back while the rows of the sites waiting for the loader do not fit', async () => {
    const { pool } = poolOf(4, 25);
    const started: string[] = [];
    const loads = new Map(['a', 'b', 'c'].map((id) => [id, deferred()]));
    const pass = eachSite(pool, ['a', 'b', 'c'], async (siteId, held) => {
      started.push(siteId);
      held.fetched(10);
      const load = loads.get(siteId)!;
      return { landed: load.promise.then(() => held.released(10)) };
    });
    await tick();
    // a and b hold 20 rows fetched; c, counted as the most a site fetched (10), would make 30
    expect(started).toEqual(['a', 'b']);
    loads.get('a')!.resolve();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    loads.get('b')!.resolve();
    loads.get('c')!.resolve();
    await pass;
    expect(pool.budget.held()).toBe(0);
  });

  it('starts no site while as many as the loader takes in a batch wait for it', async () => {
    const { pool } = poolOf(1, 1_000, undefined, 2);
    const started: string[] = [];
    const loads = new Map(['a', 'b', 'c'].map((id) => [id, deferred()]));
    const pass = eachSite(pool, ['a', 'b', 'c'], async (siteId, held) => {
      started.push(siteId);
      held.fetched(1);
      return { landed: loads.get(siteId)!.promise };
    });
    await tick();
    expect(started).toEqual(['a', 'b']);
    loads.get('b')!.resolve();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    loads.get('a')!.resolve();
    loads.get('c')!.resolve();
    await pass;
  });

  it('throws the first failed landing once every site has landed; a stopped pass starts no more sites', async () => {
    const abort = new AbortController();
    const { pool, landedUnits } = poolOf(1, 1_000, abort.signal);
    const later = deferred();
    const pass = eachSite(pool, ['a', 'b', 'c', 'd'], async (siteId) => {
      if (siteId === 'a') return { landed: Promise.reject(new Error('a: load failed')) };
      if (siteId === 'b') {
        abort.abort();
        return { landed: later.promise };
      }
      throw new Error(`${siteId} started after the stop`);
    });
    let settled = false;
    pass.catch(() => undefined).finally(() => (settled = true));
    await tick();
    expect(settled).toBe(false); // b has not landed
    later.resolve();
    await expect(pass).rejects.toThrow('a: load failed');
    expect([...pool.stopped]).toEqual(['c', 'd']);
    expect(landedUnits).toHaveLength(1);
    expect(pool.budget.held()).toBe(0);
  });
});
