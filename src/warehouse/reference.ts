// The reference tables (sites with their assets and capacity segments, models with their states
// and settings history, interval labels): staged as one JSON parameter each, and the groups that
// changed rewritten, in one transaction per load.
import { SETTINGS_HISTORY_APPEND, STATES_APPEND, changedGroupsSql } from './merge.js';
import { addRows, type ModelRows, type RowsWritten, type SiteRows } from './rows.js';
import { instant } from './sql.js';
import type { Warehouse } from './warehouse.js';

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
    col('site_id', 'VARCHAR'),
    col('model_id', 'VARCHAR'),
    col('state', 'VARCHAR'),
    col('state_at', 'TIMESTAMPTZ', { instant: true }),
    col('details', 'JSON'),
  ],
};

/**
 * Empty staging tables temp.<table>_in for the given tables, shaped as theirs: one statement
 * each (a create if missing and a delete for every one of the five cost ~10 statements a load,
 * ~40 of the ~125 of a 1,000-site resync).
 */
async function freshRefStaging(warehouse: Warehouse, specs: readonly RefTable[]): Promise<void> {
  for (const { table } of specs) {
    await warehouse.run(`CREATE OR REPLACE TEMP TABLE ${table}_in AS SELECT * FROM main.${table} LIMIT 0`);
  }
}

/**
 * Stages rows into temp.<table>_in in one statement: the rows travel as one JSON array parameter
 * (each row its values in column order, bookkeeping columns stamped `now`), unnested and cast in
 * SQL. (Multi-row VALUES with a parameter and a cast per value took ~0.4 ms a row to bind: 2.8 s
 * of a 1,000-site sync for the models alone.)
 */
async function stageRows(
  warehouse: Warehouse,
  spec: RefTable,
  rows: readonly Readonly<Record<string, unknown>>[],
  now: number,
): Promise<void> {
  if (rows.length === 0) return;
  const names = spec.columns.map((c) => c.name).join(', ');
  const values = spec.columns.map((c, i) => fromJson(i, c)).join(', ');
  const ordered = rows.map((row) => spec.columns.map((c) => (c.bookkeeping ? now : row[c.name])));
  await warehouse.run(
    `INSERT INTO temp.${spec.table}_in (${names}) SELECT ${values} FROM (SELECT unnest(CAST($1 AS JSON[])) AS r)`,
    [JSON.stringify(ordered)], // undefined in a row becomes null, as JSON.stringify does in arrays
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
  const deleted = await warehouse.changed(`DELETE FROM main.${spec.table} WHERE (${groupKey}) IN (${changedKeys})`);
  const inserted = await warehouse.changed(
    `INSERT INTO main.${spec.table} SELECT * FROM temp.${spec.table}_in WHERE (${groupKey}) IN (${changedKeys})`,
  );
  return Math.max(deleted, inserted);
}

/**
 * Upserts the given sites with their assets and capacity segments, in one transaction (so a
 * reader never sees a site without its assets). Sites not in the list are left alone.
 */
export async function loadSites(
  warehouse: Warehouse,
  sites: readonly SiteRows[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  return warehouse.exclusive(async () => {
    await freshRefStaging(warehouse, [SITES, SITE_ASSETS, SITE_CAPACITY]);
    await stageRows(
      warehouse,
      SITES,
      sites.map((rows) => rows.site),
      now,
    );
    await stageRows(
      warehouse,
      SITE_ASSETS,
      sites.flatMap((rows) => rows.assets),
      now,
    );
    await stageRows(
      warehouse,
      SITE_CAPACITY,
      sites.flatMap((rows) => rows.capacity),
      now,
    );
    const scope = 'SELECT site_id FROM temp.sites_in';
    return warehouse.transaction(async () => {
      const written: RowsWritten = {};
      addRows(written, { sites: await replaceChanged(warehouse, SITES, 'site_id', scope) });
      addRows(written, { site_assets: await replaceChanged(warehouse, SITE_ASSETS, 'site_id', scope) });
      addRows(written, { site_capacity: await replaceChanged(warehouse, SITE_CAPACITY, 'site_id', scope) });
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

/**
 * Upserts the given models (only those that changed), appends their new state entries, and a
 * settings-history row for each model whose priority or serving_active differs from the last one
 * seen; models missing from the list are kept (their outputs stay meaningful). ONE transaction
 * for all of them, whole sites, so a reader never sees half a site: the statements cost the same
 * for the models of 1 or 500 sites, ~40 ms, so a sync loads the models of many sites at once.
 */
export async function loadModels(
  warehouse: Warehouse,
  models: readonly ModelRows[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  return warehouse.exclusive(async () => {
    await freshRefStaging(warehouse, [MODELS, MODEL_STATES]);
    await stageRows(
      warehouse,
      MODELS,
      models.map((rows) => rows.model),
      now,
    );
    await stageRows(
      warehouse,
      MODEL_STATES,
      models.flatMap((rows) => rows.states),
      now,
    );
    return warehouse.transaction(async () => {
      const written: RowsWritten = {};
      const scope = 'SELECT site_id, model_id FROM temp.models_in';
      addRows(written, { models: await replaceChanged(warehouse, MODELS, 'site_id, model_id', scope) });
      addRows(written, { model_states: await warehouse.changed(STATES_APPEND) });
      addRows(written, { model_settings_history: await warehouse.changed(SETTINGS_HISTORY_APPEND, [now]) });
      return written;
    });
  });
}
