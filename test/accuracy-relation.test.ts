// The aligned-pairs relation is declared once (src/accuracy/input/relation.ts): the warehouse
// alignment's temp table and the migrated ledger table have exactly its columns and types.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alignWarehouse, dropAlignment, PAIRS_TABLE } from '../src/accuracy/input/align.js';
import { LEDGER_PAIRS } from '../src/accuracy/input/incremental.js';
import { PAIR_COLUMNS } from '../src/accuracy/input/relation.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { addActuals, addForecast, addSite, openTestWarehouse } from './accuracy-fixture.js';

let wh: Warehouse;

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-relation');
  await addSite(wh, 'S1', 'solar', 100);
  await addForecast(wh, 'S1', '2026-03-01T23:00:00Z', [['2026-03-02T01:00:00Z', 10]]);
  await addActuals(wh, 'S1', '2026-03-01T00:00:00Z', 60, Array(26).fill(5));
});
afterAll(async () => wh.close());

async function columnsOf(table: string) {
  const rows = await wh.all<{ column_name: string; column_type: string }>(`DESCRIBE ${table}`);
  return rows.map((r) => ({ name: r.column_name, type: r.column_type }));
}

describe('the aligned-pairs relation', () => {
  const declared = PAIR_COLUMNS.map(({ name, type }) => ({ name, type }));

  it('is the alignment temp table, column for column and type for type', async () => {
    await alignWarehouse(wh, { forecastLabel: 'ending', actualLabel: 'ending', maxMissingPct: 10 });
    try {
      expect(await columnsOf(PAIRS_TABLE)).toEqual(declared);
    } finally {
      await dropAlignment(wh);
    }
  });

  it('is the ledger table of the migrated schema', async () => {
    expect(await columnsOf(LEDGER_PAIRS)).toEqual(declared);
  });
});
