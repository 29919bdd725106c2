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
 *   loadModelsOfSites(warehouse, [{ siteId, models }], options?)               → RowsWritten
 *     loadModels for many sites in one transaction (the same statements, so ~40 ms for 1 or 500).
 *   loadForecasts(warehouse, siteId, columns: ForecastColumns | ForecastColumns[], options?) → RowsWritten
 *     Inserts the rows whose (site_id, model_name, model_version, update_time, valid_time) is new;
 *     an existing vintage is never overwritten. Several reads of a site (an array) load together,
 *     without being concatenated first.
 *   loadModelOutputs(warehouse, siteId, outputs: ModelOutputColumns[], options?) → RowsWritten
 *     Inserts new (model_id, as_of, valid_time); all the given outputs of the site in one transaction.
 *   loadActuals(warehouse, siteId, columns: ActualColumns, options?)           → RowsWritten
 *     Inserts new (site_id, valid_time) with first_seen_at = now; where a value changed
 *     (IS DISTINCT FROM) writes an `actual_revisions` row (old, new, replaced_at = now) and updates
 *     value and revised_at. Unchanged points write nothing.
 *   loadTypedActuals(warehouse, siteId, type, columns: ActualColumns, options?) → RowsWritten
 *     The same for another actuals series than power, keyed (site_id, type, valid_time), into
 *     `actuals_by_type` and `actual_revisions_by_type`.
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
 * Series loads (forecasts, outputs, actuals) GROUP-COMMIT: call them concurrently (p-limit over
 * sites, WITHOUT wrapping them in warehouse.exclusive) and the loads that arrive while a merge
 * runs are merged together in the next transaction: whole sites only, so a reader never sees half
 * a site; a batch that fails is retried one site per transaction, so only the faulty site's call
 * rejects. Each call resolves, after its commit, with its own site's rows. A call made while
 * holding the connection (inside warehouse.exclusive/transaction) merges alone, at once.
 * For the fastest merges, start the sites in site_id order: rows then land clustered by site and
 * the merge's site filter skips the other sites' row groups by their min/max.
 */
import { DOUBLE, INTEGER, VARCHAR } from '@duckdb/node-api';
import { nameplateKw, type ModelItem, type SiteResponse } from '../api/schemas.js';
import { SETTINGS_HISTORY_APPEND, STATES_APPEND, changedGroupsSql, instant } from './merge.js';
import { loadSeries, writeSyncState, type LoadOptions, type RowsWritten, type SyncStateUpdate } from './series.js';
import type { Warehouse } from './warehouse.js';

export type { LoadOptions, RowsWritten, SyncStateUpdate } from './series.js';

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

// ---------------------------------------------------------------- series

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

export async function loadForecasts(
  warehouse: Warehouse,
  siteId: string,
  columns: ForecastColumns | readonly ForecastColumns[],
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const reads = Array.isArray(columns) ? columns : [columns as ForecastColumns];
  const blocks = reads.map((read) => ({
    // Named one by one: a parsed response may carry extra fields the service added.
    rows: checkLengths(`forecasts of site ${siteId}`, {
      valid_time: read.valid_time,
      forecast: read.forecast,
      capacity: read.capacity,
      model_name: read.model_name,
      model_version: read.model_version,
      update_time: read.update_time,
    }),
    columns: [
      { type: VARCHAR, values: read.model_name },
      { type: INTEGER, values: read.model_version },
      { type: DOUBLE, values: read.update_time },
      { type: DOUBLE, values: read.valid_time },
      { type: DOUBLE, values: read.forecast },
      { type: DOUBLE, values: read.capacity },
    ],
  }));
  return loadSeries(warehouse, 'forecasts', siteId, blocks, options);
}

