// A step's DuckDB memory limit and threads (config sync.* and accuracy.*): set while the step
// runs, given back afterwards, so the next step of the same run gets its own.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withDuckDBSettings, withJoinsBuiltOnTheRight } from '../src/warehouse/settings.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { tempDir } from './sync-support.js';

async function settings(wh: Warehouse): Promise<Record<string, string>> {
  const rows = await wh.all<{ name: string; value: string }>(
    "SELECT name, value FROM duckdb_settings() WHERE name IN ('memory_limit', 'threads')",
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}

describe('a step under DuckDB limits', () => {
  it('runs with the limits and gives the previous settings back, also when it fails', async () => {
    const wh = await Warehouse.open({ path: join(tempDir(), 'warehouse.duckdb') });
    try {
      const before = await settings(wh);
      const inside = await withDuckDBSettings(wh, { memory_limit: '64MB', threads: 1 }, () => settings(wh));
      expect(inside).toEqual({ memory_limit: '61.0 MiB', threads: '1' });
      expect(await settings(wh)).toEqual(before);
      const failing = withDuckDBSettings(wh, { memory_limit: '96MB', threads: null }, async () => {
        throw new Error('the step failed');
      });
      await expect(failing).rejects.toThrow('the step failed');
      expect(await settings(wh)).toEqual(before);
    } finally {
      await wh.close();
    }
  });

  it("opened with a memory limit of its own (warehouse.memory_limit), a step's limit gives way to it, not to DuckDB's default", async () => {
    const wh = await Warehouse.open({ path: join(tempDir(), 'warehouse.duckdb'), memoryLimit: '48MB' });
    try {
      expect((await settings(wh)).memory_limit).toBe('45.7 MiB');
      const inside = await withDuckDBSettings(wh, { memory_limit: '96MB', threads: null }, () => settings(wh));
      expect(inside.memory_limit).toBe('91.5 MiB');
      expect((await settings(wh)).memory_limit).toBe('45.7 MiB');
    } finally {
      await wh.close();
    }
  });
});

describe('joins built on their right side (the lookups of an incremental score in its changes)', () => {
  // As changedRowsSql's: a batch's pairs, filtered so that DuckDB estimates them below the
  // changes, LEFT JOINed to the changes. By default DuckDB turns it into a RIGHT JOIN built on
  // the pairs (at 1,000 sites ~500,000 pairs, every column: past 96MB in most batches).
  const lookup = `EXPLAIN SELECT p.* FROM (SELECT * FROM pairs WHERE site BETWEEN 2 AND 3 AND hour >= 10
      AND v < 90000 AND v % 7 = 1 AND hour % 3 = 1) p
    LEFT JOIN (SELECT site, hour, true AS hit FROM changes) c ON c.site = p.site AND c.hour = p.hour`;
  const joinType = async (wh: Warehouse) => {
    const rows = await wh.all<{ explain_value: string }>(lookup);
    return /RIGHT/.test(rows[0].explain_value) ? 'built on the pairs' : 'built on the changes';
  };

  it('builds the hash table on the changes inside, as DuckDB chooses outside, also after a failure', async () => {
    const wh = await Warehouse.open({ path: join(tempDir(), 'warehouse.duckdb') });
    try {
      await wh.run('CREATE TEMP TABLE pairs AS SELECT i % 10 AS site, i AS hour, i AS v FROM range(100000) t(i)');
      await wh.run('CREATE TEMP TABLE changes AS SELECT i % 10 AS site, i AS hour FROM range(1000000) t(i)');
      expect(await joinType(wh)).toBe('built on the pairs');
      expect(await withJoinsBuiltOnTheRight(wh, () => joinType(wh))).toBe('built on the changes');
      expect(await joinType(wh)).toBe('built on the pairs');
      const failing = withJoinsBuiltOnTheRight(wh, async () => {
        throw new Error('the batch ran out of memory');
      });
      await expect(failing).rejects.toThrow('the batch ran out of memory');
      expect(await joinType(wh)).toBe('built on the pairs');
    } finally {
      await wh.close();
    }
  });
});
