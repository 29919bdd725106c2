// Between the steps of a run (runner/chain.ts), before its publish (runner/run.ts), and between
// the heavy phases of a step (accuracy's batches and slices, its report): what the last phase
// left in memory goes back to the system, so that the next one's peak is its own work, not its
// own work on top of the last one's leftovers. Measured on a nightly chain at 100 sites, accuracy
// started at ~350 MB, ~160 MB of it the sync's: DuckDB's buffer pool still caching what the sync
// read, and ~65 MB of the sync's garbage in V8's heap, which nothing in accuracy made V8 collect
// (docs/benchmarks.md has the figures since).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { purgeBufferPool } from './settings.js';
import type { Warehouse } from './warehouse.js';

export async function releaseMemory(warehouse: Warehouse): Promise<void> {
  await purgeBufferPool(warehouse);
  collectGarbage();
}

/** V8's full collection; Node exposes it only behind `--expose-gc`, so the flag is set here, once. */
let gc: (() => void) | null | undefined;

export function collectGarbage(): void {
  if (gc === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    } catch {
      gc = null; // a runtime that refuses the flag keeps its garbage until V8 collects it
    }
  }
  // The first collection frees the garbage; the second gives the emptied pages back to the system.
  gc?.();
  gc?.();
}
