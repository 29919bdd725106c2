// A step's DuckDB memory limit and threads (config sync.* and accuracy.*): set while the step
// runs, given back afterwards, so the next step of the same run gets its own.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withDuckDBSettings } from '../src/warehouse/settings.js';
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
