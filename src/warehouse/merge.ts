// The merge SQL of the loader: staged rows (TEMP tables, instants as DOUBLE epoch ms, the site
// as site_no, its 1-based position in the batch's sorted site list `sites`; a forecast's or a
// model output's vintage once per block in stage_forecast_vintages / stage_output_vintages, by
// block_no) into the core tables.
// The series tables carry no PRIMARY KEY index (it made bulk merges ~6x slower), so
// every merge here is an anti-join on the table's key: only new keys go in. No key is staged
// twice (series.ts says why), so the staged rows are taken as they are.
import { instant, quoteLiteral } from './sql.js';

/** The site id of a staged row, from its site_no and the batch's `sites` (an sqlList). */
function siteOf(sites: string): string {
  return `[${sites}][site_no]`;
}

/**
 * The rows of the staged forecasts whose key is not stored yet, in the column order of the target
 * table, for an INSERT (series.ts counts them per site from its RETURNING); all of them when
 * `anyStored` is false (no staged vintage has a stored row). The vintage's columns are joined
 * back by block_no. The stored side is narrowed to the staged valid and update times, read from
 * the staging tables (not from `staged`, which DuckDB would then materialise): a nightly read's
 * vintages are the newest, and older vintages overlapping its valid times cannot match.
 */
export function freshForecastsSql(sites: string, anyStored: boolean): string {
  const staged = `
  SELECT ${siteOf(sites).replace('site_no', 'c.site_no')} AS site_id, v.model_name, v.model_version,
    ${instant('v.update_time')} AS update_time, ${instant('c.valid_time')} AS valid_time, c.forecast, c.capacity
  FROM temp.stage_forecasts c JOIN temp.stage_forecast_vintages v USING (block_no)`;
  if (!anyStored) return staged;
  return `
WITH staged AS (${staged}
),
existing AS (
  SELECT site_id, model_name, model_version, update_time, valid_time FROM main.forecasts
  WHERE site_id IN (${sites})
    AND valid_time BETWEEN (SELECT ${instant('min(valid_time)')} FROM temp.stage_forecasts)
      AND (SELECT ${instant('max(valid_time)')} FROM temp.stage_forecasts)
    AND update_time BETWEEN (SELECT ${instant('min(update_time)')} FROM temp.stage_forecast_vintages)
      AND (SELECT ${instant('max(update_time)')} FROM temp.stage_forecast_vintages)
)
SELECT s.site_id, s.model_name, s.model_version, s.update_time, s.valid_time, s.forecast, s.capacity
FROM staged s ANTI JOIN existing e USING (site_id, model_name, model_version, update_time, valid_time)`;
}

/**
 * The fresh model outputs, keyed (site_id, model_id, as_of, valid_time): a model listed under
 * two sites has its output stored under each (docs/warehouse.md); all the staged ones when
 * `anyStored` is false (no staged vintage has a stored row). Compared with the stored rows
 * on small keys: each stored row of a staged vintage (a model's (model_id, as_of)) is numbered,
 * by a join with the few staged vintages, with every block_no of its vintage (a vintage some
 * reads returned in part is several blocks), and with its site's site_no, and the anti-join runs
 * on (block_no, site_no, valid time) rather than on two strings per row; the vintage's strings
 * are joined back after.
 */
export function freshOutputsSql(sites: string, anyStored: boolean): string {
  const staged = 'SELECT s.block_no, s.site_no, s.valid_time, s.forecast, s.capacity FROM temp.stage_outputs s';
  const fresh = anyStored
    ? `site_nos AS (SELECT unnest(l) AS site_id, generate_subscripts(l, 1)::INTEGER AS site_no FROM (SELECT [${sites}] AS l)),
existing AS (
  SELECT v.block_no, n.site_no, epoch_ms(m.valid_time)::DOUBLE AS valid_time
  FROM main.model_outputs m
  JOIN site_nos n ON m.site_id = n.site_id
  JOIN (SELECT block_no, model_id, ${instant('as_of')} AS as_of FROM temp.stage_output_vintages) v
    ON m.model_id = v.model_id AND m.as_of = v.as_of
  WHERE m.site_id IN (${sites})
    AND m.as_of BETWEEN (SELECT ${instant('min(as_of)')} FROM temp.stage_output_vintages)
      AND (SELECT ${instant('max(as_of)')} FROM temp.stage_output_vintages)
),
fresh AS (
  ${staged}
  ANTI JOIN existing e USING (block_no, site_no, valid_time)
)`
    : `fresh AS (${staged})`;
  return `
WITH ${fresh}
SELECT v.model_id, ${instant('v.as_of')} AS as_of, ${instant('f.valid_time')} AS valid_time,
  ${siteOf(sites).replace('site_no', 'f.site_no')} AS site_id, v.model_name, v.model_version, f.forecast, f.capacity
FROM fresh f JOIN temp.stage_output_vintages v USING (block_no)`;
}

