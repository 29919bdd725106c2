import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_QUALITY } from './warehouse-support.js';
import { loadActuals } from '../src/warehouse/loader.js';
import { listMigrations, pendingMigrations } from '../src/warehouse/migrate.js';
import { Warehouse, writerPathOf, type Recovery } from '../src/warehouse/warehouse.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'efsync-open-'));
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('open and migrate', () => {
  it('creates the file with every migration once, and reopening applies nothing again', async () => {
    const path = join(dir, 'nested', 'warehouse.duckdb');
    const versions = listMigrations().map((m) => m.version);
    const first = await Warehouse.open({ path });
    const applied = await first.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(applied.map((r) => r.version)).toEqual(versions);
    expect(await first.exclusive(() => pendingMigrations(first.connection))).toEqual([]);
    await first.close();

    const second = await Warehouse.open({ path });
    const again = await second.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(again.map((r) => r.version)).toEqual(versions);
    const tables = await second.all<{ n: number }>(
      "SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE table_name IN ('forecasts', 'actuals', 'sync_state')",
    );
    expect(tables).toEqual([{ n: 3 }]);
    await second.close();
  });

  it('a read-only open of a warehouse never published says which file is missing', async () => {
    const path = join(dir, 'warehouse.duckdb');
    await expect(Warehouse.open({ path, readOnly: true })).rejects.toThrow(path);
  });

  it("concurrent callers never interleave inside each other's transactions", async () => {
    const warehouse = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
    await warehouse.run('CREATE TEMP TABLE t (caller INTEGER, step INTEGER)');
    await Promise.all(
      [1, 2, 3].map((caller) =>
        warehouse.transaction(async () => {
          for (let step = 0; step < 3; step++) {
            await warehouse.run('INSERT INTO t VALUES ($1, $2)', [caller, step]);
            await new Promise((resolve) => setImmediate(resolve));
          }
        }),
      ),
    );
    const rows = await warehouse.all<{ caller: number }>('SELECT caller FROM t ORDER BY rowid');
    expect(rows.map((r) => r.caller)).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3]);
    await warehouse.close();
  });

  it("runs a transaction's deferred statements in order with its next call, all of them or none", async () => {
    const warehouse = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
    await warehouse.run('CREATE TABLE t (n INTEGER)');
    expect(() => warehouse.defer('INSERT INTO t VALUES (0)')).toThrow(/only inside a transaction/);
    const seen = await warehouse.transaction(async () => {
      warehouse.defer('INSERT INTO t VALUES (1)');
      warehouse.defer('UPDATE t SET n = n * 10');
      expect(() => warehouse.connection).toThrow(/statements wait/);
      const seen = await warehouse.all<{ n: number }>('SELECT n FROM t');
      warehouse.defer('INSERT INTO t VALUES (2)');
      return seen;
    });
    expect(seen).toEqual([{ n: 10 }]);
    expect(await warehouse.all('SELECT n FROM t ORDER BY n')).toEqual([{ n: 2 }, { n: 10 }]);

    await expect(
      warehouse.transaction(async () => {
        warehouse.defer('INSERT INTO t VALUES (3)');
        warehouse.defer("INSERT INTO t VALUES ('not a number')");
        warehouse.defer('INSERT INTO t VALUES (4)');
      }),
    ).rejects.toThrow(/Conversion Error/);
    expect(await warehouse.all('SELECT n FROM t ORDER BY n')).toEqual([{ n: 2 }, { n: 10 }]);
    await warehouse.run('INSERT INTO t VALUES (5)');
    expect(await warehouse.all('SELECT count(*)::INTEGER AS rows FROM t')).toEqual([{ rows: 3 }]);
    await warehouse.close();
  });

  it('a warehouse already at the newest migration, its views as views.sql defines them, opens and closes without a single write', async () => {
    const path = join(dir, 'warehouse.duckdb');
    const first = await Warehouse.open({ path });
    await loadActuals(first, 'a', { valid_time: [Date.UTC(2026, 10, 1)], value: [1] }, { quality: DEFAULT_QUALITY });
    await first.publish();
    await first.close();
    const writer = writerPathOf(path);
    const before = fingerprint(dir);

    const second = await Warehouse.open({ path });
    expect(existsSync(`${writer}.wal`)).toBe(false);
    expect(await second.all('SELECT count(*)::INTEGER AS n FROM actuals')).toEqual([{ n: 1 }]);
    await second.close();
    expect(fingerprint(dir)).toEqual(before);
  });
});

