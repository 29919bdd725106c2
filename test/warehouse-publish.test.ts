import { existsSync, lstatSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadActuals } from '../src/warehouse/loader.js';
import { Warehouse, writerPathOf } from '../src/warehouse/warehouse.js';
import { count, DEFAULT_QUALITY, startReader, tempWarehousePath } from './warehouse-support.js';

const H = 3_600_000;
const T0 = Date.UTC(2026, 10, 1);

let dir: string;
let path: string;

beforeEach(() => {
  ({ dir, path } = tempWarehousePath('efsync-publish-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Loads `hours` hourly actuals for a site and publishes them. */
async function loadAndPublish(warehouse: Warehouse, siteId: string, hours: number): Promise<void> {
  const valid_time = Array.from({ length: hours }, (_, h) => T0 + h * H);
  await loadActuals(warehouse, siteId, { valid_time, value: valid_time.map(() => 1) }, { quality: DEFAULT_QUALITY });
  await warehouse.publish();
}

const ACTUALS = 'SELECT * FROM actuals';

/** A writer that opens, loads and publishes `hours` actuals for a site, and closes. */
async function writerPublishes(siteId: string, hours: number): Promise<void> {
  const writer = await Warehouse.open({ path });
  try {
    await loadAndPublish(writer, siteId, hours);
  } finally {
    await writer.close();
  }
}

/** How many actuals a read-only open (of the published file) sees. */
async function readOnlyActuals(): Promise<number> {
  const reader = await Warehouse.open({ path, readOnly: true });
  try {
    return (await reader.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM actuals'))[0].n;
  } finally {
    await reader.close();
  }
}

/** How many actuals a new read-only reader in another process sees. */
async function readerProcessActuals(): Promise<number> {
  const reader = await startReader(path, 'read_only');
  try {
    return await count(reader, ACTUALS);
  } finally {
    await reader.close();
  }
}

describe('published snapshot', () => {
  it('the writer works on its own file beside the published one', async () => {
    const warehouse = await Warehouse.open({ path });
    expect(warehouse.writerPath).toBe(join(dir, 'warehouse.writer.duckdb'));
    expect(existsSync(path)).toBe(false); // nothing published yet
    await loadAndPublish(warehouse, 'a', 3);
    await warehouse.close();
    expect(await readOnlyActuals()).toBe(3);
  });

  it('readers in other processes (read-only and read-write) keep their snapshot while the writer writes and publishes', async () => {
    await writerPublishes('a', 10);

    // An analyst holds the published file read-only before the writer opens.
    const readOnly = await startReader(path, 'read_only');
    expect(await count(readOnly, ACTUALS)).toBe(10);

    const writer = await Warehouse.open({ path, lockWaitMs: 0 });
    await loadAndPublish(writer, 'b', 20);
    expect(await count(readOnly, ACTUALS)).toBe(10);

    // Another analyst opens the new snapshot read-write (root ignores its 0444) and tries to write.
    const readWrite = await startReader(path, 'read_write');
    expect(await count(readWrite, ACTUALS)).toBe(30);
    expect((await readWrite.ask({ sql: "DELETE FROM actuals WHERE site_id = 'a'" })).error).toMatch(
      /Failed to commit: Could not fsync file/,
    );

    await loadAndPublish(writer, 'c', 5);
    expect(await count(readOnly, ACTUALS)).toBe(10);
    expect(await count(readWrite, ACTUALS)).toBe(30);
    expect((await readWrite.ask({ sql: 'CREATE TABLE stray (x INTEGER)' })).error).toMatch(/Failed to commit/);

    // A new reader sees everything the writer published, and none of the analyst's changes.
    const fresh = await startReader(path, 'read_only');
    expect(await count(fresh, ACTUALS)).toBe(35);
    expect(await count(fresh, "SELECT * FROM actuals WHERE site_id = 'a'")).toBe(10);

    // The read-write analyst closing (DuckDB checkpoints then) touches only its old snapshot.
    await Promise.all([readOnly.close(), readWrite.close(), fresh.close()]);
    expect(await readerProcessActuals()).toBe(35);
    await writer.close();
  });

  it('starts from the published file when the writer file was deleted', async () => {
    await writerPublishes('a', 4);
    rmSync(writerPathOf(path));

    const reader = await startReader(path, 'read_only');
    const second = await Warehouse.open({ path });
    expect(await second.all('SELECT count(*)::INTEGER AS n FROM actuals')).toEqual([{ n: 4 }]);
    await loadAndPublish(second, 'b', 1);
    await second.close();
    expect(await count(reader, ACTUALS)).toBe(4);
    await reader.close();
  });

  it('whatever a reader did to the previous snapshot, a new reader after the next publish sees exactly what was published', async () => {
    const first = await Warehouse.open({ path });
    await loadAndPublish(first, 'a', 10);
    expect(statSync(path).mode & 0o777).toBe(0o444);
    expect(readlinkSync(`${path}.wal`)).toBe('/dev/null');

    // The worst an analyst can do: remove the guard, open read-write, write (a real WAL appears
    // beside the file), and keep writing after the writer published the next snapshot.
    rmSync(`${path}.wal`);
    const careless = await startReader(path, 'read_write');
    expect(
      (await careless.ask({ sql: "DELETE FROM actuals WHERE valid_time < '2026-11-01 05:00:00+00'" })).error,
    ).toBeUndefined();
    expect(lstatSync(`${path}.wal`).isFile()).toBe(true);
    await loadAndPublish(first, 'b', 20);
    expect((await careless.ask({ sql: 'CREATE TABLE stray (x INTEGER)' })).error).toBeUndefined();
    expect((await careless.ask({ sql: "DELETE FROM actuals WHERE site_id = 'a'" })).error).toBeUndefined();

    const fresh = await startReader(path, 'read_only');
    expect(await count(fresh, ACTUALS)).toBe(30);
    expect(await count(fresh, "SELECT * FROM duckdb_tables() WHERE table_name = 'stray'")).toBe(0);
    await fresh.close();
    // A reader that crashes leaves its WAL behind; the next publish still stands alone.
    careless.process.kill('SIGKILL');
    await careless.exited;
    await loadAndPublish(first, 'c', 1);
    expect(await readerProcessActuals()).toBe(31);
    await first.close();
  });

  it('a session holding the published file read-write does not stop a read-only open (status, export, the daemon)', async () => {
    await writerPublishes('a', 3);
    const holder = await startReader(path, 'read_write');
    const copies = () => readdirSync(tmpdir()).filter((name) => name.startsWith('efsync-snapshot-')).length;
    const before = copies();
    expect(await readOnlyActuals()).toBe(3);
    expect(copies()).toBe(before); // the private copy it read is gone
    await holder.close();
  });
});
