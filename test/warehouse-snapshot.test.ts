// `efsync snapshot`: the published warehouse, whose closed days are Parquet files beside it, as one
// self-contained DuckDB file: the same rows in every table and analyst view, no view reading a file,
// moved to another folder with the original folder gone; a window keeps only its valid times; the
// command writes it in one go.
import { cpSync, existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DAY } from '../src/time.js';
import { writeSnapshot } from '../src/warehouse/snapshot.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { runCli } from './fixtures/runner-child.js';
import { query, tempDir } from './sync-support.js';

const START = Date.UTC(2026, 0, 1);
const DAYS = 10;
const WHOLE = { from: null, to: null, tables: null, memoryLimit: '64MB', now: START };
const TABLES = ['forecasts', 'model_outputs', 'actuals', 'forecast_latest', 'forecast_vs_actual', 'sites'];

/** A published warehouse of DAYS days of 2 sites' rows, 3 of them hot: the others in cold files. */
async function publishedWarehouse(): Promise<string> {
  const path = join(tempDir('efsync-snapshot-'), 'warehouse.duckdb');
  const wh = await Warehouse.open({ path, hotWindowMs: 3 * DAY, now: () => START + DAYS * DAY + 3_600_000 });
  try {
    const at = (expr: string) => `make_timestamptz((${START}::BIGINT + (${expr}) * 900000) * 1000)`;
    const steps = `range(0, ${DAYS * 96})`;
    await wh.run(
      `INSERT INTO forecasts SELECT 'site-' || s, 'm', 1, ${at('q - 8')}, ${at('q')}, q % 97, 100 FROM ${steps} b(q), range(2) a(s)`,
    );
    await wh.run(
      `INSERT INTO model_outputs SELECT 'model-' || s, ${at('q - 8')}, ${at('q')}, 'site-' || s, 'm', 1, q % 89, 100 FROM ${steps} b(q), range(2) a(s)`,
    );
    await wh.run(
      `INSERT INTO actuals SELECT 'site-' || s, ${at('q')}, q % 83, ${at('q + 1')}, NULL FROM ${steps} b(q), range(2) a(s)`,
    );
    await wh.publish();
  } finally {
    await wh.close();
  }
  return path;
}

async function counts(path: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES) {
    const [{ n }] = await query<{ n: bigint }>(path, `SELECT count(*) AS n FROM ${table}`);
    out[table] = Number(n);
  }
  return out;
}

