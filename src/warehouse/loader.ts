/**
 * The load stage: rows and columns named as the warehouse names them (rows.ts; the sync's
 * normalize stage builds them from the service's responses, and this module knows nothing of
 * those) go into DuckDB, series through data chunks into TEMP staging tables, and are merged into
 * the core tables in ONE transaction per batch of whole sites, so a reader of the published
 * snapshot never sees half a site and a rerun of the same window changes nothing (and reports
 * 0 rows written).
 *
 * API (instants are epoch ms UTC; columns are parallel arrays of equal length):
 *
 *   loadSites(warehouse, sites: SiteRows[], options?)                          → RowsWritten
 *     Upserts `sites` (only when a field changed), replaces the site's `site_assets` and
 *     `site_capacity` segments only when they differ. All the given sites in one transaction.
 *   loadModels(warehouse, models: ModelRows[], options?)                       → RowsWritten
 *     Upserts `models` (only when something changed), appends new `model_states` entries, and a
 *     `model_settings_history` row when priority or serving_active differs from the last one; all
 *     three keyed by (site_id, model_id): a model listed under two sites has rows under each.
 *     The models of many sites in one transaction (the same statements, so ~40 ms for 1 or 500).
 *   loadForecasts(warehouse, siteId, columns: ForecastColumns | ForecastColumns[], options?) → RowsWritten
 *     Inserts the rows whose (site_id, model_name, model_version, update_time, valid_time) is new;
 *     an existing vintage is never overwritten. Several reads of a site (an array) load together,
 *     without being concatenated first.
 *   loadModelOutputs(warehouse, siteId, outputs: ModelOutputColumns[], options?) → RowsWritten
 *     Inserts new (site_id, model_id, as_of, valid_time); all the given outputs of the site in one
 *     transaction.
 *   loadActuals(warehouse, siteId, columns: ActualColumns, options & { quality? }) → RowsWritten
 *     Inserts new (site_id, valid_time) with first_seen_at = now; where a value changed
 *     (IS DISTINCT FROM) writes an `actual_revisions` row (old, new, replaced_at = now) and updates
 *     value and revised_at. Unchanged points write nothing. The data-quality flags of what changed
 *     are marked pending (actual_flags_pending) in the same transaction, and computed there too
 *     when thresholds are given (`quality`); without, flagPending (flags.ts) computes them later,
 *     as the sync does once after its series.
 *   loadTypedActuals(warehouse, siteId, type, columns: ActualColumns, options?) → RowsWritten
 *     The same for another actuals series than power, keyed (site_id, type, valid_time), into
 *     `actuals_by_type` and `actual_revisions_by_type`.
 *   saveSyncStates(warehouse, states: { siteId, state: SyncStateUpdate }[], options?) → RowsWritten
 *     Sync states on their own, all in one transaction: for site resources that had nothing to
 *     write (a load with rows does it inside its own transaction when given `options.syncState`).
 *   forgetDigests(warehouse, resources: string[])                              → void
 *     Clears the digests of those sync_state resources: their next read merges in full.
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
import { lastOfEach } from './dedupe.js';
import { SETTINGS_HISTORY_APPEND, STATES_APPEND, changedGroupsSql } from './merge.js';
import type { ActualColumns, Column, ForecastColumns, ModelOutputColumns, ModelRows, SiteRows } from './rows.js';
import { instant, sqlList } from './sql.js';
import { loadSeries, writeSyncStates, type LoadOptions, type RowsWritten, type SyncStateUpdate } from './series.js';
import type { Warehouse } from './warehouse.js';

export type { LoadOptions, RowsWritten, SyncStateUpdate } from './series.js';

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

function checkLengths(what: string, columns: Record<string, Column<unknown>>): number {
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
  const reads: readonly ForecastColumns[] = Array.isArray(columns) ? columns : [columns as ForecastColumns];
  const runs = reads.flatMap((read) => {
    const rows = checkLengths(`forecasts of site ${siteId}`, {
      valid_time: read.valid_time,
      forecast: read.forecast,
      capacity: read.capacity,
      model_name: read.model_name,
      model_version: read.model_version,
      update_time: read.update_time,
    });
    return vintageRuns(read, rows).map(([start, end]) => ({ read, start, end, rows }));
  });
  const blocks = onceEach(runs).map(({ read, start, end, rows, keep }) => {
    const column = <T>(values: Column<T>) => (keep ? keep.map((i) => values[i]) : part(values, start, end, rows));
    return {
      rows: keep ? keep.length : end - start,
      columns: [
        { type: DOUBLE, values: column(read.valid_time) },
        { type: DOUBLE, values: column(read.forecast) },
        { type: DOUBLE, values: column(read.capacity) },
      ],
      shared: [
        { type: VARCHAR, values: { constant: read.model_name[start] } },
        { type: INTEGER, values: { constant: read.model_version[start] } },
        { type: DOUBLE, values: { constant: read.update_time[start] } },
      ],
    };
  });
  return loadSeries(warehouse, 'forecasts', siteId, blocks, options);
}

interface VintageRun {
  read: ForecastColumns;
  start: number;
  end: number;
  rows: number;
  /** The rows of the run to stage, when not all of them: those of valid times a run before had not. */
  keep?: number[];
}

