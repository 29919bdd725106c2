import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_QUALITY } from './warehouse-support.js';
import { ModelItem, SiteResponse } from '../src/api/schemas.js';
import { formatInstant as iso } from '../src/time.js';
import {
  saveIntervalLabels,
  loadActuals,
  loadForecasts,
  loadModelOutputs,
  loadModels,
  loadSites,
} from '../src/warehouse/loader.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { modelRows, siteRows } from '../src/sync/normalize.js';

const H = 3_600_000;
const DAY = 24 * H;
const D0 = Date.UTC(2026, 10, 10); // a UTC midnight

let dir: string;
let warehouse: Warehouse;

/** One vintage issued at `issued`, hourly values for the UTC day `day`, each equal to `value`. */
function vintage(issued: number, day: number, value: number) {
  const hours = Array.from({ length: 24 }, (_, h) => day + h * H);
  return {
    valid_time: hours,
    forecast: hours.map(() => value),
    capacity: hours.map(() => 100),
    model_name: hours.map(() => 'ensemble'),
    model_version: hours.map(() => 1),
    update_time: hours.map(() => issued),
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'efsync-views-'));
  warehouse = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
  await loadSites(
    warehouse,
    [
      SiteResponse.parse({
        id: 's1',
        site_id: 's1',
        name: 'Roof',
        latitude: 59,
        longitude: 18,
        type: 'load',
        creation_timestamp_utc: iso(D0 - 30 * DAY),
        assets: [],
        capacity_kw_array: [{ value: 100, dateEnd: null }],
      }),
    ].map(siteRows),
  );
  // Vintages for day D0+1: two on D0 (the later is day-ahead), one early on D0+1 itself (the latest).
  await loadForecasts(warehouse, 's1', vintage(D0 + 6 * H, D0 + DAY, 10));
  await loadForecasts(warehouse, 's1', vintage(D0 + 18 * H, D0 + DAY, 20));
  await loadForecasts(warehouse, 's1', vintage(D0 + DAY + 1 * H, D0 + DAY, 30));
  await loadActuals(
    warehouse,
    's1',
    { valid_time: [D0 + DAY, D0 + DAY + H, D0 + DAY + 2 * H], value: [25, 35, null] },
    { quality: DEFAULT_QUALITY },
  );
  await loadModels(warehouse, [
    modelRows('s1', {
      ...ModelItem.parse({
        id: 'm1',
        name: 'quantile_p90',
        label: 'q90',
        version: 2,
        priority: 1,
        output_types: ['forecast'],
        state: [],
        serving_active: false,
      }),
      model_type: 'ai',
    }),
  ]);
  await loadModelOutputs(warehouse, 's1', [
    {
      model_id: 'm1',
      model_name: 'quantile_p90',
      model_version: 2,
      as_of: D0 + 12 * H,
      valid_time: [D0 + DAY, D0 + DAY + H],
      forecast: [40, 41],
      capacity: [100, 100],
    },
  ]);
});