describe('efsync snapshot', () => {
  let published: string;
  beforeAll(async () => {
    published = await publishedWarehouse();
    expect(existsSync(`${published.slice(0, -'.duckdb'.length)}.cold`)).toBe(true);
  });

  it('one file with every row and view, read from another folder with the published folder gone', async () => {
    const before = await counts(published);
    expect(before.forecasts).toBe(2 * DAYS * 96);
    const out = join(tempDir('efsync-snapshot-out-'), 'copy.duckdb');
    const snapshot = await writeSnapshot({ ...WHOLE, published, out });
    expect(Object.fromEntries(snapshot.rows)).toMatchObject({ forecasts: 2 * DAYS * 96, actuals: 2 * DAYS * 96 });
    // Carried away: the published folder renamed, the copy in a folder of its own.
    const moved = join(tempDir('efsync-snapshot-laptop-'), 'laptop.duckdb');
    cpSync(out, moved);
    const folder = join(published, '..');
    renameSync(folder, `${folder}-gone`);
    try {
      expect(await counts(moved)).toEqual(before);
      expect(await query(moved, `SELECT view_name FROM duckdb_views() WHERE sql ILIKE '%read_parquet%'`)).toEqual([]);
      expect(await query(moved, `SELECT kind, history, valid_from, valid_to, cold_folder FROM warehouse_info`)).toEqual(
        [{ kind: 'snapshot', history: 'full', valid_from: null, valid_to: null, cold_folder: null }],
      );
      expect(
        await query(moved, `SELECT function_name FROM duckdb_functions() WHERE function_name LIKE 'efsync%'`),
      ).toEqual([]);
      const [{ n }] = await query<{ n: bigint }>(
        moved,
        `SELECT count(*) AS n FROM forecast_as_of(TIMESTAMPTZ '2026-01-05 00:00:00+00')`,
      );
      expect(Number(n)).toBeGreaterThan(0);
    } finally {
      renameSync(`${folder}-gone`, folder);
    }
  });

  it('a window keeps the valid times in [from, to) of the series, and the rest of the tables whole', async () => {
    const out = join(tempDir('efsync-snapshot-window-'), 'window.duckdb');
    const from = START + 2 * DAY;
    const to = START + 4 * DAY;
    await writeSnapshot({ ...WHOLE, published, out, from, to });
    const [range] = await query<{ n: bigint; first: Date; last: Date }>(
      out,
      'SELECT count(*) AS n, min(valid_time) AS first, max(valid_time) AS last FROM forecasts',
    );
    expect(Number(range.n)).toBe(2 * 2 * 96);
    expect([range.first.getTime(), range.last.getTime()]).toEqual([from, to - 900_000]);
    const [info] = await query<{ history: string; valid_from: Date; valid_to: Date }>(
      out,
      'SELECT history, valid_from, valid_to FROM warehouse_info',
    );
    expect([info.history, info.valid_from.getTime(), info.valid_to.getTime()]).toEqual(['window', from, to]);
  });

  it('--tables keeps those tables, and the views and macros that read nothing else', async () => {
    const out = join(tempDir('efsync-snapshot-tables-'), 'tables.duckdb');
    const snapshot = await writeSnapshot({ ...WHOLE, published, out, tables: ['forecasts', 'sites'] });
    const tables = await query<{ name: string }>(
      out,
      `SELECT table_name AS name FROM duckdb_tables() WHERE NOT internal ORDER BY name`,
    );
    expect(tables.map((t) => t.name)).toEqual(['forecasts', 'sites', 'warehouse_info']);
    expect(snapshot.leftOut).toContain('forecast_vs_actual');
    expect(snapshot.leftOut).not.toContain('forecast_latest');
    const before = await counts(published);
    const [{ n }] = await query<{ n: bigint }>(out, 'SELECT count(*) AS n FROM forecast_latest');
    expect(Number(n)).toBe(before.forecast_latest);
    const [{ m }] = await query<{ m: bigint }>(
      out,
      `SELECT count(*) AS m FROM forecast_as_of(TIMESTAMPTZ '2026-01-05 00:00:00+00')`,
    );
    expect(Number(m)).toBeGreaterThan(0);
    await expect(writeSnapshot({ ...WHOLE, published, out, tables: ['forecast', 'sites'] })).rejects.toThrow(
      /--tables: no table "forecast" in the published warehouse/,
    );
  });

  it('the published file says what it is, and its views name their files relative to it', async () => {
    expect(
      await query(published, 'SELECT kind, history, valid_from, valid_to, source, cold_folder FROM warehouse_info'),
    ).toEqual([
      {
        kind: 'published',
        history: 'full',
        valid_from: null,
        valid_to: null,
        source: null,
        cold_folder: 'warehouse.cold',
      },
    ]);
    const views = await query<{ sql: string }>(
      published,
      `SELECT sql FROM duckdb_views() WHERE sql ILIKE '%read_parquet%'`,
    );
    expect(views.length).toBeGreaterThan(0);
    for (const { sql } of views) expect(sql).not.toContain(join(published, '..'));
  });

  it('the command writes it and says where and how large', async () => {
    const out = join(tempDir('efsync-snapshot-cli-'), 'cli.duckdb');
    const run = await runCli(['snapshot', '--db', published, '--out', out]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/cli\.duckdb: [\d.]+ MB, \d+ series rows, in [\d.]+ s; it needs no file beside it/);
    expect(await counts(out)).toEqual(await counts(published));
    const bad = await runCli([
      'snapshot',
      '--db',
      published,
      '--out',
      out,
      '--from',
      '2026-01-05',
      '--to',
      '2026-01-01',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--to must be after --from');
  });
});
