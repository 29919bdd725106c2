// The views file over a lake of Delta tables: it reads tables whose log has a checkpoint (whose
// Parquet sits under the table's folder, beside the data files the views glob), and, with the
// DuckDB variable efsync_lake, a lake moved away from where the file was written.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointIfDue } from '../src/lake/delta/checkpoint-write.js';
import { commit } from '../src/lake/delta/commit.js';
import { writeDataFiles } from '../src/lake/delta/files.js';
import { listLog } from '../src/lake/delta/log.js';
import { ensureLake, SEQ_TAG, STAGING_DIR, SCHEMA_FILE, tableDir } from '../src/lake/layout.js';
import { LAKE_VARIABLE, writeViewsFile } from '../src/lake/views.js';
import { openDuckDB, type DuckDBHandle } from '../src/warehouse/duckdb.js';
import { viewsDefinition } from '../src/warehouse/migrate.js';
import { tempDir } from './sync-support.js';

let db: DuckDBHandle;

beforeAll(async () => {
  db = await openDuckDB(':memory:');
});

afterAll(() => {
  db?.close();
});

/** Eleven commits of one forecast each (sites s0..s10), so the compactor's checkpoint is due. */
async function forecasts(lake: string): Promise<void> {
  const table = tableDir(lake, 'forecasts');
  for (let i = 0; i < 11; i++) {
    const row = `SELECT * FROM read_parquet('${join(table, SCHEMA_FILE)}') UNION ALL BY NAME
      SELECT 's${i}' AS site_id, 'm' AS model_name, 1 AS model_version, TIMESTAMPTZ '2026-10-31 00:00:00+00' AS update_time,
        TIMESTAMPTZ '2026-11-01 00:00:00+00' AS valid_time, 1.5 AS forecast`;
    const adds = await writeDataFiles(db.connection, {
      table,
      query: `SELECT *, '2026-11' AS month FROM (${row})`,
      partitionColumns: ['month'],
      prefix: 'part-test',
      statsColumns: ['site_id', 'valid_time'],
      dataChange: true,
      staging: join(lake, STAGING_DIR),
      tags: { [SEQ_TAG]: String(i) },
    });
    const readVersion = listLog(table).commits.at(-1) ?? -1;
    await commit({ table, readVersion, operation: 'WRITE', actions: adds.map((add) => ({ add })) });
  }
  expect(await checkpointIfDue(db.connection, table)).toBe(11);
}

async function counts(views: string, lakeAt?: string): Promise<Record<string, unknown>> {
  const file = await openDuckDB(views, { readOnly: true });
  try {
    if (lakeAt) await file.connection.run(`SET VARIABLE ${LAKE_VARIABLE} = '${lakeAt}'`);
    const sql =
      'SELECT (SELECT count(*) FROM forecasts) AS forecasts, (SELECT count(*) FROM forecast_latest) AS latest';
    return (await file.connection.runAndReadAll(sql)).getRowObjectsJS()[0];
  } finally {
    file.close();
  }
}

/** The comments of the analyst view forecast_latest and its lead_time column, and of the macro forecast_as_of. */
async function analystComments(views: string): Promise<unknown[]> {
  const file = await openDuckDB(views, { readOnly: true });
  try {
    const sql = `SELECT (SELECT comment FROM duckdb_views() WHERE view_name = 'forecast_latest'),
      (SELECT comment FROM duckdb_columns() WHERE table_name = 'forecast_latest' AND column_name = 'lead_time'),
      (SELECT comment FROM duckdb_functions() WHERE function_name = 'forecast_as_of')`;
    return (await file.connection.runAndReadAll(sql)).getRows()[0];
  } finally {
    file.close();
  }
}

describe('the views file over Delta tables', () => {
  it('reads a table past its checkpoint, and the lake where efsync_lake says it moved', async () => {
    const dir = tempDir('efsync-lake-views-');
    const lake = join(dir, 'lake');
    await ensureLake(lake);
    await forecasts(lake);
    const views = join(dir, 'lake.duckdb');
    await writeViewsFile(lake, views);
    expect(await counts(views)).toEqual({ forecasts: 11n, latest: 11n });
    const { views: commented, table_macros } = viewsDefinition().comments.value;
    expect(await analystComments(views)).toEqual([
      commented.forecast_latest.comment,
      commented.forecast_latest.columns.lead_time,
      table_macros.forecast_as_of,
    ]);

    const moved = join(dir, 'mounted-elsewhere');
    cpSync(lake, moved, { recursive: true });
    rmSync(lake, { recursive: true });
    expect(await counts(views, moved)).toEqual({ forecasts: 11n, latest: 11n });
  }, 120_000);
});
