/**
 * The bulk loader: the service's columns go straight into DuckDB data chunks, into TEMP staging
 * tables, and are merged into the core tables in ONE transaction per site and resource, so a
 * reader of the published snapshot never sees half a site and a rerun of the same window changes
 * nothing (and reports 0 rows written).
 *
 * API (instants are epoch ms UTC; columns are parallel arrays of equal length, exactly the
 * `z.output` shapes of src/api/schemas.ts, so parsed responses can be passed as they are):
 *
 *   loadSites(warehouse, sites: SiteResponse[], options?)                      → RowsWritten
 *     Upserts `sites` (only when a field changed), replaces the site's `site_assets` and
 *     `site_capacity` segments only when they differ. One transaction per site.
 *   loadModels(warehouse, siteId, models: SiteModel[], options?)               → RowsWritten
 *     Upserts `models` (only when something changed), appends new `model_states` entries, and a
 *     `model_settings_history` row when priority or serving_active differs from the last one.
 *     `SiteModel` is a parsed ModelItem plus `model_type` ('ai' | 'physical' | null) when known.
 *   loadForecasts(warehouse, siteId, columns: ForecastColumns, options?)       → RowsWritten
 *     Inserts the rows whose (site_id, model_name, model_version, update_time, valid_time) is new;
 *     an existing vintage is never overwritten.
 *   loadModelOutputs(warehouse, siteId, outputs: ModelOutputColumns[], options?) → RowsWritten
 *     Inserts new (model_id, as_of, valid_time); all the given outputs of the site in one transaction.
 *   loadActuals(warehouse, siteId, columns: ActualColumns, options?)           → RowsWritten
 *     Inserts new (site_id, valid_time) with first_seen_at = now; where a value changed
 *     (IS DISTINCT FROM) writes an `actual_revisions` row (old, new, replaced_at = now) and updates
 *     value and revised_at. Unchanged points write nothing.
 *   saveSyncState(warehouse, siteId, state: SyncStateUpdate, options?)         → RowsWritten
 *     The sync_state upsert on its own (the load functions do it inside their transaction when
 *     given `options.syncState`, which is what a sync should use).
 *
 * options: { now?: number (default Date.now(); stamps synced_at, first_seen_at, replaced_at, ...),
 *            syncState?: SyncStateUpdate (written in the same transaction as the data) }
 * SyncStateUpdate: { resource: 'forecasts' | 'outputs' | 'actuals' | string, syncedTo: number,
 *            lastAsOf?: number | null, runId: string }. synced_to and last_as_of never move back
 *            (a --from/--to backfill of an older window keeps the incremental cursor), and the row
 *            is written only when one of them advances.
 * RowsWritten: { [table]: rows inserted + updated } with only non-zero tables, e.g.
 *            { forecasts: 5376, sync_state: 1 }; sum several with `addRows(total, part)`.
 *
 * Loads on one Warehouse are serialised (Warehouse.exclusive): callers may run them concurrently
 * (p-limit over sites) and each still lands as its own transaction. A failure rolls back that
 * site's load alone and rethrows.
 */