/**
 * The runs of a site's reads with each (vintage, valid time) once, by the rule of dedupe.ts (the
 * last value given wins): a vintage that several reads return (a daily model's vintage is in every
 * 3-hourly read of its day) is staged whole from the last read and, from the reads before it, only
 * for valid times it has not; a run left empty is dropped. The merge then takes the site's blocks
 * as they are instead of collapsing every staged row by key (series.ts, stage).
 */
function onceEach(runs: VintageRun[]): VintageRun[] {
  const kept = lastOfEach(
    runs.map(({ read, start, end }) => ({
      group: `${read.model_name[start]}\0${read.model_version[start]}\0${read.update_time[start]}`,
      times: read.valid_time,
      start,
      end,
    })),
  );
  return runs.flatMap((run, r) => {
    const keep = kept[r];
    if (keep === null) return [run];
    return keep.length === 0 ? [] : [{ ...run, keep }];
  });
}

/** A series' columns with only the rows `keep` lists (null: all of them, the columns as they are). */
function rowsOf<T extends Record<string, Column<unknown>>>(columns: T, keep: number[] | null): T {
  if (keep === null) return columns;
  return Object.fromEntries(
    Object.entries(columns).map(([name, values]) => [name, keep.map((i) => values[i])]),
  ) as unknown as T;
}

/**
 * The runs [start, end) of a forecast read's rows that share one vintage (model_name,
 * model_version, update_time): each is staged as a block with the vintage once, not on every row
 * (a read is usually one vintage, so one run, and its columns are staged as they are).
 */
function vintageRuns(read: ForecastColumns, rows: number): [number, number][] {
  const runs: [number, number][] = [];
  let start = 0;
  for (let i = 1; i <= rows; i++) {
    if (
      i === rows ||
      read.model_name[i] !== read.model_name[start] ||
      read.model_version[i] !== read.model_version[start] ||
      read.update_time[i] !== read.update_time[start]
    ) {
      runs.push([start, i]);
      start = i;
    }
  }
  return runs;
}

/** Rows [start, end) of a column of `rows` values: the column itself when that is all of it. */
function part<T>(column: Column<T>, start: number, end: number, rows: number): Column<T> {
  return start === 0 && end === rows ? column : (Array.prototype.slice.call(column, start, end) as T[]);
}

export async function loadModelOutputs(
  warehouse: Warehouse,
  siteId: string,
  outputs: readonly ModelOutputColumns[],
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const sizes = outputs.map((output) =>
    checkLengths(`output of model ${output.model_id} (site ${siteId})`, {
      valid_time: output.valid_time,
      forecast: output.forecast,
      capacity: output.capacity,
    }),
  );
  // A vintage (model_id, as_of) listed twice, or a valid time twice in one: the last value wins.
  const kept = lastOfEach(
    outputs.map((output, o) => ({
      group: `${output.model_id}\0${output.as_of}`,
      times: output.valid_time,
      start: 0,
      end: sizes[o],
    })),
  );
  const blocks = outputs.map((output, o) => {
    const rows = rowsOf(
      { valid_time: output.valid_time, forecast: output.forecast, capacity: output.capacity },
      kept[o],
    );
    return {
      rows: rows.valid_time.length,
      columns: [
        { type: DOUBLE, values: rows.valid_time },
        { type: DOUBLE, values: rows.forecast },
        { type: DOUBLE, values: rows.capacity },
      ],
      shared: [
        { type: VARCHAR, values: { constant: output.model_id } },
        { type: VARCHAR, values: { constant: output.model_name } },
        { type: INTEGER, values: { constant: output.model_version } },
        { type: DOUBLE, values: { constant: output.as_of } },
      ],
    };
  });
  return loadSeries(warehouse, 'outputs', siteId, blocks, options);
}

