/**
 * The load stage: rows and columns named as the warehouse names them (rows.ts; the sync's
 * normalize stage builds them from the service's responses, and this module knows nothing of
 * those) go into DuckDB, series through data chunks into TEMP staging tables, and are merged into
 * the core tables in ONE transaction per batch of whole sites, so a reader of the published
 * snapshot never sees half a site and a rerun of the same window changes nothing (and reports
 * 0 rows written).
 *
 * This module is the API, and takes series apart into blocks (each key once: dedupe.ts); the
 * engine behind it, one concern a module:
 *   commit-queue.ts  the group commit: batches of loads, one transaction each, retried alone
 *   staging.ts       a batch's blocks into the TEMP staging tables (data chunks)
 *   series.ts        each series' merge of what is staged (the SQL: merge.ts)
 *   sync-state.ts    sync_state, with the data or on its own
 *   vintage-reads.ts vintage_reads rows a load defers or settles, with the data
 *   reference.ts     sites, models and their satellite tables
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
 *     Sync states on their own, 1,000 to a transaction: for site resources that had nothing to
 *     write (a load with rows does it inside its own transaction when given `options.syncState`).
 *   forgetDigests(warehouse, resources: string[])                              → void
 *     Clears the digests of those sync_state resources: their next read merges in full.
 *   saveIntervalLabels(warehouse, { forecasts, actuals })                       → void
 *     Records the configured interval labels (interval_labels), when they changed.
 *
 * options: { now?: number (default Date.now(); stamps synced_at, first_seen_at, replaced_at, ...),
 *            syncState?: SyncStateUpdate (written in the same transaction as the data),
 *            vintageReads?: VintageBookkeeping (vintages kept pending and pending ones forgotten,
 *              in the same transaction; forecasts and outputs),
 *            quality?: QualitySettings (actuals: their flags computed in the same transaction) }
 * SyncStateUpdate: { resource: 'forecasts' | 'outputs' | 'actuals' | string, syncedTo: number,
 *            lastAsOf?: number | null, runId: string, digest?: string | null }. synced_to and
 *            last_as_of never move back (a --from/--to backfill of an older window keeps the
 *            incremental cursor), and the row is written only when one of them advances or the
 *            digest changes.
 * RowsWritten: { [table]: rows inserted + updated } with only non-zero tables, e.g.
 *            { forecasts: 5376, sync_state: 1 }; sum several with `addRows(total, part)`.
 *
 * Series loads (forecasts, outputs, actuals) GROUP-COMMIT: call them concurrently (the sync's
 * sites in flight, WITHOUT wrapping them in warehouse.exclusive) and the loads that arrive while a merge
 * runs are merged together in the next transaction: whole sites only, so a reader never sees half
 * a site; a batch that fails is retried one site per transaction, so only the faulty site's call
 * rejects. Each call resolves, after its commit, with its own site's rows. A call made while
 * holding the connection (inside warehouse.exclusive/transaction) merges alone, at once.
 * For the fastest merges, start the sites in site_id order: rows then land clustered by site and
 * the merge's site filter skips the other sites' row groups by their min/max.
 */
import { DOUBLE, INTEGER, VARCHAR } from './duckdb-api.js';
import { loadSeries } from './commit-queue.js';
import { oncePerKey } from './dedupe.js';
import type { ActualColumns, Column, ForecastColumns, ModelOutputColumns, RowsWritten } from './rows.js';
import type { LoadOptions } from './series.js';
import { spanOf } from './stored-vintages.js';
import type { Warehouse } from './warehouse.js';

export { loadModels, loadSites, saveIntervalLabels } from './reference.js';
export { addRows, type RowsWritten } from './rows.js';
export type { LoadOptions } from './series.js';
export { forgetDigests, saveSyncStates, type SyncStateUpdate } from './sync-state.js';

// ---------------------------------------------------------------- series

/**
 * The number of rows of a series' columns, which must all have as many values. The client checks
 * the same of the service's bodies (src/api/columns.ts), but this is the warehouse's own
 * boundary: it takes columns from any caller (the sync, the bench, tests) and knows nothing of
 * the API, and a short column would store nulls under keys it never gave.
 */
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
    const validTimes = column(read.valid_time);
    return {
      rows: keep ? keep.length : end - start,
      columns: [
        { type: DOUBLE, values: validTimes },
        { type: DOUBLE, values: column(read.forecast) },
        { type: DOUBLE, values: column(read.capacity) },
      ],
      shared: [
        { type: VARCHAR, values: { constant: read.model_name[start] } },
        { type: INTEGER, values: { constant: read.model_version[start] } },
        { type: DOUBLE, values: { constant: read.update_time[start] } },
      ],
      span: spanOf('', read.update_time[start], validTimes),
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
 * last read wins; within a read, the greatest value): a vintage that several reads return (a daily
 * model's vintage is in every 3-hourly read of its day) is staged whole from the last read and,
 * from the reads before it, only for valid times it has not; a run left empty is dropped. The merge then takes the site's blocks
 * as they are instead of collapsing every staged row by key (series.ts, stage).
 */
function onceEach(runs: VintageRun[]): VintageRun[] {
  const kept = oncePerKey(
    runs.map(({ read, start, end }) => ({
      group: `${read.model_name[start]}\0${read.model_version[start]}\0${read.update_time[start]}`,
      times: read.valid_time,
      values: read.forecast,
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
  // A vintage (model_id, as_of) listed twice: the last read wins; a valid time twice in one: the greatest value.
  const kept = oncePerKey(
    outputs.map((output, o) => ({
      group: `${output.model_id}\0${output.as_of}`,
      times: output.valid_time,
      values: output.forecast,
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
      span: spanOf(output.model_id, output.as_of, rows.valid_time),
    };
  });
  return loadSeries(warehouse, 'outputs', siteId, blocks, options);
}

/** An actuals series with each valid time once: its greatest value (dedupe.ts). */
function oncePerTime(columns: ActualColumns, rows: number): ActualColumns {
  const [keep] = oncePerKey([{ group: '', times: columns.valid_time, values: columns.value, start: 0, end: rows }]);
  return rowsOf({ valid_time: columns.valid_time, value: columns.value }, keep);
}

export async function loadActuals(
  warehouse: Warehouse,
  siteId: string,
  columns: ActualColumns,
  options: LoadOptions = {},
): Promise<RowsWritten> {
  const checked = checkLengths(`actuals of site ${siteId}`, { valid_time: columns.valid_time, value: columns.value });
  const series = oncePerTime(columns, checked);
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
  const series = oncePerTime(columns, checked);
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
