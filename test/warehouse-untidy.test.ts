// Untidy loads: a key given twice with two values is stored by one rule, the same way for
// forecasts, model outputs and actuals: within one answer the greatest value, whatever the order
// it came in; across two reads of a vintage the later read's. So a rerun of the same answers, in
// any order, stores the same value and writes no revision.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { ModelItem } from '../src/api/schemas.js';
import { modelRows, type SiteModel } from '../src/sync/normalize.js';
import { formatInstant as iso } from '../src/time.js';
import { loadActuals, loadForecasts, loadModelOutputs, loadModels, loadTypedActuals } from '../src/warehouse/loader.js';
import { applyMigrations, listMigrations } from '../src/warehouse/migrate.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { openTempWarehouse, removeWarehouse } from './warehouse-support.js';

const H = 3_600_000;
const T0 = Date.UTC(2026, 10, 1);

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  ({ dir, warehouse } = await openTempWarehouse('efsync-untidy-'));
});
afterEach(() => removeWarehouse(warehouse, dir));

/** Hours 1..4 after T0, hour 2 listed again last with `last` (the body the emulator's `duplicates` sends). */
const times = [T0 + H, T0 + 2 * H, T0 + 3 * H, T0 + 4 * H, T0 + 2 * H];
/** The same valid times with the two values of hour 2 the other way round. */
const FIRST = [1, 20, 3, 4, 2];
const LAST = [1, 2, 3, 4, 20];

async function valueAt(sql: string): Promise<number | null> {
  const [row] = await warehouse.all<{ v: number | null }>(sql);
  return row.v;
}

describe('a valid time listed twice with two values', () => {
  it('actuals: the greatest value, in either order; a rerun in the other order writes nothing and leaves no revision', async () => {
    const body = (value: number[]) => ({ valid_time: times, value });
    expect(await loadActuals(warehouse, 's1', body(LAST), { now: T0 + 10 * H })).toEqual({ actuals: 4 });
    for (let run = 0; run < 3; run++)
      expect(await loadActuals(warehouse, 's1', body(run % 2 === 0 ? FIRST : LAST), { now: T0 + 11 * H })).toEqual({});
    expect(await valueAt(`SELECT value AS v FROM actuals WHERE epoch_ms(valid_time) = ${T0 + 2 * H}`)).toBe(20);
    expect(await valueAt('SELECT count(*)::INTEGER AS v FROM actual_revisions')).toBe(0);
  });

  it('actuals of another type: the same rule', async () => {
    const body = { valid_time: times, value: [1, 2, 3, 4, 20] };
    expect(await loadTypedActuals(warehouse, 's1', 'irradiance', body, { now: T0 + 10 * H })).toEqual({
      actuals_by_type: 4,
    });
    expect(await loadTypedActuals(warehouse, 's1', 'irradiance', body, { now: T0 + 11 * H })).toEqual({});
    expect(await valueAt(`SELECT value AS v FROM actuals_by_type WHERE epoch_ms(valid_time) = ${T0 + 2 * H}`)).toBe(20);
    expect(await valueAt('SELECT count(*)::INTEGER AS v FROM actual_revisions_by_type')).toBe(0);
  });

  it('forecasts: the greatest value of a body in either order, and the last read when a vintage comes in several', async () => {
    const read = (values: number[]) => ({
      valid_time: times,
      forecast: values,
      capacity: times.map(() => 1000),
      model_name: times.map(() => 'ensemble'),
      model_version: times.map(() => 1),
      update_time: times.map(() => T0),
    });
    expect(await loadForecasts(warehouse, 's1', read([1, 2, 3, 4, 20]))).toEqual({ forecasts: 4 });
    expect(await valueAt(`SELECT forecast AS v FROM forecasts WHERE epoch_ms(valid_time) = ${T0 + 2 * H}`)).toBe(20);
    // Two reads of one vintage in one load (s2): the second read's values win.
    expect(await loadForecasts(warehouse, 's2', [read([1, 2, 3, 4, 2]), read([5, 6, 7, 8, 9])])).toEqual({
      forecasts: 4,
    });
    const s2 = await warehouse.all<{ forecast: number }>(
      "SELECT forecast FROM forecasts WHERE site_id = 's2' ORDER BY valid_time",
    );
    expect(s2.map((r) => r.forecast)).toEqual([5, 9, 7, 8]);
    expect(await loadForecasts(warehouse, 's1', read([1, 2, 3, 4, 20]))).toEqual({});
    expect(await loadForecasts(warehouse, 's1', read(FIRST))).toEqual({});
    // A null is the least value: the number listed beside it wins, first or last.
    expect(await loadForecasts(warehouse, 's3', read([1, null, 3, 4, 7] as number[]))).toEqual({ forecasts: 4 });
    expect(await loadForecasts(warehouse, 's3', read([1, 7, 3, 4, null] as number[]))).toEqual({});
  });

  it('model outputs: the greatest value within a body in either order, the last read across two reads of a vintage', async () => {
    const output = (values: number[]) => ({
      model_id: 'm1',
      model_name: 'gbm',
      model_version: 1,
      as_of: T0,
      valid_time: times,
      forecast: values,
      capacity: times.map(() => 500),
    });
    expect(await loadModelOutputs(warehouse, 's1', [output([1, 2, 3, 4, 20])])).toEqual({ model_outputs: 4 });
    expect(
      await valueAt(
        `SELECT forecast AS v FROM model_outputs WHERE site_id = 's1' AND epoch_ms(valid_time) = ${T0 + 2 * H}`,
      ),
    ).toBe(20);
    expect(await loadModelOutputs(warehouse, 's2', [output([1, 2, 3, 4, 2]), output([5, 6, 7, 8, 9])])).toEqual({
      model_outputs: 4,
    });
    const s2 = await warehouse.all<{ forecast: number }>(
      "SELECT forecast FROM model_outputs WHERE site_id = 's2' ORDER BY valid_time",
    );
    expect(s2.map((r) => r.forecast)).toEqual([5, 9, 7, 8]);
    expect(await loadModelOutputs(warehouse, 's1', [output([1, 2, 3, 4, 20])])).toEqual({});
    expect(await loadModelOutputs(warehouse, 's1', [output(FIRST)])).toEqual({});
  });
});