export async function loadModelOutputs(
  warehouse: Warehouse,
  siteId: string,
  outputs: readonly ModelOutputColumns[],
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const blocks = outputs.map((output) => ({
    rows: checkLengths(`output of model ${output.model_id} (site ${siteId})`, {
      valid_time: output.valid_time,
      forecast: output.forecast,
      capacity: output.capacity,
    }),
    columns: [
      { type: VARCHAR, values: { constant: output.model_id } },
      { type: VARCHAR, values: { constant: output.model_name } },
      { type: INTEGER, values: { constant: output.model_version } },
      { type: DOUBLE, values: { constant: output.as_of } },
      { type: DOUBLE, values: output.valid_time },
      { type: DOUBLE, values: output.forecast },
      { type: DOUBLE, values: output.capacity },
    ],
  }));
  return loadSeries(warehouse, 'outputs', siteId, blocks, options);
}

export async function loadActuals(
  warehouse: Warehouse,
  siteId: string,
  columns: ActualColumns,
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const rows = checkLengths(`actuals of site ${siteId}`, { valid_time: columns.valid_time, value: columns.value });
  const block = {
    rows,
    columns: [
      { type: DOUBLE, values: columns.valid_time },
      { type: DOUBLE, values: columns.value },
      // first_seen_at and replaced_at: per site, since sites of one batch may come with different clocks
      { type: DOUBLE, values: { constant: options.now ?? Date.now() } },
    ],
  };
  return loadSeries(warehouse, 'actuals', siteId, [block], options);
}

/**
 * The values of another actuals series than power (`type`), into actuals_by_type: new points
 * inserted, changed ones updated with their old value in actual_revisions_by_type, as loadActuals.
 */
export async function loadTypedActuals(
  warehouse: Warehouse,
  siteId: string,
  type: string,
  columns: ActualColumns,
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const rows = checkLengths(`${type} actuals of site ${siteId}`, {
    valid_time: columns.valid_time,
    value: columns.value,
  });
  const block = {
    rows,
    columns: [
      { type: VARCHAR, values: { constant: type } },
      { type: DOUBLE, values: columns.valid_time },
      { type: DOUBLE, values: columns.value },
      { type: DOUBLE, values: { constant: options.now ?? Date.now() } },
    ],
  };
  return loadSeries(warehouse, 'typed_actuals', siteId, [block], options);
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
    col('site_id', 'VARCHAR'),
    col('name', 'VARCHAR'),
    col('type', 'VARCHAR'),
    col('latitude', 'DOUBLE'),
    col('longitude', 'DOUBLE'),
    col('nameplate_kw', 'DOUBLE'),
    col('created_at', 'TIMESTAMPTZ', { instant: true }),
    col('settings', 'JSON'),
    col('details', 'JSON'),
    col('synced_at', 'TIMESTAMPTZ', { instant: true, bookkeeping: true }),
  ],
};

const SITE_ASSETS: RefTable = {
  table: 'site_assets',
  columns: [
    col('site_id', 'VARCHAR'),
    col('asset_index', 'INTEGER'),
    col('mount', 'VARCHAR'),
    col('capacity_kw', 'DOUBLE'),
    col('install_date', 'DATE'),
    col('azimuth', 'DOUBLE'),
    col('tilt', 'DOUBLE'),
    col('axis_tilt', 'DOUBLE'),
    col('axis_azimuth', 'DOUBLE'),
    col('max_angle', 'DOUBLE'),
    col('details', 'JSON'),
  ],
};

const SITE_CAPACITY: RefTable = {
  table: 'site_capacity',
  columns: [
    col('site_id', 'VARCHAR'),
    col('segment_index', 'INTEGER'),
    col('valid_from', 'TIMESTAMPTZ', { instant: true }),
    col('valid_to', 'TIMESTAMPTZ', { instant: true }),
    col('value_kw', 'DOUBLE'),
    col('details', 'JSON'),
  ],
};