afterAll(async () => {
  await warehouse.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('analyst views', () => {
  it('forecast_latest: the newest vintage per site and valid time', async () => {
    const rows = await warehouse.all<{ n: bigint; forecast: number; update_time: Date }>(
      'SELECT count(*) AS n, any_value(forecast) AS forecast, any_value(update_time) AS update_time FROM forecast_latest',
    );
    expect(Number(rows[0].n)).toBe(24);
    expect(rows[0].forecast).toBe(30);
    expect(rows[0].update_time.getTime()).toBe(D0 + DAY + H);
  });

  it('forecast_day_ahead: the last vintage issued on the UTC day before', async () => {
    const rows = await warehouse.all<{ forecast: number; update_time: Date }>(
      'SELECT DISTINCT forecast, update_time FROM forecast_day_ahead',
    );
    expect(rows.map((r) => [r.forecast, r.update_time.getTime()])).toEqual([[20, D0 + 18 * H]]);
  });

  it('forecast_day_ahead assigns a value to the day of its interval, as service.interval_label says', async () => {
    // Interval-beginning (the default): 00:00 begins the day, so all 24 hours are day-ahead of D0's vintage.
    const count = async () =>
      Number(
        (await warehouse.all<{ n: bigint }>('SELECT count(*) AS n FROM forecast_day_ahead WHERE forecast = 20'))[0].n,
      );
    expect(await count()).toBe(24);
    // Interval-ending: 00:00 closes the day before, whose day-ahead vintage (issued on D0 - 1) does not exist.
    await saveIntervalLabels(warehouse, { forecasts: 'ending', actuals: 'ending' });
    try {
      expect(await count()).toBe(23);
    } finally {
      await saveIntervalLabels(warehouse, { forecasts: 'beginning', actuals: 'beginning' });
    }
  });

  it('forecast_day_ahead answers the same whatever the session time zone', async () => {
    await warehouse.run("SET TimeZone = 'America/Los_Angeles'");
    try {
      const [row] = await warehouse.all<{ n: bigint }>(
        'SELECT count(*) AS n FROM forecast_day_ahead WHERE forecast = 20',
      );
      expect(Number(row.n)).toBe(24);
    } finally {
      await warehouse.run("SET TimeZone = 'UTC'");
    }
  });

  it('forecast_vs_actual: the latest forecast beside each actual, with error against capacity', async () => {
    const rows = await warehouse.all<{
      valid_time: Date;
      forecast: number;
      actual: number | null;
      error: number | null;
      error_of_capacity: number | null;
    }>('SELECT valid_time, forecast, actual, error, error_of_capacity FROM forecast_vs_actual ORDER BY valid_time');
    expect(
      rows.map((r) => [r.valid_time.getTime() - D0 - DAY, r.forecast, r.actual, r.error, r.error_of_capacity]),
    ).toEqual([
      [0, 30, 25, 5, 0.05],
      [H, 30, 35, -5, -0.05],
      [2 * H, 30, null, null, null],
    ]);
  });

  it('model_output_vs_actual: outputs beside actuals with lead time and quantile', async () => {
    const rows = await warehouse.all<{ quantile: number; lead_time: unknown; error: number; valid_time: Date }>(
      'SELECT quantile, epoch(lead_time) AS lead_time, error, valid_time FROM model_output_vs_actual ORDER BY valid_time',
    );
    expect(rows.map((r) => [r.quantile, r.lead_time, r.error])).toEqual([
      [0.9, 12 * 3600, 15],
      [0.9, 13 * 3600, 6],
    ]);
  });

  it('site_freshness: newest actual (not a gap) and newest forecast per site', async () => {
    const [row] = await warehouse.all<{
      site_id: string;
      newest_actual: Date;
      newest_forecast_valid_time: Date;
      newest_forecast_update_time: Date;
    }>('SELECT * FROM site_freshness');
    expect(row.site_id).toBe('s1');
    expect(row.newest_actual.getTime()).toBe(D0 + DAY + H);
    expect(row.newest_forecast_valid_time.getTime()).toBe(D0 + DAY + 23 * H);
    expect(row.newest_forecast_update_time.getTime()).toBe(D0 + DAY + H);
  });
});

describe('point-in-time macros', () => {
  const at = (ms: number) => `TIMESTAMPTZ '${iso(ms)}'`;

  it('forecast_as_of: per site and valid time, the newest vintage issued at or before the instant', async () => {
    const answer = async (instant: string) =>
      (
        await warehouse.all<{ n: bigint; forecast: number | null; issued: Date | null }>(
          `SELECT count(*) AS n, any_value(forecast) AS forecast, any_value(update_time) AS issued FROM forecast_as_of(${instant})`,
        )
      )[0];
    expect(Number((await answer(at(D0 + 5 * H))).n)).toBe(0); // nothing issued yet
    expect(await answer(at(D0 + 6 * H))).toEqual({ n: 24n, forecast: 10, issued: new Date(D0 + 6 * H) }); // at: included
    expect(await answer(at(D0 + DAY))).toEqual({ n: 24n, forecast: 20, issued: new Date(D0 + 18 * H) });
    // ISO text works too; now it answers what forecast_latest does
    expect(await answer(`'${iso(D0 + 2 * DAY)}'`)).toEqual({ n: 24n, forecast: 30, issued: new Date(D0 + DAY + H) });
  });

  it('model_output_as_of: per model and valid time, the newest output vintage at or before the instant', async () => {
    const rows = async (ms: number) =>
      warehouse.all<{ model_id: string; forecast: number }>(
        `SELECT model_id, forecast FROM model_output_as_of(${at(ms)}) ORDER BY valid_time`,
      );
    expect(await rows(D0 + 11 * H)).toEqual([]);
    expect(await rows(D0 + 12 * H)).toEqual([
      { model_id: 'm1', forecast: 40 },
      { model_id: 'm1', forecast: 41 },
    ]);
  });

  it('the macros are in the published file, for a read-only analyst connection', async () => {
    await warehouse.publish();
    const instance = await DuckDBInstance.create(join(dir, 'warehouse.duckdb'), { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(
        `SELECT count(*)::INTEGER AS n FROM forecast_as_of(${at(D0 + DAY)}) UNION ALL SELECT count(*)::INTEGER FROM model_output_as_of(${at(D0 + DAY)})`,
      );
      expect(reader.getRows()).toEqual([[24], [2]]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});

describe('comments', () => {
  it('every table and view, and every column of them, carries a non-empty comment', async () => {
    const missing = await warehouse.all<{ what: string }>(`
      SELECT table_name || '.' || column_name AS what FROM duckdb_columns()
      WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND coalesce(trim(comment), '') = ''
      UNION ALL
      SELECT table_name FROM duckdb_tables()
      WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND coalesce(trim(comment), '') = ''
      UNION ALL
      SELECT view_name FROM duckdb_views()
      WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND coalesce(trim(comment), '') = ''
      UNION ALL
      SELECT function_name FROM duckdb_functions()
      WHERE database_name = current_database() AND schema_name = 'main' AND function_type = 'table_macro'
        AND NOT internal AND coalesce(trim(comment), '') = ''
      ORDER BY 1`);
    expect(missing.map((m) => m.what)).toEqual([]);
  });
});
