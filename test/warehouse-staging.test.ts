// The staging tables' appender against a real DuckDB file: every value and null back as written,
// across data chunks (2,048 rows) and blocks that straddle them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DOUBLE, INTEGER, VARCHAR } from '../src/warehouse/duckdb-api.js';
import { appendBlocks, type StageBlock } from '../src/warehouse/staging.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { openTempWarehouse, removeWarehouse } from './warehouse-support.js';

let warehouse: Warehouse;
let dir: string;

beforeEach(async () => {
  ({ warehouse, dir } = await openTempWarehouse('efsync-staging-'));
  await warehouse.run('CREATE TEMP TABLE staged (n INTEGER, t DOUBLE, v DOUBLE, name VARCHAR, k INTEGER)');
});
afterEach(() => removeWarehouse(warehouse, dir));

/** A block of `rows` rows numbered from `first`: a null value every `nullEvery`-th row (0: none). */
function block(first: number, rows: number, nullEvery: number): StageBlock {
  const t = Array.from({ length: rows }, (_, i) => 1_764_806_400_000.5 + (first + i) * 3_600_000);
  const v = Array.from({ length: rows }, (_, i) =>
    nullEvery && (first + i) % nullEvery === 0 ? null : (first + i) / 7,
  );
  const k = Array.from({ length: rows }, (_, i) => (nullEvery && (first + i) % nullEvery === 1 ? null : first + i));
  return {
    rows,
    columns: [
      { type: INTEGER, values: { constant: first } },
      { type: DOUBLE, values: t },
      { type: DOUBLE, values: v },
      { type: VARCHAR, values: { constant: `block ${first}` } },
      { type: INTEGER, values: k },
    ],
  };
}

describe('appendBlocks', () => {
  it('writes every value and null back as given, across chunks and the blocks that straddle them', async () => {
    // Blocks of 1, 2,047, 2,050 and 3,000 rows: chunk edges inside blocks and between them; nulls
    // in the first chunks only (the last block has none), then none.
    const sizes = [1, 2_047, 2_050, 3_000];
    const blocks: StageBlock[] = [];
    let first = 0;
    for (const [index, rows] of sizes.entries()) {
      blocks.push(block(first, rows, index === 3 ? 0 : 97));
      first += rows;
    }
    blocks.splice(2, 0, { rows: 0, columns: [] });
    await appendBlocks(warehouse, 'staged', blocks);

    const rows = await warehouse.all<{ n: number; t: number; v: number | null; name: string; k: number | null }>(
      'SELECT n, t, v, name, k FROM staged',
    );
    const expected = blocks
      .filter((b) => b.rows > 0)
      .flatMap((b) =>
        Array.from({ length: b.rows }, (_, i) => {
          const [n, t, v, name, k] = b.columns.map(({ values }) =>
            'constant' in values ? values.constant : values[i],
          );
          return { n, t, v, name, k };
        }),
      );
    expect(rows).toHaveLength(first);
    expect(rows).toEqual(expected);
    expect(rows.filter((r) => r.v === null).length).toBeGreaterThan(40);
  });

  it('refuses a value an INTEGER column cannot hold, naming it', async () => {
    const bad = block(0, 3, 0);
    bad.columns[4] = { type: INTEGER, values: [1, 2.5, 3] };
    await expect(appendBlocks(warehouse, 'staged', [bad])).rejects.toThrow('2.5 is not a INTEGER value');
    bad.columns[4] = { type: INTEGER, values: [1, 2 ** 31, 3] };
    await expect(appendBlocks(warehouse, 'staged', [bad])).rejects.toThrow('2147483648 is not a INTEGER value');
  });
});
