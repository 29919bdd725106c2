// The lake read as engines other than DuckDB read it: straight from the Parquet files, with hive
// partitioning (polars' scan_parquet('<table>/month=*/*.parquet', hive_partitioning=True), Spark's
// and Trino's partition discovery), through hyparquet, a Parquet reader that shares no code with
// DuckDB. The active files hold one row per key (shards commit copy-on-write), and after `lake
// vacuum` the folders hold only the active files, so they equal the views file; the instants are
// UTC-adjusted timestamps, which polars reads as Datetime(time_zone='UTC').
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, type SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { compactLake } from '../src/lake/compact.js';
import { vacuumLake } from '../src/lake/vacuum.js';
import { writeViewsFile } from '../src/lake/views.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { emuForFile, NOW, query, runSync, tempDir, testConfig } from './sync-support.js';

const HOUR = 3_600_000;
let clock = NOW;
const served = emuForFile({ sites: 4, now: () => clock });

interface ParquetFile {
  path: string;
  /** The hive partition values named by the directories between the table and the file. */
  partitions: Record<string, string>;
}

/** The files a directory reader takes: `_` and `.` names skipped, `key=value` folders as columns. */
function parquetFiles(dir: string, partitions: Record<string, string> = {}): ParquetFile[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => !entry.name.startsWith('_') && !entry.name.startsWith('.'))
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        const [key, value] = entry.name.split('=');
        return parquetFiles(path, { ...partitions, [key]: value });
      }
      return entry.name.endsWith('.parquet') ? [{ path, partitions }] : [];
    });
}

async function readTable(lake: string, table: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const { path, partitions } of parquetFiles(join(lake, table))) {
    const file = await asyncBufferFromFile(path);
    for (const row of await parquetReadObjects({ file })) rows.push({ ...row, ...partitions });
  }
  return rows;
}

async function schemaOf(lake: string, table: string): Promise<SchemaElement[]> {
  const [first] = parquetFiles(join(lake, table));
  return (await parquetMetadataAsync(await asyncBufferFromFile(first.path))).schema;
}

/** Rows as sorted text over the given columns, instants as epoch ms, so two readers compare. */
function canonical(rows: Record<string, unknown>[], columns: readonly string[]): string[] {
  const plain = (value: unknown) =>
    value instanceof Date ? value.getTime() : typeof value === 'bigint' ? Number(value) : value;
  return rows.map((row) => JSON.stringify(columns.map((column) => plain(row[column])))).sort();
}

const isInstant = (column: string) => /_(time|at|of)$/.test(column);

describe('the lake read straight from its files', () => {
  it('after compaction equals the views, table by table, with UTC timestamps and the month as a partition column', async () => {
    const dir = tempDir('efsync-lake-readers-');
    const lake = join(dir, 'lake');
    const views = join(dir, 'lake.duckdb');
    const config = { ...testConfig({ dir, url: served.emu.url }), sink: 'parquet' as const, lake };
    // Two runs, three hours apart: new vintages and revised actuals, so the second run rewrites
    // files and the first run's stay on disk, removed from the log, until vacuum.
    for (const now of [NOW, NOW + 3 * HOUR]) {
      clock = now;
      for (const index of [0, 1]) {
        expect((await runSync(config, { shard: { index, count: 2 } }, now)).status).toBe('ok');
      }
    }
    await compactLake(lake);
    // Removed files (rewritten, compacted) stay for readers of older snapshots until vacuum;
    // with no retention, the folders hold exactly the active files, as a directory reader needs.
    await vacuumLake(lake, 0);
    await writeViewsFile(lake, views);

    const checked = {
      sites: ['site_id', 'name', 'type', 'latitude', 'longitude'],
      forecasts: ['site_id', 'model_name', 'model_version', 'update_time', 'valid_time', 'forecast', 'capacity'],
      model_outputs: ['model_id', 'as_of', 'valid_time', 'forecast', 'capacity'],
      actuals: ['site_id', 'valid_time', 'value'],
    };
    for (const [table, columns] of Object.entries(checked)) {
      const fromFiles = await readTable(lake, table);
      const select = columns.map((c) => (isInstant(c) ? `epoch_ms(${c}) AS ${c}` : c)).join(', ');
      const fromViews = await query<Record<string, unknown>>(views, `SELECT ${select} FROM ${table}`);
      expect(fromFiles.length, table).toBeGreaterThan(0);
      expect(canonical(fromFiles, columns), table).toEqual(canonical(fromViews, columns));
    }

    const forecasts = await readTable(lake, 'forecasts');
    for (const row of forecasts) {
      expect((row.valid_time as Date).toISOString().slice(0, 7)).toBe(row.month);
    }
    // The README's way to query the views file from a fresh clone.
    const sql = await startChild([...CLI, 'sql', '--db', views, '--json', 'SELECT count(*) AS n FROM forecast_latest'])
      .exit;
    expect(sql.code).toBe(0);
    expect(JSON.parse(sql.stdout)[0].n).toBeGreaterThan(0);
    // the point-in-time macros too: at a far instant, forecast_as_of is forecast_latest
    const [asOf] = await query<{ same: boolean }>(
      views,
      "SELECT (SELECT count(*) FROM forecast_as_of(TIMESTAMPTZ '2100-01-01 00:00:00+00')) = (SELECT count(*) FROM forecast_latest) AS same",
    );
    expect(asOf.same).toBe(true);

    const validTime = (await schemaOf(lake, 'forecasts')).find((e) => e.name === 'valid_time');
    expect(validTime?.logical_type).toEqual({ type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' });
  }, 300_000);
});
