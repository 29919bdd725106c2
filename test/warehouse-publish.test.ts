import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadActuals } from '../src/warehouse/loader.js';
import { Warehouse, writerPathOf } from '../src/warehouse/warehouse.js';
import { count, startReader } from './warehouse-support.js';

const H = 3_600_000;
const T0 = Date.UTC(2026, 10, 1);

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'efsync-publish-'));
  path = join(dir, 'warehouse.duckdb');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Loads `hours` hourly actuals for a site and publishes them. */
async function loadAndPublish(warehouse: Warehouse, siteId: string, hours: number): Promise<void> {
  const valid_time = Array.from({ length: hours }, (_, h) => T0 + h * H);
  await loadActuals(warehouse, siteId, { valid_time, value: valid_time.map(() => 1) });
  await warehouse.publish();
}

const ACTUALS = 'SELECT * FROM actuals';

describe('published snapshot', () => {
  it('the writer works on its own file beside the published one', async () => {
    const warehouse = await Warehouse.open({ path });
    expect(warehouse.writerPath).toBe(join(dir, 'warehouse.writer.duckdb'));
    expect(existsSync(path)).toBe(false); // nothing published yet
    await loadAndPublish(warehouse, 'a', 3);
    await warehouse.close();
    const reader = await Warehouse.open({ path, readOnly: true });
    expect(await reader.all('SELECT count(*)::INTEGER AS n FROM actuals')).toEqual([{ n: 3 }]);
    await reader.close();
  });

  it('readers in other processes (read-only and read-write) keep their snapshot while the writer writes and publishes', async () => {
    const first = await Warehouse.open({ path });
    await loadAndPublish(first, 'a', 10);
    await first.close();

    // An analyst holds the published file read-only before the writer opens.
    const readOnly = await startReader(path, 'read_only');
    expect(await count(readOnly, ACTUALS)).toBe(10);

    const writer = await Warehouse.open({ path, lockWaitMs: 0 });
    await loadAndPublish(writer, 'b', 20);
    expect(await count(readOnly, ACTUALS)).toBe(10);

    // Another analyst opens the new snapshot read-write and even writes to it.
    const readWrite = await startReader(path, 'read_write');
    expect(await count(readWrite, ACTUALS)).toBe(30);
    expect((await readWrite.ask({ sql: "DELETE FROM actuals WHERE site_id = 'a'" })).error).toBeUndefined();

    await loadAndPublish(writer, 'c', 5);
    expect(await count(readOnly, ACTUALS)).toBe(10);
    expect(await count(readWrite, ACTUALS)).toBe(20);

    // A new reader sees everything the writer published, and none of the analyst's changes.
    const fresh = await startReader(path, 'read_only');
    expect(await count(fresh, ACTUALS)).toBe(35);
    expect(await count(fresh, "SELECT * FROM actuals WHERE site_id = 'a'")).toBe(10);

    // The read-write analyst closing (DuckDB checkpoints then) touches only its old snapshot.
    await Promise.all([readOnly.close(), readWrite.close(), fresh.close()]);
    const after = await startReader(path, 'read_only');
    expect(await count(after, ACTUALS)).toBe(35);
    await after.close();
    await writer.close();
  });

  it('starts from the published file when the writer file was deleted', async () => {
    const first = await Warehouse.open({ path });
    await loadAndPublish(first, 'a', 4);
    await first.close();
    rmSync(writerPathOf(path));

    const reader = await startReader(path, 'read_only');
    const second = await Warehouse.open({ path });
    expect(await second.all('SELECT count(*)::INTEGER AS n FROM actuals')).toEqual([{ n: 4 }]);
    await loadAndPublish(second, 'b', 1);
    await second.close();
    expect(await count(reader, ACTUALS)).toBe(4);
    await reader.close();
  });
});
