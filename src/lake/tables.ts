// How each warehouse table lives in the lake: where its files are partitioned, how a reader
// resolves the rows that several commits wrote for one key, and what a shard's scratch
// warehouse is seeded with before it syncs (docs/lake.md).

/**
 * - latest: one row per key: a shard's commit rewrites the file holding the key's old row
 *   (copy-on-write, src/lake/rewrite.ts); readers resolving the newest per key by the commit's
 *   `seq` find the same rows.
 * - site-snapshot: the rows of each site's newest commit (site_assets, site_capacity: the loader
 *   replaces a site's whole set when any of it changes).
 * - all: every row (a ledger whose rows each run writes once).
 */
export type Resolve = { kind: 'latest'; key: readonly string[] } | { kind: 'site-snapshot' } | { kind: 'all' };

/**
 * What the scratch warehouse of a shard run starts with:
 * - all: every committed row (small tables, so the loader's change detection works as in one file),
 * - window: the shard's sites from the oldest point the run can re-read (the loader's
 *   anti-join and the actuals' revision logic need what was stored there),
 * - none: nothing (ledgers, append-only series whose new keys cannot be in the lake).
 */
export type Seed = 'all' | 'window' | 'none';

export interface LakeTable {
  name: string;
  /** `month`: hive-style `month=YYYY-MM` directories by the UTC month of valid_time; null: one directory. */
  partition: 'month' | null;
  resolve: Resolve;
  seed: Seed;
}

const latest = (...key: string[]): Resolve => ({ kind: 'latest', key });

export const LAKE_TABLES: readonly LakeTable[] = [
  { name: 'sites', partition: null, resolve: latest('site_id'), seed: 'all' },
  { name: 'site_assets', partition: null, resolve: { kind: 'site-snapshot' }, seed: 'all' },
  { name: 'site_capacity', partition: null, resolve: { kind: 'site-snapshot' }, seed: 'all' },
  { name: 'models', partition: null, resolve: latest('site_id', 'model_id'), seed: 'all' },
  { name: 'model_states', partition: null, resolve: latest('site_id', 'model_id', 'state_at', 'state'), seed: 'all' },
  {
    name: 'model_settings_history',
    partition: null,
    resolve: latest('site_id', 'model_id', 'observed_at'),
    seed: 'all',
  },
  {
    name: 'forecasts',
    partition: 'month',
    resolve: latest('site_id', 'model_name', 'model_version', 'update_time', 'valid_time'),
    seed: 'window',
  },
  {
    name: 'model_outputs',
    partition: 'month',
    resolve: latest('site_id', 'model_id', 'as_of', 'valid_time'),
    seed: 'window',
  },
  { name: 'actuals', partition: 'month', resolve: latest('site_id', 'valid_time'), seed: 'window' },
  {
    name: 'actual_revisions',
    partition: 'month',
    resolve: latest('site_id', 'valid_time', 'replaced_at'),
    seed: 'none',
  },
  { name: 'actuals_by_type', partition: 'month', resolve: latest('site_id', 'type', 'valid_time'), seed: 'window' },
  {
    name: 'actual_revisions_by_type',
    partition: 'month',
    resolve: latest('site_id', 'type', 'valid_time', 'replaced_at'),
    seed: 'none',
  },
  // Seeded by its migration too: the lake's rows replace those defaults in the scratch warehouse.
  { name: 'interval_labels', partition: null, resolve: latest('resource'), seed: 'all' },
  { name: 'quality_flags', partition: null, resolve: latest('bit'), seed: 'all' },
  { name: 'actual_flags', partition: 'month', resolve: latest('site_id', 'valid_time'), seed: 'window' },
  // Written by accuracy runs from the capacity files, never by a sync: no shard writes it.
  { name: 'capacity_windows', partition: null, resolve: { kind: 'all' }, seed: 'none' },
  { name: 'sync_state', partition: null, resolve: latest('site_id', 'resource'), seed: 'all' },
  { name: 'runs', partition: null, resolve: latest('run_id'), seed: 'none' },
  { name: 'run_failures', partition: null, resolve: { kind: 'all' }, seed: 'none' },
  { name: 'capacity_pushes', partition: null, resolve: latest('push_id'), seed: 'none' },
  { name: 'accuracy_runs', partition: null, resolve: latest('run_id'), seed: 'none' },
  { name: 'writer_recoveries', partition: null, resolve: { kind: 'all' }, seed: 'none' },
  {
    name: 'accuracy_results',
    partition: null,
    resolve: latest('run_id', 'subject', 'model', 'group_name', 'group_key', 'metric'),
    seed: 'none',
  },
];

/**
 * Warehouse tables that are not data and have no place in the lake: the migration and views
 * records, the flags a sync has still to compute (empty when it ends) and what they were last
 * recomputed over, the accuracy ledger and its per-group
 * statistics (a warehouse's own working state; a scratch warehouse without them scores in full),
 * the days retention has done in the warehouse, the list of its cold store's files (the lake
 * is Parquet already), the state of the sites efsync manages (the operator's, not data), and
 * the digests of the reference rows last loaded (a scratch warehouse without them compares every
 * site's rows in full).
 */
export const NOT_IN_LAKE: readonly string[] = [
  'schema_migrations',
  'schema_views',
  'actual_flags_pending',
  'actual_flags_basis',
  'accuracy_ledger_state',
  'accuracy_pairs',
  'accuracy_pair_quantiles',
  'accuracy_ledger_vintages',
  'accuracy_ledger_flags',
  'accuracy_ledger_sites',
  'accuracy_stats_state',
  'accuracy_stats_pending',
  'accuracy_stats',
  'accuracy_histograms',
  'retention_days',
  'cold_files',
  'managed_sites',
  'reference_digests',
  'site_changes',
  'site_drift',
];

/**
 * A table a later migration added without a line above: one folder, every distinct row, the whole
 * table seeded (so a run commits only rows it changed or added). Correct for any table whose rows
 * are only added; give it its own line when rows are updated or deleted.
 */
export function defaultLayout(name: string): LakeTable {
  return { name, partition: null, resolve: { kind: 'all' }, seed: 'all' };
}