import { DOUBLE, DuckDBDataChunk, INTEGER, VARCHAR, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';
import type { ModelItem, SiteResponse } from '../api/schemas.js';
import {
  ACTUAL_MERGE,
  FORECAST_MERGE,
  OUTPUT_MERGE,
  SETTINGS_HISTORY_APPEND,
  STATES_APPEND,
  SYNC_STATE_UPSERT,
  changedGroupsSql,
  instant,
} from './merge.js';
import type { Warehouse } from './warehouse.js';

export interface LoadOptions {
  /** The clock for synced_at, first_seen_at, replaced_at, observed_at; default Date.now(). */
  now?: number;
  /** Written in the same transaction as the data. */
  syncState?: SyncStateUpdate;
}

export interface SyncStateUpdate {
  resource: 'forecasts' | 'outputs' | 'actuals' | (string & {});
  /** End of the window synced (valid time, epoch ms). */
  syncedTo: number;
  /** Newest as_of vintage read, for resources read by vintage. */
  lastAsOf?: number | null;
  runId: string;
}

/** Rows inserted plus rows updated, per table; tables with 0 are left out. */
export type RowsWritten = Record<string, number>;

export interface ForecastColumns {
  valid_time: readonly number[];
  forecast: readonly (number | null)[];
  capacity: readonly (number | null)[];
  model_name: readonly string[];
  model_version: readonly number[];
  update_time: readonly number[];
}

export interface ModelOutputColumns {
  model_id: string;
  model_name: string;
  model_version: number;
  /** Issue time of the vintage the service returned. */
  as_of: number;
  valid_time: readonly number[];
  forecast: readonly (number | null)[];
  capacity: readonly (number | null)[];
}

export interface ActualColumns {
  valid_time: readonly number[];
  value: readonly (number | null)[];
}

export type SiteModel = ModelItem & { model_type?: 'ai' | 'physical' | null };

export type { SiteResponse };


// ---------------------------------------------------------------- results

/** Adds `part` into `total` (in place) and returns `total`. */
export function addRows(total: RowsWritten, part: RowsWritten): RowsWritten {
  for (const [table, rows] of Object.entries(part)) {
    if (rows > 0) total[table] = (total[table] ?? 0) + rows;
  }
  return total;
}

function count(rows: RowsWritten, table: string, written: number): void {
  if (written > 0) rows[table] = (rows[table] ?? 0) + written;
}

// ---------------------------------------------------------------- staging

/** DuckDB's vector size: a data chunk holds at most this many rows. */
const CHUNK_ROWS = 2048;

/**
 * A staged column: instants travel as DOUBLE epoch ms (exact for whole milliseconds, and no BigInt
 * per value in JavaScript) and become TIMESTAMPTZ in the merge SQL.
 */
interface StageColumn {
  type: DuckDBType;
  /** The values, or one value repeated for every row. */
  values: readonly (string | number | null)[] | { constant: string | number };
}

const STAGING_TABLES: Record<string, string> = {
  stage_forecasts:
    'model_name VARCHAR, model_version INTEGER, update_time DOUBLE, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE',
  stage_outputs:
    'model_id VARCHAR, model_name VARCHAR, model_version INTEGER, as_of DOUBLE, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE',
  stage_actuals: 'valid_time DOUBLE, value DOUBLE',
};

const stagingReady = new WeakSet<Warehouse>();

async function ensureStaging(warehouse: Warehouse): Promise<void> {
  if (stagingReady.has(warehouse)) return;
  for (const [name, columns] of Object.entries(STAGING_TABLES)) {
    await warehouse.run(`CREATE TEMP TABLE IF NOT EXISTS ${name} (${columns})`);
  }
  stagingReady.add(warehouse);
}

/** Appends `rows` rows of `columns` to staging table `table` through data chunks. */
async function appendColumns(warehouse: Warehouse, table: string, rows: number, columns: StageColumn[]): Promise<void> {
  if (rows === 0) return;
  const appender = await warehouse.connection.createAppender(table, 'main', 'temp');
  try {
    const types = columns.map((c) => c.type);
    for (let offset = 0; offset < rows; offset += CHUNK_ROWS) {
      const size = Math.min(CHUNK_ROWS, rows - offset);
      const chunk = DuckDBDataChunk.create(types, size);
      columns.forEach((column, index) => fillVector(chunk, index, column, offset, size));
      appender.appendDataChunk(chunk);
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

function fillVector(chunk: DuckDBDataChunk, index: number, column: StageColumn, offset: number, size: number): void {
  const vector = chunk.getColumnVector(index);
  const values = column.values;
  if ('constant' in values) {
    for (let row = 0; row < size; row++) vector.setItem(row, values.constant as DuckDBValue);
  } else {
    for (let row = 0; row < size; row++) vector.setItem(row, values[offset + row] as DuckDBValue);
  }
  vector.flush();
}

function checkLengths(what: string, columns: Record<string, readonly unknown[]>): number {
  const entries = Object.entries(columns);
  const [firstName, first] = entries[0];
  for (const [name, values] of entries.slice(1)) {
    if (values.length !== first.length) {
      throw new Error(`${what}: column ${name} has ${values.length} values where ${firstName} has ${first.length}`);
    }
  }
  return first.length;
}

/**
 * The frame of every series load: stage (outside the transaction: TEMP tables are private to
 * this connection), then merge and the sync state in one transaction, all while holding the
 * connection so no other load interleaves.
 */
async function loadSeries(
  warehouse: Warehouse,
  siteId: string,
  options: LoadOptions,
  stage: () => Promise<void>,
  merge: (now: number) => Promise<RowsWritten>,
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  return warehouse.exclusive(async () => {
    await ensureStaging(warehouse);
    for (const table of Object.keys(STAGING_TABLES)) await warehouse.run(`DELETE FROM temp.${table}`);
    await stage();
    return warehouse.transaction(async () => {
      const rows = await merge(now);
      if (options.syncState) addRows(rows, await writeSyncState(warehouse, siteId, options.syncState, now));
      return rows;
    });
  });
}

// ---------------------------------------------------------------- series

export async function loadForecasts(
  warehouse: Warehouse,
  siteId: string,
  columns: ForecastColumns,
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const rows = checkLengths(`forecasts of site ${siteId}`, { ...columns });
  return loadSeries(
    warehouse,
    siteId,
    options,
    () =>
      appendColumns(warehouse, 'stage_forecasts', rows, [
        { type: VARCHAR, values: columns.model_name },
        { type: INTEGER, values: columns.model_version },
        { type: DOUBLE, values: columns.update_time },
        { type: DOUBLE, values: columns.valid_time },
        { type: DOUBLE, values: columns.forecast },
        { type: DOUBLE, values: columns.capacity },
      ]),
    async () => ({ ...(rows > 0 && { forecasts: await warehouse.changed(FORECAST_MERGE, [siteId]) }) }),
  ).then(nonZero);
}

export async function loadModelOutputs(
  warehouse: Warehouse,
  siteId: string,
  outputs: readonly ModelOutputColumns[],
  options: LoadOptions = {},
): Promise<RowsWritten> {
  let rows = 0;
  for (const output of outputs) {
    rows += checkLengths(`output of model ${output.model_id} (site ${siteId})`, {
      valid_time: output.valid_time,
      forecast: output.forecast,
      capacity: output.capacity,
    });
  }
  return loadSeries(
    warehouse,
    siteId,
    options,
    async () => {
      for (const output of outputs) {
        await appendColumns(warehouse, 'stage_outputs', output.valid_time.length, [
          { type: VARCHAR, values: { constant: output.model_id } },
          { type: VARCHAR, values: { constant: output.model_name } },
          { type: INTEGER, values: { constant: output.model_version } },
          { type: DOUBLE, values: { constant: output.as_of } },
          { type: DOUBLE, values: output.valid_time },
          { type: DOUBLE, values: output.forecast },
          { type: DOUBLE, values: output.capacity },
        ]);
      }
    },
    async () => ({ ...(rows > 0 && { model_outputs: await warehouse.changed(OUTPUT_MERGE, [siteId]) }) }),
  ).then(nonZero);
}

export async function loadActuals(
  warehouse: Warehouse,
  siteId: string,
  columns: ActualColumns,
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const rows = checkLengths(`actuals of site ${siteId}`, { valid_time: columns.valid_time, value: columns.value });
  return loadSeries(
    warehouse,
    siteId,
    options,
    () =>
      appendColumns(warehouse, 'stage_actuals', rows, [
        { type: DOUBLE, values: columns.valid_time },
        { type: DOUBLE, values: columns.value },
      ]),
    async (now) => {
      const written: RowsWritten = {};
      if (rows === 0) return written;
      const params = [siteId, now];
      // Order matters: revisions are read before the update overwrites the old values.
      count(written, 'actual_revisions', await warehouse.changed(ACTUAL_MERGE.revisions, params));
      count(written, 'actuals', await warehouse.changed(ACTUAL_MERGE.update, params));
      count(written, 'actuals', await warehouse.changed(ACTUAL_MERGE.insert, params));
      return written;
    },
  );
}

function nonZero(rows: RowsWritten): RowsWritten {
  return Object.fromEntries(Object.entries(rows).filter(([, n]) => n > 0));
}

// ---------------------------------------------------------------- sync state

export async function saveSyncState(
  warehouse: Warehouse,
  siteId: string,
  state: SyncStateUpdate,
  options: { now?: number } = {},
): Promise<RowsWritten> {
  return warehouse.transaction(() => writeSyncState(warehouse, siteId, state, options.now ?? Date.now()));
}

async function writeSyncState(
  warehouse: Warehouse,
  siteId: string,
  state: SyncStateUpdate,
  now: number,
): Promise<RowsWritten> {
  const written = await warehouse.changed(SYNC_STATE_UPSERT, [
    siteId,
    state.resource,
    state.syncedTo,
    state.lastAsOf ?? null,
    now,
    state.runId,
  ]);
  return written > 0 ? { sync_state: written } : {};
}

// ---------------------------------------------------------------- sites and models

/** A column of a reference table: its SQL type, and whether it is left out of change detection. */
interface RefColumn {
  name: string;
  type: string;
  /** Instants come as epoch ms and are converted in SQL. */
  instant?: boolean;
  /** Bookkeeping (synced_at): a change here alone is no change. */
  bookkeeping?: boolean;
}

interface RefTable {
  table: string;
  columns: RefColumn[];
}

const col = (name: string, type: string, extra: Partial<RefColumn> = {}): RefColumn => ({ name, type, ...extra });

const SITES: RefTable = {
  table: 'sites',
  columns: [
    col('site_id', 'VARCHAR'), col('name', 'VARCHAR'), col('type', 'VARCHAR'), col('latitude', 'DOUBLE'),
    col('longitude', 'DOUBLE'), col('nameplate_kw', 'DOUBLE'), col('created_at', 'TIMESTAMPTZ', { instant: true }),
    col('settings', 'JSON'), col('details', 'JSON'), col('synced_at', 'TIMESTAMPTZ', { instant: true, bookkeeping: true }),
  ],
};

const SITE_ASSETS: RefTable = {
  table: 'site_assets',
  columns: [
    col('site_id', 'VARCHAR'), col('asset_index', 'INTEGER'), col('mount', 'VARCHAR'), col('capacity_kw', 'DOUBLE'),
    col('install_date', 'DATE'), col('azimuth', 'DOUBLE'), col('tilt', 'DOUBLE'), col('axis_tilt', 'DOUBLE'),
    col('axis_azimuth', 'DOUBLE'), col('max_angle', 'DOUBLE'), col('details', 'JSON'),
  ],
};

const SITE_CAPACITY: RefTable = {
  table: 'site_capacity',
  columns: [
    col('site_id', 'VARCHAR'), col('segment_index', 'INTEGER'), col('valid_from', 'TIMESTAMPTZ', { instant: true }),
    col('valid_to', 'TIMESTAMPTZ', { instant: true }), col('value_kw', 'DOUBLE'), col('details', 'JSON'),
  ],
};

const MODELS: RefTable = {
  table: 'models',
  columns: [
    col('model_id', 'VARCHAR'), col('site_id', 'VARCHAR'), col('name', 'VARCHAR'), col('label', 'VARCHAR'),
    col('version', 'INTEGER'), col('display_name', 'VARCHAR'), col('model_type', 'VARCHAR'), col('quantile', 'DOUBLE'),
    col('priority', 'INTEGER'), col('serving_active', 'BOOLEAN'), col('output_types', 'VARCHAR[]'),
    col('schedule_cron', 'VARCHAR'), col('latest_state', 'VARCHAR'),
    col('synced_at', 'TIMESTAMPTZ', { instant: true, bookkeeping: true }),
  ],
};

const MODEL_STATES: RefTable = {
  table: 'model_states',
  columns: [col('model_id', 'VARCHAR'), col('state', 'VARCHAR'), col('state_at', 'TIMESTAMPTZ', { instant: true }), col('details', 'JSON')],
};

const REF_TABLES = [SITES, SITE_ASSETS, SITE_CAPACITY, MODELS, MODEL_STATES];
/** Rows per multi-row INSERT when staging reference rows. */
const REF_BATCH = 200;

async function ensureRefStaging(warehouse: Warehouse): Promise<void> {
  for (const { table } of REF_TABLES) {
    await warehouse.run(`CREATE TEMP TABLE IF NOT EXISTS ${table}_in AS SELECT * FROM main.${table} LIMIT 0`);
    await warehouse.run(`DELETE FROM temp.${table}_in`);
  }
}

/** Stages rows (values in column order) into temp.<table>_in with a few multi-row INSERTs. */
async function stageRows(warehouse: Warehouse, spec: RefTable, rows: readonly (readonly unknown[])[]): Promise<void> {
  const width = spec.columns.length;
  for (let start = 0; start < rows.length; start += REF_BATCH) {
    const batch = rows.slice(start, start + REF_BATCH);
    const tuples = batch.map((_, r) => {
      const values = spec.columns.map((c, i) => {
        const placeholder = `$${r * width + i + 1}`;
        return castParam(placeholder, c);
      });
      return `(${values.join(', ')})`;
    });
    const names = spec.columns.map((c) => c.name).join(', ');
    const params = batch.flatMap((row) => row.map(toParam));
    await warehouse.run(`INSERT INTO temp.${spec.table}_in (${names}) VALUES ${tuples.join(', ')}`, params);
  }
}

/** Objects travel as JSON text; lists too (DuckDB casts a JSON array to a list). */
function castParam(placeholder: string, column: RefColumn): string {
  if (column.instant) return instant(placeholder);
  const json = `CAST(CAST(${placeholder} AS VARCHAR) AS JSON)`;
  if (column.type === 'JSON') return json;
  if (column.type.endsWith('[]')) return `CAST(${json} AS ${column.type})`;
  return `CAST(${placeholder} AS ${column.type})`;
}

function toParam(value: unknown): DuckDBValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'object') return JSON.stringify(value);
  return value as DuckDBValue;
}

/**
 * Rewrites the groups of `spec.table` whose staged rows differ from the stored ones (see
 * changedGroupsSql); returns the rows written (an update counts once).
 */
async function replaceChanged(warehouse: Warehouse, spec: RefTable, groupKey: string, scope: string): Promise<number> {
  const compared = spec.columns.filter((c) => !c.bookkeeping).map((c) => c.name);
  await warehouse.run(
    `CREATE OR REPLACE TEMP TABLE changed_groups AS ${changedGroupsSql(spec.table, groupKey, compared, scope)}`,
  );
  const changedKeys = `SELECT ${groupKey} FROM temp.changed_groups`;
  const deleted = await warehouse.changed(`DELETE FROM main.${spec.table} WHERE ${groupKey} IN (${changedKeys})`);
  const inserted = await warehouse.changed(
    `INSERT INTO main.${spec.table} SELECT * FROM temp.${spec.table}_in WHERE ${groupKey} IN (${changedKeys})`,
  );
  return Math.max(deleted, inserted);
}

/** Columns of the site response stored in their own columns or tables; the rest go to `details`. */
const SITE_COLUMNS = new Set(['id', 'site_id', 'name', 'type', 'latitude', 'longitude', 'creation_timestamp_utc', 'settings', 'assets', 'capacity_kw_array']);
const ASSET_COLUMNS = ['azimuth', 'tilt', 'axis_tilt', 'axis_azimuth', 'max_angle'] as const;

function nameplateKw(site: SiteResponse): number | null {
  if (site.type === 'solar') return site.assets.reduce((sum, asset) => sum + (asset.capacity ?? 0), 0);
  return site.capacity ?? null;
}

function siteRow(site: SiteResponse, now: number): unknown[] {
  const details = Object.fromEntries(Object.entries(site).filter(([key]) => !SITE_COLUMNS.has(key)));
  return [site.site_id, site.name, site.type, site.latitude, site.longitude, nameplateKw(site),
    site.creation_timestamp_utc, site.settings ?? null, details, now];
}

function assetRows(site: SiteResponse): unknown[][] {
  return site.assets.map((asset, index) => {
    const fields = asset as Record<string, unknown>;
    return [site.site_id, index, asset.mount ?? null, asset.capacity ?? null, fields.install_date ?? null,
      ...ASSET_COLUMNS.map((name) => fields[name] ?? null), asset];
  });
}

function capacityRows(site: SiteResponse): unknown[][] {
  return site.capacity_kw_array.map((segment, index) => [
    site.site_id, index, segment.dateStart ?? null, segment.dateEnd ?? null, segment.value, segment,
  ]);
}

/**
 * Upserts the given sites with their assets and capacity segments, in one transaction (so a
 * reader never sees a site without its assets). Sites not in the list are left alone.
 */
export async function loadSites(
  warehouse: Warehouse,
  sites: readonly SiteResponse[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  return warehouse.exclusive(async () => {
    await ensureRefStaging(warehouse);
    await stageRows(warehouse, SITES, sites.map((site) => siteRow(site, now)));
    await stageRows(warehouse, SITE_ASSETS, sites.flatMap(assetRows));
    await stageRows(warehouse, SITE_CAPACITY, sites.flatMap(capacityRows));
    const scope = 'SELECT site_id FROM temp.sites_in';
    return warehouse.transaction(async () => {
      const written: RowsWritten = {};
      count(written, 'sites', await replaceChanged(warehouse, SITES, 'site_id', scope));
      count(written, 'site_assets', await replaceChanged(warehouse, SITE_ASSETS, 'site_id', scope));
      count(written, 'site_capacity', await replaceChanged(warehouse, SITE_CAPACITY, 'site_id', scope));
      return written;
    });
  });
}

/** The quantile level of a model named quantile_p<percent>, else null. */
export function quantileOf(name: string): number | null {
  const match = /^quantile_p(\d+(?:\.\d+)?)$/.exec(name);
  return match ? Number(match[1]) / 100 : null;
}

function modelRow(siteId: string, model: SiteModel, now: number): unknown[] {
  const newest = model.state.reduce<ModelItem['state'][number] | undefined>(
    (best, entry) => (best === undefined || entry.timestamp_utc >= best.timestamp_utc ? entry : best),
    undefined,
  );
  return [model.id, siteId, model.name, model.label, model.version, model.display_name ?? null,
    model.model_type ?? null, quantileOf(model.name), model.priority, model.serving_active ?? null,
    model.output_types, model.schedule?.value ?? null, newest?.state ?? null, now];
}

/**
 * Upserts the site's models (only those that changed), appends their new state entries, and a
 * settings-history row for each model whose priority or serving_active differs from the last one
 * seen. Models missing from the list are kept (their outputs stay meaningful).
 */
export async function loadModels(
  warehouse: Warehouse,
  siteId: string,
  models: readonly SiteModel[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  return warehouse.exclusive(async () => {
    await ensureRefStaging(warehouse);
    await stageRows(warehouse, MODELS, models.map((model) => modelRow(siteId, model, now)));
    await stageRows(
      warehouse,
      MODEL_STATES,
      models.flatMap((model) => model.state.map((entry) => [model.id, entry.state, entry.timestamp_utc, entry])),
    );
    return warehouse.transaction(async () => {
      const written: RowsWritten = {};
      count(written, 'models', await replaceChanged(warehouse, MODELS, 'model_id', 'SELECT model_id FROM temp.models_in'));
      count(written, 'model_states', await warehouse.changed(STATES_APPEND));
      count(written, 'model_settings_history', await warehouse.changed(SETTINGS_HISTORY_APPEND, [now]));
      return written;
    });
  });
}