/** An actuals series with each valid time once: the last value listed wins (dedupe.ts). */
function lastValues(columns: ActualColumns, rows: number): ActualColumns {
  const [keep] = lastOfEach([{ group: '', times: columns.valid_time, start: 0, end: rows }]);
  return rowsOf({ valid_time: columns.valid_time, value: columns.value }, keep);
}

export async function loadActuals(
  warehouse: Warehouse,
  siteId: string,
  columns: ActualColumns,
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const checked = checkLengths(`actuals of site ${siteId}`, { valid_time: columns.valid_time, value: columns.value });
  const series = lastValues(columns, checked);
  const block = {
    rows: series.valid_time.length,
    columns: [
      { type: DOUBLE, values: series.valid_time },
      { type: DOUBLE, values: series.value },
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
  const checked = checkLengths(`${type} actuals of site ${siteId}`, {
    valid_time: columns.valid_time,
    value: columns.value,
  });
  const series = lastValues(columns, checked);
  const block = {
    rows: series.valid_time.length,
    columns: [
      { type: VARCHAR, values: { constant: type } },
      { type: DOUBLE, values: series.valid_time },
      { type: DOUBLE, values: series.value },
      { type: DOUBLE, values: { constant: options.now ?? Date.now() } },
    ],
  };
  return loadSeries(warehouse, 'typed_actuals', siteId, [block], options);
}

// ---------------------------------------------------------------- sync state

/**
 * Sync states with no data, STATES_PER_TRANSACTION at a time: a sync writes those of the site
 * resources that read nothing new once, after its series, instead of one transaction per batch
 * of them (a state written late, or lost to a crash, only makes the next run read again).
 */
export async function saveSyncStates(
  warehouse: Warehouse,
  states: readonly { siteId: string; state: SyncStateUpdate }[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  let advanced = 0;
  for (let start = 0; start < states.length; start += STATES_PER_TRANSACTION) {
    const part = states.slice(start, start + STATES_PER_TRANSACTION);
    const written = await warehouse.transaction(() =>
      writeSyncStates(
        warehouse,
        part.map(({ siteId, state }) => ({ siteId, state, now })),
      ),
    );
    advanced += written.size;
  }
  return advanced > 0 ? { sync_state: advanced } : {};
}

/**
 * DuckDB holds a transaction's updated rows, and the JSON list of the states (one value), in
 * memory it cannot spill: the 30,000 states of a 10,000-site resync in one statement asked for
 * 16 MiB at once and ran out of a 48MB pool, and in one transaction of smaller statements needed
 * more than 24MB.
 */
const STATES_PER_TRANSACTION = 1000;

/**
 * Clears the stored digests of `resources` (sync_state keys): a load that writes no sync state (a
 * backfill) may change rows a digest describes, and the next read must then merge in full.
 */
export async function forgetDigests(warehouse: Warehouse, resources: readonly string[]): Promise<void> {
  if (resources.length === 0) return;
  await warehouse.run(
    `UPDATE sync_state SET digest = NULL WHERE digest IS NOT NULL AND resource IN (${sqlList(resources)})`,
  );
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
      count(
        written,
        'models',
        await replaceChanged(warehouse, MODELS, 'site_id, model_id', 'SELECT site_id, model_id FROM temp.models_in'),
      );
      count(written, 'model_states', await warehouse.changed(STATES_APPEND));
      count(written, 'model_settings_history', await warehouse.changed(SETTINGS_HISTORY_APPEND, [now]));
      return written;
    });
  });
}