/** Where a kind of actuals is staged and stored: power, or the other series types beside it. */
export interface ActualsTarget {
  staging: string;
  table: string;
  revisions: string;
  changes: string;
  /** The key after site_id: the type (other series) and the valid time. */
  key: readonly string[];
}

export const POWER_ACTUALS: ActualsTarget = {
  staging: 'stage_actuals',
  table: 'actuals',
  revisions: 'actual_revisions',
  changes: 'actual_changes',
  key: ['valid_time'],
};
export const TYPED_ACTUALS: ActualsTarget = {
  staging: 'stage_typed_actuals',
  table: 'actuals_by_type',
  revisions: 'actual_revisions_by_type',
  changes: 'typed_actual_changes',
  key: ['type', 'valid_time'],
};

/**
 * The staged actuals that are new or differ from the stored value (IS DISTINCT FROM: a gap
 * becoming a value, or the reverse, is a revision too), with the value they replace.
 */
export function actualChangesSql(sites: string, target: ActualsTarget): string {
  const key = target.key.join(', ');
  const staged = target.key
    .map((column) => (column === 'valid_time' ? `${instant('valid_time')} AS valid_time` : column))
    .join(', ');
  return `
CREATE OR REPLACE TEMP TABLE ${target.changes} AS
WITH staged AS (
  SELECT ${siteOf(sites)} AS site_id, ${staged}, value, ${instant('seen_at')} AS seen_at
  FROM temp.${target.staging}
)
SELECT s.site_id, ${target.key.map((column) => `s.${column}`).join(', ')}, s.value AS new_value, a.value AS old_value,
       a.site_id IS NOT NULL AS existed, s.seen_at
FROM staged s
LEFT JOIN (SELECT site_id, ${key}, value FROM main.${target.table} WHERE site_id IN (${sites})) a USING (site_id, ${key})
WHERE a.site_id IS NULL OR a.value IS DISTINCT FROM s.value`;
}

/**
 * Run after actualChangesSql, revisions before the update (both read the same changes). A batch
 * with no revised value (any first sync) skips those two, and one with no new point the insert.
 */
export function applyActualChangesSql(
  sites: string,
  target: ActualsTarget,
): { revisions: string; update: string; insert: string } {
  const key = ['site_id', ...target.key].join(', ');
  const matches = ['site_id', ...target.key].map((column) => `${target.table}.${column} = c.${column}`).join(' AND ');
  return {
    revisions: `INSERT INTO ${target.revisions} (${key}, replaced_at, old_value, new_value)
SELECT ${key}, seen_at, old_value, new_value FROM temp.${target.changes} WHERE existed
ON CONFLICT (${key}, replaced_at) DO UPDATE SET new_value = excluded.new_value`,
    update: `UPDATE main.${target.table} SET value = c.new_value, revised_at = c.seen_at
FROM temp.${target.changes} c
WHERE c.existed AND ${target.table}.site_id IN (${sites}) AND ${matches}`,
    insert: `INSERT INTO main.${target.table} (${key}, value, first_seen_at, revised_at)
SELECT ${key}, new_value, seen_at, NULL FROM temp.${target.changes} WHERE NOT existed`,
  };
}

/**
 * The sync states given as `states`, the text of a JSON array of [site_id, resource, synced_to,
 * last_as_of, updated_at, run_id, digest] rows (instants epoch ms), written into the statement as
 * one literal whatever their number, not six values a row in a VALUES list; a literal, not a
 * parameter, since a prepared statement takes two calls to DuckDB and a statement one.
 */
