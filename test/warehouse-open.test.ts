import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listMigrations, migrate } from '../src/warehouse/migrate.js';
import { Warehouse } from '../src/warehouse/warehouse.js';

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
    expect(await migrate(first)).toEqual([]);
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

  it('concurrent callers never interleave inside each other\'s transactions', async () => {
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
});
