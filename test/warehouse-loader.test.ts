import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_QUALITY, openTempWarehouse, removeWarehouse } from './warehouse-support.js';
import { ModelItem, SiteResponse } from '../src/api/schemas.js';
import { formatInstant as iso } from '../src/time.js';
import {
  addRows,
  loadActuals,
  loadForecasts,
  loadModelOutputs,
  loadModels,
  loadSites,
} from '../src/warehouse/loader.js';
import type { ForecastColumns, SiteRows } from '../src/warehouse/rows.js';
import { modelRows, siteRows, type SiteModel } from '../src/sync/normalize.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';

const H = 3_600_000;
const T0 = Date.UTC(2026, 10, 1);
const DAY_MS = 24 * H;

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  ({ dir, warehouse } = await openTempWarehouse('efsync-loader-'));
});
afterEach(() => removeWarehouse(warehouse, dir));

/** A forecast vintage issued at `issued` for 24 hourly points, values from `value(hour)`. */
function vintage(issued: number, value: (hour: number) => number | null, model = 'ensemble'): ForecastColumns {
  const hours = Array.from({ length: 24 }, (_, h) => h + 1);
  return {
    valid_time: hours.map((h) => issued + h * H),
    forecast: hours.map(value),
    capacity: hours.map(() => 1000),
    model_name: hours.map(() => model),
    model_version: hours.map(() => 3),
    update_time: hours.map(() => issued),
  };
}

/** A sync state the database refuses (run_id is NOT NULL), to make a merge fail mid-transaction. */
const brokenSyncState = { syncState: { resource: 'forecasts', syncedTo: T0, runId: null as unknown as string } };

/** Every row of a table, in a stable order, as text: for comparing whole tables. */
async function snapshot(table: string): Promise<string> {
  const rows = await warehouse.all(`SELECT * FROM ${table} ORDER BY ALL`);
  return JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
}

