// Loading figures: the raw data-chunk append (the floor any loader pays), the staging append
// alone, and the loader's full path (staging + anti-join merge, one transaction per site). The
// lead's bench/run.ts calls benchAppend(rows) for its "raw append" limit; run this file for the
// loader's own figures:
//   node --import tsx bench/load.ts [--sites 1000] [--rows-per-site 6000]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { DOUBLE, DuckDBDataChunk, INTEGER, VARCHAR, type DuckDBValue } from '@duckdb/node-api';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { loadForecasts } from '../src/warehouse/loader.js';
import type { ForecastColumns } from '../src/warehouse/rows.js';
import { appendBlocks, type StageBlock } from '../src/warehouse/staging.js';
import { Warehouse } from '../src/warehouse/warehouse.js';

const CHUNK_ROWS = 2048;
const QUARTER_HOUR = 900_000;
const START = Date.UTC(2026, 0, 1);

/** Synthetic forecast columns for one site: vintages every 6 h, each 96 quarter-hours ahead. */
export function syntheticForecast(rows: number, seed = 0): ForecastColumns {
  const columns = {
    valid_time: new Array<number>(rows),
    forecast: new Array<number | null>(rows),
    capacity: new Array<number | null>(rows),
    model_name: new Array<string>(rows),
    model_version: new Array<number>(rows),
    update_time: new Array<number>(rows),
  };
  for (let i = 0; i < rows; i++) {
    const vintage = Math.floor(i / 96);
    columns.update_time[i] = START + vintage * 24 * QUARTER_HOUR;
    columns.valid_time[i] = columns.update_time[i] + ((i % 96) + 1) * QUARTER_HOUR;
    columns.forecast[i] = ((i * 7919 + seed) % 1000) / 10;
    columns.capacity[i] = 1000;
    columns.model_name[i] = 'ensemble';
    columns.model_version[i] = 3;
  }
  return columns;
}

/**
 * Appends `rows` synthetic forecast rows through data chunks into a fresh DuckDB file, in the
 * loader's chunk format (instants as DOUBLE epoch ms), with no staging and no merge. Returns seconds.
 */