describe('a writer file that will not open', () => {
  /** Publishes one actual for site a, then one more for site b that only the writer file holds. */
  async function publishedThenMore(path: string): Promise<void> {
    const warehouse = await Warehouse.open({ path });
    const load = (site: string, value: number) =>
      loadActuals(
        warehouse,
        site,
        { valid_time: [Date.UTC(2026, 10, 1)], value: [value] },
        { quality: DEFAULT_QUALITY },
      );
    await load('a', 1);
    await warehouse.publish();
    await load('b', 2);
    await warehouse.close();
  }

  async function reopenAndCheck(path: string): Promise<Recovery> {
    const told: Recovery[] = [];
    const warehouse = await Warehouse.open({
      path,
      holder: { job: 'sync', runId: 'run-9' },
      onRecover: (r) => told.push(r),
    });
    try {
      expect(told).toEqual([warehouse.recovery]);
      const recovery = warehouse.recovery!;
      expect(recovery.rebuiltFrom).toBe('published snapshot');
      expect(existsSync(recovery.movedTo)).toBe(true);
      // Everything published is there; what only the lost writer file held is not.
      expect(await warehouse.all('SELECT site_id FROM actuals ORDER BY site_id')).toEqual([{ site_id: 'a' }]);
      expect(await warehouse.all('SELECT moved_to, reason, rebuilt_from, job, run_id FROM writer_recoveries')).toEqual([
        {
          moved_to: recovery.movedTo,
          reason: recovery.reason,
          rebuilt_from: 'published snapshot',
          job: 'sync',
          run_id: 'run-9',
        },
      ]);
      await warehouse.publish();
      return recovery;
    } finally {
      await warehouse.close();
    }
  }

  it('one whose WAL DuckDB cannot replay is moved aside and rebuilt from the published snapshot', async () => {
    const path = join(dir, 'warehouse.duckdb');
    await publishedThenMore(path);
    // A WAL left by a process killed before its checkpoint, then damaged: an entry whose bytes no
    // longer match its checksum.
    const writer = writerPathOf(path);
    const killed = spawnSync(process.execPath, [
      '--input-type=module',
      '-e',
      `
      import { DuckDBInstance } from '@duckdb/node-api';
      const connection = await (await DuckDBInstance.create(${JSON.stringify(writer)})).connect();
      await connection.run('CREATE TABLE t (v INTEGER); CHECKPOINT');
      await connection.run('INSERT INTO t SELECT range FROM range(1000)');
      process.kill(process.pid, 'SIGKILL');`,
    ]);
    expect(killed.signal).toBe('SIGKILL');
    const wal = readFileSync(`${writer}.wal`);
    for (let i = 200; i < 260; i++) wal[i] ^= 0xff;
    writeFileSync(`${writer}.wal`, wal);

    const recovery = await reopenAndCheck(path);
    expect(recovery.reason).toMatch(/Failure while replaying WAL file/);
    expect(existsSync(`${recovery.movedTo}.wal`)).toBe(true);
    // The next open finds a sound writer file: no second recovery.
    const again = await Warehouse.open({ path });
    expect(again.recovery).toBeNull();
    await again.close();
  });

  it('a torn one is moved aside and rebuilt the same way', async () => {
    const path = join(dir, 'warehouse.duckdb');
    await publishedThenMore(path);
    truncateSync(writerPathOf(path), 5000);
    await reopenAndCheck(path);
  });

  it('drafts of a writer killed while building or publishing are removed', async () => {
    const path = join(dir, 'warehouse.duckdb');
    await publishedThenMore(path);
    writeFileSync(`${writerPathOf(path)}.draft-dead0000`, 'half a file');
    writeFileSync(`${path}.tmp-dead0000`, 'half a file');
    const warehouse = await Warehouse.open({ path });
    await warehouse.close();
    expect(readdirSync(dir).filter((name) => /draft|tmp-/.test(name))).toEqual([]);
  });
});

/** Name, size and content hash of every file in `dir`. */
function fingerprint(folder: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(folder).map((name) => {
      const bytes = readFileSync(join(folder, name));
      return [name, `${bytes.length} ${createHash('sha1').update(bytes).digest('hex')}`];
    }),
  );
}