describe('forecasts', () => {
  it('inserts a vintage, and a rerun writes 0 rows and leaves the table identical', async () => {
    const first = await loadForecasts(
      warehouse,
      's1',
      vintage(T0, (h) => h * 10),
    );
    expect(first).toEqual({ forecasts: 24 });
    const before = await snapshot('forecasts');
    expect(
      await loadForecasts(
        warehouse,
        's1',
        vintage(T0, (h) => h * 10),
      ),
    ).toEqual({});
    expect(await snapshot('forecasts')).toBe(before);
  });

  it('keeps every vintage and never overwrites an older one', async () => {
    await loadForecasts(
      warehouse,
      's1',
      vintage(T0, () => 1),
    );
    await loadForecasts(
      warehouse,
      's1',
      vintage(T0 + 6 * H, () => 2),
    );
    // The service now answers the first vintage with other values: the stored one stays.
    expect(
      await loadForecasts(
        warehouse,
        's1',
        vintage(T0, () => 99),
      ),
    ).toEqual({});
    const rows = await warehouse.all<{ update_time: Date; n: bigint; total: number }>(
      'SELECT update_time, count(*) AS n, sum(forecast) AS total FROM forecasts GROUP BY 1 ORDER BY 1',
    );
    expect(rows.map((r) => [r.update_time.getTime(), Number(r.n), r.total])).toEqual([
      [T0, 24, 24],
      [T0 + 6 * H, 24, 48],
    ]);
  });

  it('keeps sites apart and stores instants exactly', async () => {
    await loadForecasts(
      warehouse,
      's1',
      vintage(T0 + 123, () => 1),
    );
    await loadForecasts(
      warehouse,
      's2',
      vintage(T0 + 123, () => 1),
    );
    const [row] = await warehouse.all<{ n: bigint; first: Date }>(
      "SELECT count(*) AS n, min(valid_time) AS first FROM forecasts WHERE site_id = 's2'",
    );
    expect(Number(row.n)).toBe(24);
    expect(row.first.getTime()).toBe(T0 + 123 + H);
  });

  it('stores a read holding several vintages row by row, and a vintage read twice once', async () => {
    const a = vintage(T0, () => 1);
    const b = vintage(T0 + 6 * H, () => 2, 'other');
    // a's first 12 hours, all of b, then a's last 12: three runs of one vintage each
    const spliced = (x: ArrayLike<unknown>, y: ArrayLike<unknown>) => [
      ...Array.from(x).slice(0, 12),
      ...Array.from(y),
      ...Array.from(x).slice(12),
    ];
    const mixed = Object.fromEntries(
      Object.keys(a).map((key) => [key, spliced(a[key as keyof ForecastColumns], b[key as keyof ForecastColumns])]),
    ) as unknown as ForecastColumns;
    expect(await loadForecasts(warehouse, 's1', [mixed, a])).toEqual({ forecasts: 48 });
    const rows = await warehouse.all<{ model_name: string; update_time: Date; n: bigint; total: number }>(
      'SELECT model_name, update_time, count(*) AS n, sum(forecast) AS total FROM forecasts GROUP BY 1, 2 ORDER BY 2',
    );
    expect(rows.map((r) => [r.model_name, r.update_time.getTime(), Number(r.n), r.total])).toEqual([
      ['ensemble', T0, 24, 24],
      ['other', T0 + 6 * H, 24, 48],
    ]);
  });

  it('stores each key once when an older read returns other valid times of a vintage the newest read holds in part', async () => {
    const a = vintage(T0, () => 1);
    const b = vintage(T0 + H, () => 2);
    const c = vintage(T0 - H, () => 3);
    const rows = (read: ForecastColumns, from: number, to: number) =>
      Object.fromEntries(
        Object.entries(read).map(([key, column]) => [key, Array.from(column as ArrayLike<unknown>).slice(from, to)]),
      ) as unknown as ForecastColumns;
    // the newest read: b's first 23 valid times, then a's last (the one b does not reach)
    expect(await loadForecasts(warehouse, 's1', [rows(b, 0, 23), rows(a, 23, 24)])).toEqual({ forecasts: 24 });
    // the older reads: a's other valid times (new) and its last again (stored), and all of c
    const older = [rows(a, 0, 23), rows(a, 22, 24), c];
    expect(await loadForecasts(warehouse, 's1', older)).toEqual({ forecasts: 23 + 24 });
    expect(await loadForecasts(warehouse, 's1', older)).toEqual({});
    const [{ n, keys }] = await warehouse.all<{ n: bigint; keys: bigint }>(
      'SELECT count(*) AS n, count(DISTINCT (update_time, valid_time)) AS keys FROM forecasts',
    );
    expect([Number(n), Number(keys)]).toEqual([71, 71]);
  });

  it('stores a valid time a read repeats once, and the same vintage of two sites for each', async () => {
    const a = vintage(T0, () => 1);
    const repeated = Object.fromEntries(
      Object.entries(a).map(([key, column]) => [key, [...Array.from(column as ArrayLike<unknown>), column[23]]]),
    ) as unknown as ForecastColumns;
    const [first, second] = await Promise.all([
      loadForecasts(warehouse, 's1', repeated),
      loadForecasts(warehouse, 's2', a),
    ]);
    expect([first, second]).toEqual([{ forecasts: 24 }, { forecasts: 24 }]);
    expect(await loadForecasts(warehouse, 's1', repeated)).toEqual({});
  });

  it('takes a parsed response as it is, extra fields and all', async () => {
    const response = { ...vintage(T0, () => 1), note: 'a field the service added' };
    expect(await loadForecasts(warehouse, 's1', response)).toEqual({ forecasts: 24 });
  });

  it('refuses columns of different lengths, naming the column', async () => {
    const columns = { ...vintage(T0, () => 1), forecast: [1, 2] };
    await expect(loadForecasts(warehouse, 's1', columns)).rejects.toThrow(
      /forecast has 2 values where valid_time has 24/,
    );
  });

  it('a merge failing mid-transaction leaves nothing half-written', async () => {
    // The sync-state upsert runs after the forecasts are merged; a NULL run id violates its
    // NOT NULL constraint, so the transaction fails with the forecast rows already inserted.
    await expect(
      loadForecasts(
        warehouse,
        's1',
        vintage(T0, () => 1),
        brokenSyncState,
      ),
    ).rejects.toThrow(/run_id/);
    expect(await warehouse.all('SELECT * FROM forecasts')).toEqual([]);
    expect(await warehouse.all('SELECT * FROM sync_state')).toEqual([]);
  });

  it('a value that cannot be staged fails the load before anything is written', async () => {
    const columns = {
      ...vintage(T0, () => 1),
      model_version: Array.from(vintage(T0, () => 1).model_version, () => 2 ** 40),
    };
    await expect(loadForecasts(warehouse, 's1', columns)).rejects.toThrow();
    expect(await warehouse.all('SELECT * FROM forecasts')).toEqual([]);
  });
});

