// The old generation's floor during a sync (src/resources/heap-floor.ts): fewer full collections
// while live data stays small and garbage is promoted, and the launcher's growth restored after.
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, isFullCollection, withOldGenerationFloor } from '../src/resources/heap-floor.js';
import { collectGarbage } from '../src/warehouse/executor.js';

/** Full collections while `rounds` batches of garbage are each kept past a few scavenges. */
async function fullCollections(rounds: number): Promise<number> {
  let count = 0;
  const observer = new PerformanceObserver((list) => {
    count += list.getEntries().filter(isFullCollection).length;
  });
  observer.observe({ entryTypes: ['gc'] });
  const kept: number[][][] = [];
  for (let round = 0; round < rounds; round++) {
    kept.push(Array.from({ length: 200 }, () => Array.from({ length: 128 }, (_, i) => i + 0.5)));
    if (kept.length > 200) kept.shift(); // ~40 MB live: each batch outlives two scavenges
    if (round % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  return count;
}

describe('the old generation floor of a sync', () => {
  it('collects the old generation far less often below the floor, and gives the launcher its growth back', async () => {
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    await fullCollections(200); // warm up: the code optimised, the heap at its working size
    const without = await fullCollections(1_500);
    const within = await withOldGenerationFloor(256, () => fullCollections(1_500));
    // V8 reads the growing percent at a full collection: until the next one, the limit the floor
    // set last still holds, so one is forced before counting what the launcher's growth gives.
    collectGarbage();
    const after = await fullCollections(1_500);
    expect(without).toBeGreaterThan(4);
    expect(within).toBeLessThan(without / 2);
    expect(after).toBeGreaterThan(within);
  });
});
