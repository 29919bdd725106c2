// The quiet sync states a run sends (advancesMark, src/sync/types.ts): a state is left out only
// when the warehouse's own rule (syncStateAdvanceSql) would not write it, checked against that
// rule on a real DuckDB file for every combination of an end, a vintage and a digest.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMarks } from '../src/sync/state.js';
import { advancesMark } from '../src/sync/types.js';
import type { SyncMark } from '../src/sync/windows.js';
import { stateKey, writeSyncStates } from '../src/warehouse/sync-state.js';
import { Warehouse } from '../src/warehouse/warehouse.js';

const T = Date.UTC(2026, 11, 1);
const ENDS = [T - 900_000, T, T + 900_000];
// an issue time with microseconds, as the service gives them, one a microsecond later, and none
const VINTAGES = [null, T - 3_600_000 + 0.123, T - 3_600_000 + 0.124];
const DIGESTS = [null, 'a', 'b'];

let warehouse: Warehouse;

beforeAll(async () => {
  warehouse = await Warehouse.open({ path: join(mkdtempSync(join(tmpdir(), 'efsync-advance-')), 'w.duckdb') });
});
afterAll(async () => {
  await warehouse.close();
});

describe('advancesMark', () => {
  it('leaves out exactly the quiet states the warehouse would not write', async () => {
    const marks: SyncMark[] = ENDS.flatMap((syncedTo) =>
      VINTAGES.flatMap((lastAsOf) => DIGESTS.map((digest) => ({ syncedTo, lastAsOf, digest }))),
    );
    const write = (entries: [siteId: string, mark: SyncMark][]) =>
      writeSyncStates(
        warehouse,
        entries.map(([siteId, mark]) => ({ siteId, now: T, state: { resource: 'forecasts', runId: 'r', ...mark } })),
      );
    let checked = 0;
    for (const [i, stored] of marks.entries()) {
      const sites = marks.map((_, j) => `s${i}-${j}`);
      await write(sites.map((site) => [site, stored]));
      const read = await readMarks(warehouse, 'forecasts');
      const written = await write(marks.map((next, j) => [sites[j], next]));
      for (const [j, next] of marks.entries()) {
        const storedMark = read.get(sites[j]) ?? null;
        expect(storedMark).toEqual(stored);
        expect([i, j, written.has(stateKey(sites[j], 'forecasts'))]).toEqual([i, j, advancesMark(next, storedMark)]);
        checked += 1;
      }
    }
    expect(checked).toBe(27 * 27);
    expect(advancesMark(marks[0], null)).toBe(true);
  });
});