function incomingStates(states: string): string {
  return `SELECT r->>0 AS site_id, r->>1 AS resource, ${instant('CAST(r->>2 AS DOUBLE)')} AS synced_to,
  ${instant('CAST(r->>3 AS DOUBLE)')} AS last_as_of, ${instant('CAST(r->>4 AS DOUBLE)')} AS updated_at, r->>5 AS run_id,
  r->>6 AS digest
FROM (SELECT unnest(CAST(${quoteLiteral(states)} AS JSON[])) AS r)`;
}

/**
 * Moves the stored sync states of `states` forward (incomingStates): the cursor never moves back
 * (a backfill of an older window keeps it), and a row is written only when it advances, so a
 * rerun of the same window writes nothing. Returns the site_id and resource of each row written.
 * An UPDATE, then syncStateInsertSql for the new ones, instead of an upsert (INSERT ... ON
 * CONFLICT), which DuckDB runs slower.
 */
export const syncStateAdvanceSql = (states: string): string => `
UPDATE sync_state SET
  synced_to = greatest(sync_state.synced_to, v.synced_to),
  last_as_of = greatest(sync_state.last_as_of, v.last_as_of),
  updated_at = v.updated_at,
  run_id = v.run_id,
  digest = v.digest
FROM (${incomingStates(states)}) v
WHERE sync_state.site_id = v.site_id AND sync_state.resource = v.resource
  AND (v.synced_to > sync_state.synced_to
    OR v.last_as_of > sync_state.last_as_of
    OR (sync_state.last_as_of IS NULL AND v.last_as_of IS NOT NULL)
    OR v.digest IS DISTINCT FROM sync_state.digest)
RETURNING sync_state.site_id, sync_state.resource`;

/** Inserts the sync states of `states` that are not stored yet; returns their site_id and resource. */
export const syncStateInsertSql = (states: string): string => `
INSERT INTO sync_state (site_id, resource, synced_to, last_as_of, updated_at, run_id, digest)
SELECT v.site_id, v.resource, v.synced_to, v.last_as_of, v.updated_at, v.run_id, v.digest
FROM (${incomingStates(states)}) v ANTI JOIN sync_state s USING (site_id, resource)
RETURNING site_id, resource`;

/** The last serving settings seen per model of a site, for the models staged in temp.models_in; $1 is now. */
export const SETTINGS_HISTORY_APPEND = `
INSERT INTO model_settings_history (site_id, model_id, observed_at, priority, serving_active)
SELECT m.site_id, m.model_id, ${instant('$1')}, m.priority, m.serving_active
FROM temp.models_in m
LEFT JOIN (
  SELECT site_id, model_id, priority, serving_active FROM model_settings_history
  WHERE model_id IN (SELECT model_id FROM temp.models_in)
  QUALIFY row_number() OVER (PARTITION BY site_id, model_id ORDER BY observed_at DESC) = 1
) last USING (site_id, model_id)
WHERE last.model_id IS NULL
   OR last.priority IS DISTINCT FROM m.priority
   OR last.serving_active IS DISTINCT FROM m.serving_active`;

export const STATES_APPEND = `
INSERT INTO model_states (site_id, model_id, state, state_at, details)
SELECT DISTINCT ON (site_id, model_id, state_at, state) s.site_id, s.model_id, s.state, s.state_at, s.details
FROM temp.model_states_in s
ANTI JOIN (
  SELECT site_id, model_id, state_at, state FROM model_states
  WHERE model_id IN (SELECT model_id FROM temp.model_states_in)
) e USING (site_id, model_id, state_at, state)`;

/**
 * Replaces, in `table`, the groups (rows sharing `groupKey`, one column or several: `site_id,
 * model_id`) whose staged rows in temp.<table>_in differ from the stored ones, comparing `columns`
 * only. `scope` is a query naming the group keys this load speaks for, so a group the load
 * emptied is emptied in the table too.
 */
export function changedGroupsSql(table: string, groupKey: string, columns: readonly string[], scope: string): string {
  const list = columns.join(', ');
  const stored = `SELECT ${list} FROM main.${table} WHERE (${groupKey}) IN (${scope})`;
  const staged = `SELECT ${list} FROM temp.${table}_in`;
  return `SELECT DISTINCT ${groupKey} FROM ((${staged} EXCEPT ALL ${stored}) UNION ALL (${stored} EXCEPT ALL ${staged}))`;
}