describe('sync state', () => {
  it('is written with the data, only moves forward, and not at all on a rerun', async () => {
    const state = (syncedTo: number) => ({ syncState: { resource: 'forecasts', syncedTo, runId: 'r1' } });
    const loadDay = () =>
      loadForecasts(
        warehouse,
        's1',
        vintage(T0, () => 1),
        state(T0 + 24 * H),
      );
    expect(await loadDay()).toEqual({ forecasts: 24, sync_state: 1 });
    expect(await loadDay()).toEqual({});
    // A backfill of an older window keeps the incremental cursor where it was.
    expect(
      await loadForecasts(
        warehouse,
        's1',
        vintage(T0 - 48 * H, () => 1),
        state(T0 - 24 * H),
      ),
    ).toEqual({
      forecasts: 24,
    });
    const [row] = await warehouse.all<{ synced_to: Date }>('SELECT synced_to FROM sync_state');
    expect(row.synced_to.getTime()).toBe(T0 + 24 * H);
  });

  it('is rolled back with the data when another load in the queue fails', async () => {
    const results = await Promise.allSettled([
      loadForecasts(
        warehouse,
        's1',
        vintage(T0, () => 1),
        { syncState: { resource: 'forecasts', syncedTo: T0, runId: 'r' } },
      ),
      loadForecasts(
        warehouse,
        's2',
        vintage(T0, () => 1),
        brokenSyncState,
      ),
      loadForecasts(
        warehouse,
        's3',
        vintage(T0, () => 1),
        { syncState: { resource: 'forecasts', syncedTo: T0, runId: 'r' } },
      ),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const sites = await warehouse.all<{ site_id: string; n: bigint }>(
      'SELECT site_id, count(*) AS n FROM forecasts GROUP BY 1 ORDER BY 1',
    );
    expect(sites.map((s) => [s.site_id, Number(s.n)])).toEqual([
      ['s1', 24],
      ['s3', 24],
    ]);
    const states = await warehouse.all<{ site_id: string }>('SELECT site_id FROM sync_state ORDER BY 1');
    expect(states.map((s) => s.site_id)).toEqual(['s1', 's3']);
  });
});

describe('concurrent loads', () => {
  it("each call reports its own site's rows, whether merged alone or with others", async () => {
    const sizes = [24, 12, 6, 3];
    const slice = (columns: ForecastColumns, n: number): ForecastColumns =>
      Object.fromEntries(
        Object.entries(columns).map(([k, v]) => [k, Array.from(v).slice(0, n)]),
      ) as unknown as ForecastColumns;
    const loads = sizes.map((n, i) =>
      loadForecasts(
        warehouse,
        `s${i}`,
        slice(
          vintage(T0, () => 1),
          n,
        ),
      ),
    );
    expect(await Promise.all(loads)).toEqual(sizes.map((n) => ({ forecasts: n })));

    const actuals = (value: number) => ({ valid_time: [T0, T0 + H], value: [value, value] });
    await Promise.all(
      ['a', 'b', 'c'].map((site) => loadActuals(warehouse, site, actuals(1), { now: T0, quality: DEFAULT_QUALITY })),
    );
    const revised = await Promise.all([
      loadActuals(warehouse, 'a', actuals(1), { now: T0 + H, quality: DEFAULT_QUALITY }),
      loadActuals(warehouse, 'b', actuals(2), { now: T0 + H, quality: DEFAULT_QUALITY }),
      loadActuals(
        warehouse,
        'c',
        { valid_time: [T0, T0 + H, T0 + 2 * H], value: [1, 3, 3] },
        { now: T0 + 2 * H, quality: DEFAULT_QUALITY },
      ),
    ]);
    expect(revised).toEqual([{}, { actuals: 2, actual_revisions: 2 }, { actuals: 2, actual_revisions: 1 }]);
    const [c] = await warehouse.all<{ revised_at: Date }>(
      "SELECT revised_at FROM actuals WHERE site_id = 'c' AND revised_at IS NOT NULL",
    );
    expect(c.revised_at.getTime()).toBe(T0 + 2 * H);
  });

  it('loads of every kind at once: each call gets its own rows and its own sync state, and a rerun writes nothing', async () => {
    const mark = (resource: string) => ({ now: T0, syncState: { resource, syncedTo: T0 + DAY_MS, runId: 'r1' } });
    const loadAll = () =>
      Promise.all(
        ['a', 'b'].flatMap((site) => [
          loadForecasts(
            warehouse,
            site,
            vintage(T0, () => 1),
            mark('forecasts'),
          ),
          loadModelOutputs(
            warehouse,
            site,
            [
              {
                model_id: `${site}-m1`,
                model_name: 'gbm',
                model_version: 1,
                as_of: T0,
                valid_time: [T0 + H, T0 + 2 * H],
                forecast: [1, 2],
                capacity: [5, 5],
              },
            ],
            mark('outputs'),
          ),
          loadActuals(
            warehouse,
            site,
            { valid_time: [T0, T0 + H, T0 + 2 * H], value: [1, 2, 3] },
            { ...mark('actuals'), quality: DEFAULT_QUALITY },
          ),
        ]),
      );
    expect(await loadAll()).toEqual(
      ['a', 'b'].flatMap(() => [
        { forecasts: 24, sync_state: 1 },
        { model_outputs: 2, sync_state: 1 },
        { actuals: 3, sync_state: 1 },
      ]),
    );
    const outputs = await warehouse.all<{ site_id: string; model_id: string; model_name: string; n: bigint }>(
      'SELECT site_id, model_id, model_name, count(*) AS n FROM model_outputs GROUP BY ALL ORDER BY ALL',
    );
    expect(outputs.map((o) => [o.site_id, o.model_id, o.model_name, Number(o.n)])).toEqual([
      ['a', 'a-m1', 'gbm', 2],
      ['b', 'b-m1', 'gbm', 2],
    ]);
    const states = await warehouse.all<{ n: bigint }>('SELECT count(*) AS n FROM sync_state');
    expect(Number(states[0].n)).toBe(6);
    expect(await loadAll()).toEqual(Array.from({ length: 6 }, () => ({})));
  });
});

describe('model outputs', () => {
  const output = (modelId: string, asOf: number, value: number) => ({
    model_id: modelId,
    model_name: 'gbm',
    model_version: 2,
    as_of: asOf,
    valid_time: [asOf + H, asOf + 2 * H, asOf + 3 * H],
    forecast: [value, value, null],
    capacity: [500, 500, 500],
  });

  it('inserts new (model, as_of, valid_time) keys only', async () => {
    expect(await loadModelOutputs(warehouse, 's1', [output('m1', T0, 1), output('m2', T0, 1)])).toEqual({
      model_outputs: 6,
    });
    const before = await snapshot('model_outputs');
    expect(await loadModelOutputs(warehouse, 's1', [output('m1', T0, 5), output('m2', T0, 5)])).toEqual({});
    expect(await snapshot('model_outputs')).toBe(before);
    expect(await loadModelOutputs(warehouse, 's1', [output('m1', T0 + 24 * H, 1)])).toEqual({ model_outputs: 3 });
  });

  it('stores a valid time a vintage repeats once', async () => {
    const once = output('m1', T0, 1);
    const repeated = { ...once, valid_time: [...once.valid_time, once.valid_time[0]], forecast: [1, 1, null, 7] };
    const withCapacity = { ...repeated, capacity: [500, 500, 500, 500] };
    expect(await loadModelOutputs(warehouse, 's1', [withCapacity])).toEqual({ model_outputs: 3 });
    expect(await loadModelOutputs(warehouse, 's1', [withCapacity])).toEqual({});
  });

  it('stores a vintage read in two parts whole, and a rerun of it, in parts or whole, writes nothing', async () => {
    const whole = output('m1', T0, 1);
    const part = (from: number, to: number) => ({
      ...whole,
      valid_time: whole.valid_time.slice(from, to),
      forecast: whole.forecast.slice(from, to),
      capacity: whole.capacity.slice(from, to),
    });
    expect(await loadModelOutputs(warehouse, 's1', [part(0, 2), part(2, 3)])).toEqual({ model_outputs: 3 });
    expect(await loadModelOutputs(warehouse, 's1', [part(2, 3), part(0, 2)])).toEqual({});
    expect(await loadModelOutputs(warehouse, 's1', [whole])).toEqual({});
  });

  it('stores a vintage read twice in one load once', async () => {
    const twice = [output('m1', T0, 1), output('m1', T0, 1), output('m2', T0, 1)];
    expect(await loadModelOutputs(warehouse, 's1', twice)).toEqual({ model_outputs: 6 });
    const rows = await warehouse.all<{ model_id: string; n: bigint }>(
      'SELECT model_id, count(*) AS n FROM model_outputs GROUP BY ALL ORDER BY ALL',
    );
    expect(rows.map((r) => [r.model_id, Number(r.n)])).toEqual([
      ['m1', 3],
      ['m2', 3],
    ]);
  });
});

describe('actuals', () => {
  const actuals = (values: (number | null)[]) => ({
    valid_time: values.map((_, i) => T0 + i * H),
    value: values,
  });

  it('inserts new points, revises changed ones keeping the revision, and ignores unchanged ones', async () => {
    expect(
      await loadActuals(warehouse, 's1', actuals([1, 2, null]), { now: T0 + 10 * H, quality: DEFAULT_QUALITY }),
    ).toEqual({ actuals: 3 });
    const before = await snapshot('actuals');
    expect(
      await loadActuals(warehouse, 's1', actuals([1, 2, null]), { now: T0 + 11 * H, quality: DEFAULT_QUALITY }),
    ).toEqual({});
    expect(await snapshot('actuals')).toBe(before);

    const revised = await loadActuals(warehouse, 's1', actuals([1, 2.5, 3, 4]), {
      now: T0 + 12 * H,
      quality: DEFAULT_QUALITY,
    });
    expect(revised).toEqual({ actuals: 3, actual_revisions: 2 });
    const rows = await warehouse.all<{ value: number | null; first_seen_at: Date; revised_at: Date | null }>(
      'SELECT value, first_seen_at, revised_at FROM actuals ORDER BY valid_time',
    );
    expect(rows.map((r) => [r.value, r.first_seen_at.getTime(), r.revised_at?.getTime() ?? null])).toEqual([
      [1, T0 + 10 * H, null],
      [2.5, T0 + 10 * H, T0 + 12 * H],
      [3, T0 + 10 * H, T0 + 12 * H],
      [4, T0 + 12 * H, null],
    ]);
    const revisions = await warehouse.all<{ valid_time: Date; old_value: number | null; new_value: number }>(
      'SELECT valid_time, old_value, new_value FROM actual_revisions ORDER BY valid_time',
    );
    expect(revisions.map((r) => [r.valid_time.getTime(), r.old_value, r.new_value])).toEqual([
      [T0 + H, 2, 2.5],
      [T0 + 2 * H, null, 3],
    ]);
    // The revised values are now the stored ones: loading them again writes nothing.
    expect(
      await loadActuals(warehouse, 's1', actuals([1, 2.5, 3, 4]), { now: T0 + 13 * H, quality: DEFAULT_QUALITY }),
    ).toEqual({});
  });
});

describe('sites and models', () => {
  const solar = (tilt: number): SiteResponse =>
    SiteResponse.parse({
      id: 'site-a',
      site_id: 'site-a',
      name: 'Roof',
      latitude: 59.3,
      longitude: 18.1,
      type: 'solar',
      creation_timestamp_utc: iso(T0),
      settings: { model_resolution: '15min' },
      assets: [
        { mount: 'fixed', capacity: 100, azimuth: 180, tilt, install_date: '2024-05-01' },
        { mount: 'dual_axis_tracking', capacity: 50 },
      ],
      capacity_kw_array: [
        { value: 150, dateStart: null, dateEnd: iso(T0) },
        { value: 120, dateStart: iso(T0), dateEnd: null },
      ],
    });
  // As the get-site-info guide shows a site: `id` only, no `site_id`; wind turbines as assets.
  const wind = SiteResponse.parse({
    id: 'site-b',
    name: 'Ridge',
    latitude: 57,
    longitude: 12,
    type: 'wind',
    creation_timestamp_utc: iso(T0).replace('Z', '.448761Z'),
    assets: [{ turbine_type: 'generic', nr_units: 3, hub_height: 100 }],
    capacity_kw_array: [{ value: 6000, dateEnd: null }],
    owner_note: 'kept',
  });

  it('upserts sites with assets and capacity, writing nothing on a rerun and only what changed after', async () => {
    expect(await loadSites(warehouse, [solar(30), wind].map(siteRows), { now: T0 })).toEqual({
      sites: 2,
      site_assets: 3,
      site_capacity: 3,
    });
    const tables = ['sites', 'site_assets', 'site_capacity'];
    const before = await Promise.all(tables.map(snapshot));
    expect(await loadSites(warehouse, [solar(30), wind].map(siteRows), { now: T0 + H })).toEqual({});
    expect(await Promise.all(tables.map(snapshot))).toEqual(before);

    expect(await loadSites(warehouse, [solar(35), wind].map(siteRows), { now: T0 + 2 * H })).toEqual({
      site_assets: 2,
    });
    const assets = await warehouse.all<{ asset_index: number; tilt: number | null; install_date: unknown }>(
      "SELECT asset_index, tilt FROM site_assets WHERE site_id = 'site-a' ORDER BY 1",
    );
    expect(assets.map((a) => a.tilt)).toEqual([35, null]);
    const [site] = await warehouse.all<{ nameplate_kw: number; details: string }>(
      "SELECT nameplate_kw, details FROM sites WHERE site_id = 'site-b'",
    );
    expect(site.nameplate_kw).toBe(6000);
    expect(JSON.parse(site.details)).toEqual({ owner_note: 'kept' });
  });

  it('leaves out of a load the sites given the rows they were last loaded with, whatever table changed', async () => {
    await loadSites(warehouse, [solar(30), wind].map(siteRows), { now: T0 });
    const digests = () =>
      warehouse.all<{ site_id: string; digest: string }>(
        "SELECT site_id, digest FROM reference_digests WHERE resource = 'sites' ORDER BY site_id",
      );
    const first = await digests();
    expect(first.map((row) => row.site_id)).toEqual(['site-a', 'site-b']);

    // Only an asset of site-a changed: site-b is not even staged, and only site-a's digest moves.
    expect(await loadSites(warehouse, [solar(35), wind].map(siteRows), { now: T0 + H })).toEqual({ site_assets: 2 });
    expect(await warehouse.all('SELECT site_id FROM temp.sites_in')).toEqual([{ site_id: 'site-a' }]);
    const second = await digests();
    expect(second[0].digest).not.toBe(first[0].digest);
    expect(second[1]).toEqual(first[1]);

    // Back to the first rows: a change again, written, not mistaken for the digest stored before.
    expect(await loadSites(warehouse, [solar(30), wind].map(siteRows), { now: T0 + 2 * H })).toEqual({
      site_assets: 2,
    });
    expect(await digests()).toEqual(first);
  });

  it('stages the columns the migrated schema gives a reference table, a column added later too', async () => {
    await warehouse.run('ALTER TABLE sites ADD COLUMN region VARCHAR');
    const rows = siteRows(wind);
    const site = { ...rows.site, region: 'north' } as SiteRows['site'];
    expect(await loadSites(warehouse, [{ ...rows, site }], { now: T0 })).toMatchObject({ sites: 1 });
    expect(await warehouse.all('SELECT site_id, region FROM sites')).toEqual([{ site_id: 'site-b', region: 'north' }]);
  });

  const model = (priority: number, states: { state: string; timestamp_utc: number }[]): SiteModel => ({
    ...ModelItem.parse({
      id: 'm-1',
      name: 'quantile_p10',
      label: 'q10',
      version: 1,
      priority,
      output_types: ['forecast'],
      state: states.map((entry) => ({ ...entry, timestamp_utc: iso(entry.timestamp_utc) })),
      schedule: { type: 'cron', value: '0 */6 * * *' },
      serving_active: true,
    }),
    model_type: 'ai',
  });

  it('upserts models, appends new states, and records settings only when they change', async () => {
    const trained = [
      { state: 'queued', timestamp_utc: T0 },
      { state: 'complete', timestamp_utc: T0 + H },
    ];
    const total = {};
    addRows(total, await loadModels(warehouse, [modelRows('site-a', model(1, trained))], { now: T0 }));
    expect(total).toEqual({ models: 1, model_states: 2, model_settings_history: 1 });
    expect(await loadModels(warehouse, [modelRows('site-a', model(1, trained))], { now: T0 + H })).toEqual({});

    const retrained = [...trained, { state: 'training', timestamp_utc: T0 + 5 * H }];
    expect(await loadModels(warehouse, [modelRows('site-a', model(2, retrained))], { now: T0 + 6 * H })).toEqual({
      models: 1,
      model_states: 1,
      model_settings_history: 1,
    });
    const [row] = await warehouse.all<{
      quantile: number;
      latest_state: string;
      output_types: string[];
      priority: number;
    }>('SELECT quantile, latest_state, output_types, priority FROM models');
    expect(row).toEqual({ quantile: 0.1, latest_state: 'training', output_types: ['forecast'], priority: 2 });
    const history = await warehouse.all<{ priority: number }>(
      'SELECT priority FROM model_settings_history ORDER BY observed_at',
    );
    expect(history.map((h) => h.priority)).toEqual([1, 2]);

    // A new training state is a change of the site: its entry appended.
    const done = [...retrained, { state: 'complete', timestamp_utc: T0 + 7 * H }];
    expect(await loadModels(warehouse, [modelRows('site-a', model(2, done))], { now: T0 + 8 * H })).toMatchObject({
      model_states: 1,
    });
  });
});