const MODELS: RefTable = {
  table: 'models',
  columns: [
    col('model_id', 'VARCHAR'),
    col('site_id', 'VARCHAR'),
    col('name', 'VARCHAR'),
    col('label', 'VARCHAR'),
    col('version', 'INTEGER'),
    col('display_name', 'VARCHAR'),
    col('model_type', 'VARCHAR'),
    col('quantile', 'DOUBLE'),
    col('priority', 'INTEGER'),
    col('serving_active', 'BOOLEAN'),
    col('output_types', 'VARCHAR[]'),
    col('schedule_cron', 'VARCHAR'),
    col('latest_state', 'VARCHAR'),
    col('synced_at', 'TIMESTAMPTZ', { instant: true, bookkeeping: true }),
  ],
};

const MODEL_STATES: RefTable = {
  table: 'model_states',
  columns: [
    col('model_id', 'VARCHAR'),
    col('state', 'VARCHAR'),
    col('state_at', 'TIMESTAMPTZ', { instant: true }),
    col('details', 'JSON'),
  ],
};

const REF_TABLES = [SITES, SITE_ASSETS, SITE_CAPACITY, MODELS, MODEL_STATES];

async function ensureRefStaging(warehouse: Warehouse): Promise<void> {
  for (const { table } of REF_TABLES) {
    await warehouse.run(`CREATE TEMP TABLE IF NOT EXISTS ${table}_in AS SELECT * FROM main.${table} LIMIT 0`);
    await warehouse.run(`DELETE FROM temp.${table}_in`);
  }
}

/**
 * Stages rows (values in column order) into temp.<table>_in in one statement: the rows travel as
 * one JSON array parameter, unnested and cast in SQL. (Multi-row VALUES with a parameter and a
 * cast per value took ~0.4 ms a row to bind: 2.8 s of a 1,000-site sync for the models alone.)
 */
async function stageRows(warehouse: Warehouse, spec: RefTable, rows: readonly (readonly unknown[])[]): Promise<void> {
  if (rows.length === 0) return;
  const names = spec.columns.map((c) => c.name).join(', ');
  const values = spec.columns.map((c, i) => fromJson(i, c)).join(', ');
  await warehouse.run(
    `INSERT INTO temp.${spec.table}_in (${names}) SELECT ${values} FROM (SELECT unnest(CAST($1 AS JSON[])) AS r)`,
    [JSON.stringify(rows)], // undefined in a row becomes null, as JSON.stringify does in arrays
  );
}

