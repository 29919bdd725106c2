// The V8 old generation during a sync. The launcher (bin/efsync.js) lets the old generation grow
// only HEAP_GROWING_PERCENT past what the last full collection kept, which bounds every step's
// heap by its live data. A sync holds little live data while it promotes garbage fast (a load
// waits in the commit queue past two scavenges), so at that rule V8 would mark the whole heap
// after every few MiB promoted. While a sync runs, the old generation is collected no sooner
// than at a floor the budget sizes (src/resources/sizes.ts) instead: far fewer full collections,
// within what the budget gives the heap (why, and the measurements: docs/decisions/memory-budget.md).
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/** How far past a full collection's live data the old generation grows before the next (V8's percent). */
export const HEAP_GROWING_PERCENT = 20;

/**
 * Runs `fn` with the old generation collected no sooner than at `floorMb` MiB: after each full
 * collection the growing percent is set so that the next comes at the floor, or at
 * HEAP_GROWING_PERCENT past the live data when that is higher (V8 reads it at each collection).
 */
export async function withOldGenerationFloor<T>(floorMb: number, fn: () => Promise<T>): Promise<T> {
  let percent = HEAP_GROWING_PERCENT;
  const setPercent = (next: number) => {
    if (next === percent) return;
    percent = next;
    setFlagsFromString(`--heap-growing-percent=${next}`);
  };
  const observer = new PerformanceObserver((list) => {
    if (!list.getEntries().some(isFullCollection)) return;
    const liveMb = getHeapStatistics().used_heap_size / 2 ** 20;
    setPercent(Math.max(HEAP_GROWING_PERCENT, Math.ceil((floorMb / liveMb - 1) * 100)));
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    return await fn();
  } finally {
    observer.disconnect();
    setPercent(HEAP_GROWING_PERCENT);
  }
}

/** Whether a `gc` performance entry is a full (mark-compact) collection. */
export function isFullCollection(entry: PerformanceEntry): boolean {
  return (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}
