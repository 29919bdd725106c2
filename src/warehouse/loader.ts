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
import type { ModelItem, SiteResponse } from '../api/schemas.js';

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