/** Element `index` of the JSON row `r` as the column's type; a JSON null is SQL NULL. */
function fromJson(index: number, column: RefColumn): string {
  if (column.instant) return instant(`CAST(r->>${index} AS DOUBLE)`);
  const json = `NULLIF(r->${index}, 'null')`;
  if (column.type === 'JSON') return json;
  if (column.type.endsWith('[]')) return `CAST(${json} AS ${column.type})`;
  return `CAST(r->>${index} AS ${column.type})`;
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
const SITE_COLUMNS = new Set([
  'id',
  'site_id',
  'name',
  'type',
  'latitude',
  'longitude',
  'creation_timestamp_utc',
  'settings',
  'assets',
  'capacity_kw_array',
  'defaulted',
]);
const ASSET_COLUMNS = ['azimuth', 'tilt', 'axis_tilt', 'axis_azimuth', 'max_angle'] as const;

function siteRow(site: SiteResponse, now: number): unknown[] {
  const details = Object.fromEntries(Object.entries(site).filter(([key]) => !SITE_COLUMNS.has(key)));
  return [
    site.site_id,
    site.name,
    site.type,
    site.latitude,
    site.longitude,
    nameplateKw(site),
    site.creation_timestamp_utc,
    site.settings ?? null,
    details,
    now,
  ];
}

function assetRows(site: SiteResponse): unknown[][] {
  return site.assets.map((asset, index) => {
    const fields = asset as Record<string, unknown>;
    return [
      site.site_id,
      index,
      asset.mount ?? null,
      asset.capacity ?? null,
      fields.install_date ?? null,
      ...ASSET_COLUMNS.map((name) => fields[name] ?? null),
      asset,
    ];
  });
}

function capacityRows(site: SiteResponse): unknown[][] {
  return site.capacity_kw_array.map((segment, index) => [
    site.site_id,
    index,
    segment.dateStart ?? null,
    segment.dateEnd ?? null,
    segment.value,
    segment,
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
    await stageRows(
      warehouse,
      SITES,
      sites.map((site) => siteRow(site, now)),
    );
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

/**
 * Records the configured interval labels (service.interval_label), which the day-ahead view reads
 * to assign each value to the day of its interval. Writes only when they changed.
 */
export async function saveIntervalLabels(
  warehouse: Warehouse,
  labels: { forecasts: string; actuals: string },
): Promise<void> {
  for (const [resource, label] of Object.entries(labels)) {
    await warehouse.run(
      `INSERT INTO interval_labels (resource, label) SELECT $1, $2
       WHERE NOT EXISTS (SELECT 1 FROM interval_labels WHERE resource = $1 AND label = $2)
       ON CONFLICT (resource) DO UPDATE SET label = excluded.label`,
      [resource, label],
    );
  }
}

/** The quantile level of a model named quantile_p<percent>, else null. */
export function quantileOf(name: string): number | null {
  const match = /^quantile_p(\d+(?:\.\d+)?)$/.exec(name);
  return match ? Number(match[1]) / 100 : null;
}

/** A state entry that can be stored: it names a state and a time (entries of other shapes are not). */
type DatedState = ModelItem['state'][number] & { state: string; timestamp_utc: number };

function datedStates(model: SiteModel): DatedState[] {
  return model.state.filter((entry): entry is DatedState => entry.state !== null && entry.timestamp_utc !== null);
}

function modelRow(siteId: string, model: SiteModel, now: number): unknown[] {
  const newest = datedStates(model).reduce<DatedState | undefined>(
    (best, entry) => (best === undefined || entry.timestamp_utc >= best.timestamp_utc ? entry : best),
    undefined,
  );
  return [
    model.id,
    siteId,
    model.name,
    model.label,
    model.version,
    model.display_name ?? null,
    model.model_type ?? null,
    quantileOf(model.name),
    model.priority,
    model.serving_active ?? null,
    model.output_types,
    model.schedule?.value ?? null,
    newest?.state ?? null,
    now,
  ];
}

/**
 * Upserts the site's models (only those that changed), appends their new state entries, and a
 * settings-history row for each model whose priority or serving_active differs from the last one
 * seen. Models missing from the list are kept (their outputs stay meaningful).
 */
export function loadModels(
  warehouse: Warehouse,
  siteId: string,
  models: readonly SiteModel[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  return loadModelsOfSites(warehouse, [{ siteId, models }], options);
}

/**
 * loadModels for several sites in ONE transaction (whole sites, so a reader never sees half a
 * site): the statements cost the same for 1 or 500 sites, ~40 ms, so a sync loads the models
 * of many sites at once. Returns the rows written over all of them.
 */
export async function loadModelsOfSites(
  warehouse: Warehouse,
  sites: readonly { siteId: string; models: readonly SiteModel[] }[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  const models = sites.flatMap(({ siteId, models: list }) => list.map((model) => ({ siteId, model })));
  return warehouse.exclusive(async () => {
    await ensureRefStaging(warehouse);
    await stageRows(
      warehouse,
      MODELS,
      models.map(({ siteId, model }) => modelRow(siteId, model, now)),
    );
    await stageRows(
      warehouse,
      MODEL_STATES,
      models.flatMap(({ model }) =>
        datedStates(model).map((entry) => [model.id, entry.state, entry.timestamp_utc, entry.details]),
      ),
    );
    return warehouse.transaction(async () => {
      const written: RowsWritten = {};
      count(
        written,
        'models',
        await replaceChanged(warehouse, MODELS, 'model_id', 'SELECT model_id FROM temp.models_in'),
      );
      count(written, 'model_states', await warehouse.changed(STATES_APPEND));
      count(written, 'model_settings_history', await warehouse.changed(SETTINGS_HISTORY_APPEND, [now]));
      return written;
    });
  });
}