const model = (priority: number): SiteModel => ({
  ...ModelItem.parse({
    id: 'm-shared',
    name: 'ai',
    label: 'ai',
    version: 1,
    priority,
    output_types: ['forecast'],
    state: [{ state: 'complete', timestamp_utc: iso(T0) }],
    schedule: { type: 'cron', value: '0 */6 * * *' },
    serving_active: true,
  }),
  model_type: 'ai',
});

describe('a model id listed under two sites', () => {
  it('keeps a row under each site, with its own states and settings history, and a rerun writes nothing', async () => {
    const listings = [modelRows('site-a', model(1)), modelRows('site-b', model(3))];
    expect(await loadModels(warehouse, listings, { now: T0 })).toEqual({
      models: 2,
      model_states: 2,
      model_settings_history: 2,
    });
    expect(await loadModels(warehouse, listings, { now: T0 + H })).toEqual({});
    const rows = await warehouse.all<{ site_id: string; priority: number; states: number; history: number }>(
      `SELECT site_id, priority,
         (SELECT count(*) FROM model_states s WHERE s.site_id = m.site_id AND s.model_id = m.model_id)::INTEGER AS states,
         (SELECT count(*) FROM model_settings_history h WHERE h.site_id = m.site_id AND h.model_id = m.model_id)::INTEGER AS history
       FROM models m ORDER BY site_id`,
    );
    expect(rows).toEqual([
      { site_id: 'site-a', priority: 1, states: 1, history: 1 },
      { site_id: 'site-b', priority: 3, states: 1, history: 1 },
    ]);
  });
});

describe('migration 020 on a warehouse made before it', () => {
  it('moves models, states and settings history over under the one site each model had', async () => {
    const path = join(dir, 'before.duckdb');
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    await applyMigrations(
      connection,
      listMigrations().filter((migration) => migration.version < 20),
    );
    await connection.run(`
      INSERT INTO models (model_id, site_id, name, label, version, priority, synced_at)
        VALUES ('m-1', 'site-a', 'ai', 'ai', 1, 1, TIMESTAMPTZ '2026-11-01 00:00:00+00');
      INSERT INTO model_states VALUES ('m-1', 'complete', TIMESTAMPTZ '2026-11-01 00:00:00+00', '{}');
      INSERT INTO model_settings_history VALUES ('m-1', TIMESTAMPTZ '2026-11-01 00:00:00+00', 1, true);`);
    connection.closeSync();
    instance.closeSync();

    const opened = await Warehouse.open({ path });
    try {
      expect(await opened.all('SELECT model_id, site_id FROM models')).toEqual([
        { model_id: 'm-1', site_id: 'site-a' },
      ]);
      expect(await opened.all('SELECT site_id, model_id, state FROM model_states')).toEqual([
        { site_id: 'site-a', model_id: 'm-1', state: 'complete' },
      ]);
      expect(await opened.all('SELECT site_id, model_id, priority FROM model_settings_history')).toEqual([
        { site_id: 'site-a', model_id: 'm-1', priority: 1 },
      ]);
      // The same id listed under another site now gets its own rows beside the migrated ones.
      await loadModels(opened, [modelRows('site-b', { ...model(2), id: 'm-1' })], { now: T0 });
      const sites = await opened.all<{ site_id: string }>('SELECT site_id FROM models ORDER BY site_id');
      expect(sites.map((r) => r.site_id)).toEqual(['site-a', 'site-b']);
    } finally {
      await opened.close();
    }
  });
});
