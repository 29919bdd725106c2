// efsync export: warehouse rows as an Arrow IPC file that Arrow readers (pandas, polars, R) open.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportArrow } from '../src/export/arrow.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { CLI } from './fixtures/runner-child.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'efsync-export-'));
const db = join(dir, 'warehouse.duckdb');

beforeAll(async () => {
  const warehouse = await Warehouse.open({ path: db });
  await warehouse.run(`INSERT INTO sites (site_id, name, type, latitude, longitude, nameplate_kw, settings, synced_at)
    VALUES ('s1', 'Uppsala', 'solar', 59.86, 17.64, 500, '{"model_resolution":"15min"}', '2026-03-29T01:00:00Z')`);
  await warehouse.run(`INSERT INTO forecasts VALUES
    ('s1', 'ai', 1, '2026-03-29T00:00:00Z', '2026-03-29T01:00:00+02:00', 12.5, 500),
    ('s1', 'ai', 1, '2026-03-29T00:00:00Z', '2026-03-29T03:15:00+02:00', NULL, 500)`);
  await warehouse.publish();
  await warehouse.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function published<T>(fn: (warehouse: Warehouse) => Promise<T>): Promise<T> {
  const warehouse = await Warehouse.open({ path: db, readOnly: true });
  try {
    return await fn(warehouse);
  } finally {
    await warehouse.close();
  }
}

describe('exportArrow', () => {
  it('writes every row with its instants in UTC, numbers as numbers and gaps as nulls', async () => {
    const out = join(dir, 'forecasts.arrow');
    const rows = await published((w) => exportArrow(w.connection, 'SELECT * FROM forecasts ORDER BY valid_time', out));
    expect(rows).toBe(2);
    const table = tableFromIPC(readFileSync(out));
    expect(table.numRows).toBe(2);
    expect(String(table.schema.fields.find((f) => f.name === 'valid_time')!.type)).toBe('Timestamp<MILLISECOND, UTC>');
    const [first, second] = table.toArray().map((row) => row.toJSON());
    expect(first.valid_time).toBe(Date.parse('2026-03-28T23:00:00Z'));
    expect(second.valid_time).toBe(Date.parse('2026-03-29T01:15:00Z'));
    expect(first.forecast).toBe(12.5);
    expect(second.forecast).toBeNull();
    expect(first.model_version).toBe(1);
  });

  it('writes JSON columns as text, and an empty result with its columns', async () => {
    const out = join(dir, 'empty.arrow');
    const rows = await published((w) =>
      exportArrow(w.connection, "SELECT site_id, settings FROM sites WHERE site_id = 'none'", out),
    );
    expect(rows).toBe(0);
    const table = tableFromIPC(readFileSync(out));
    expect(table.numRows).toBe(0);
    expect(table.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual(['site_id:Utf8', 'settings:Utf8']);
  });

  it('leaves no file behind when the query fails', async () => {
    const out = join(dir, 'bad.arrow');
    await expect(published((w) => exportArrow(w.connection, 'SELECT * FROM no_such_table', out))).rejects.toThrow(
      /no_such_table/,
    );
    expect(existsSync(out)).toBe(false);
  });
});

describe('efsync export', () => {
  it('exports a view of the published warehouse', async () => {
    const out = join(dir, 'sites.arrow');
    const { stdout } = await run(process.execPath, [
      ...CLI,
      'export',
      '--db',
      db,
      '--table',
      'site_freshness',
      '--out',
      out,
    ]);
    expect(stdout).toContain('1 rows');
    expect(tableFromIPC(readFileSync(out)).get(0)?.toJSON().name).toBe('Uppsala');
  });

  it('refuses a table name that is not one, with the usage exit code', async () => {
    const failure = await run(process.execPath, [
      ...CLI,
      'export',
      '--db',
      db,
      '--table',
      'sites; DROP TABLE x',
      '--out',
      join(dir, 'x.arrow'),
    ]).catch((error: { code: number; stderr: string }) => error);
    expect(failure).toMatchObject({ code: 2 });
    expect((failure as { stderr: string }).stderr).toContain('--table sites; DROP TABLE x: Catalog Error');
  });
});