export async function benchAppend(rows: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'efsync-bench-append-'));
  const { instance, connection } = await openDuckDB(join(dir, 'append.duckdb'));
  try {
    await connection.run(`CREATE TABLE forecasts (site_id VARCHAR, model_name VARCHAR, model_version INTEGER,
      update_time DOUBLE, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE)`);
    const perSite = 6_000;
    const site = syntheticForecast(perSite);
    const types = [VARCHAR, VARCHAR, INTEGER, DOUBLE, DOUBLE, DOUBLE, DOUBLE];
    const started = performance.now();
    const appender = await connection.createAppender('forecasts');
    for (let done = 0; done < rows; done += perSite) {
      const siteId = `site-${done / perSite}`;
      const n = Math.min(perSite, rows - done);
      for (let offset = 0; offset < n; offset += CHUNK_ROWS) {
        const size = Math.min(CHUNK_ROWS, n - offset);
        const chunk = DuckDBDataChunk.create(types, size);
        const columns: (ArrayLike<unknown> | string)[] = [
          siteId,
          site.model_name,
          site.model_version,
          site.update_time,
          site.valid_time,
          site.forecast,
          site.capacity,
        ];
        columns.forEach((values, index) => {
          const vector = chunk.getColumnVector(index);
          for (let row = 0; row < size; row++) {
            vector.setItem(row, (typeof values === 'string' ? values : values[offset + row]) as DuckDBValue);
          }
          vector.flush();
        });
        appender.appendDataChunk(chunk);
      }
    }
    appender.closeSync();
    await connection.run('CHECKPOINT');
    return (performance.now() - started) / 1000;
  } finally {
    connection.closeSync();
    instance.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Stages `rows` rows (blocks of 192: a site and a block number, then valid time, value and
 * capacity, a value in 50 null) into a TEMP table through the loader's appender (staging.ts),
 * best of three, into a fresh warehouse. Returns seconds.
 */
export async function benchStaging(rows: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'efsync-bench-staging-'));
  const warehouse = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
  try {
    await warehouse.run('CREATE TEMP TABLE staged (site_no INTEGER, t DOUBLE, v DOUBLE, c DOUBLE)');
    const size = 192;
    const valid = Array.from({ length: size }, (_, i) => START + i * QUARTER_HOUR);
    const values = Array.from({ length: size }, (_, i) => (i % 50 === 0 ? null : i / 3));
    const blocks: StageBlock[] = Array.from({ length: Math.ceil(rows / size) }, (_, b) => ({
      rows: Math.min(size, rows - b * size),
      columns: [
        { type: INTEGER, values: { constant: b + 1 } },
        { type: DOUBLE, values: valid },
        { type: DOUBLE, values },
        { type: DOUBLE, values: { constant: 1000 } },
      ],
    }));
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 3; round++) {
      await warehouse.run('DELETE FROM staged');
      const started = performance.now();
      await appendBlocks(warehouse, 'staged', blocks);
      best = Math.min(best, (performance.now() - started) / 1000);
    }
    return best;
  } finally {
    await warehouse.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface LoaderFigures {
  sites: number;
  rows: number;
  /** Site loads in flight at once: 1 merges site by site; more lets the loader group-commit. */
  concurrency: number;
  /** First load: every row new. */
  load_s: number;
  /** The same data again: every row already there, nothing written. */
  reload_s: number;
  reload_rows: number;
}

/**
 * The loader's full path into a fresh warehouse: one loadForecasts call per site, `concurrency`
 * at a time, sites in site_id order (as the sync starts them), ids random like the service's.
 */
export async function benchLoader(sites: number, rowsPerSite: number, concurrency: number): Promise<LoaderFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'efsync-bench-loader-'));
  const warehouse = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
  try {
    const columns = syntheticForecast(rowsPerSite);
    const ids = Array.from({ length: sites }, () => randomUUID()).sort();
    const limit = pLimit(concurrency);
    const pass = async () => {
      const started = performance.now();
      const written = await Promise.all(
        ids.map((id) => limit(async () => (await loadForecasts(warehouse, id, columns)).forecasts ?? 0)),
      );
      return { seconds: (performance.now() - started) / 1000, written: written.reduce((a, b) => a + b, 0) };
    };
    const first = await pass();
    const second = await pass();
    return {
      sites,
      rows: first.written,
      concurrency,
      load_s: first.seconds,
      reload_s: second.seconds,
      reload_rows: second.written,
    };
  } finally {
    await warehouse.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const sites = option('--sites', 1000);
  const rowsPerSite = option('--rows-per-site', 6000);
  const rows = sites * rowsPerSite;
  const rate = (n: number, seconds: number) => `${Math.round(n / seconds).toLocaleString('en')} rows/s`;
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  let before = cpu();
  const appendSeconds = await benchAppend(rows);
  console.log(
    `raw append       ${rows.toLocaleString('en')} rows  ${appendSeconds.toFixed(2)} s  ${rate(rows, appendSeconds)}  cpu ${(cpu() - before).toFixed(1)} s`,
  );
  const stagingSeconds = await benchStaging(rows);
  console.log(
    `staging          ${rows.toLocaleString('en')} rows  ${stagingSeconds.toFixed(2)} s  ${rate(rows, stagingSeconds)}`,
  );
  for (const concurrency of [1, 8]) {
    before = cpu();
    const loader = await benchLoader(sites, rowsPerSite, concurrency);
    console.log(
      `loader x${concurrency}        ${loader.rows.toLocaleString('en')} rows  ${loader.load_s.toFixed(2)} s  ${rate(loader.rows, loader.load_s)}; ` +
        `again: ${loader.reload_rows} rows written, ${loader.reload_s.toFixed(2)} s  ${rate(rows, loader.reload_s)}  cpu ${(cpu() - before).toFixed(1)} s both`,
    );
  }
}
