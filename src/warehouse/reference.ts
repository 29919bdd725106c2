// The reference tables (sites with their assets and capacity segments, models with their states
// and settings history, interval labels): staged as one JSON parameter each, and the groups that
// changed rewritten, in one transaction per load. A site whose rows are those it was last loaded
// with (reference_digests) is left out of the load before anything is staged.
import { createHash } from 'node:crypto';
import { chunksOf } from './executor.js';
import { SETTINGS_HISTORY_APPEND, STATES_APPEND, changedGroupsSql } from './merge.js';
import { addRows, type ModelRows, type RowsWritten, type SiteRows } from './rows.js';
import { instant, sqlList } from './sql.js';
import type { Warehouse } from './warehouse.js';

/** A load's rows per reference table; every row names its site (`site_id`). */
type ReferenceRows = Record<string, readonly Readonly<Record<string, unknown>>[]>;

/** The loads whose sites' digests are kept: one digest per site over every table of the load. */
type ReferenceResource = 'sites' | 'models';

/** A column of a reference table, as the migrated schema declares it. */
interface RefColumn {
  name: string;
  /** Its SQL type, as duckdb_columns() names it. */
  type: string;
  /** Instants come as epoch ms and are converted in SQL. */
  instant: boolean;
  /** Bookkeeping (synced_at): stamped by the loader, and a change here alone is no change. */
  bookkeeping: boolean;
}

const BOOKKEEPING = new Set(['synced_at']);

/** The reference tables' columns per warehouse, read once from its schema (migrations run at open). */
const schemas = new WeakMap<Warehouse, Map<string, RefColumn[]>>();

/** The columns of reference table `table`, in order, from the migrated schema: not repeated here. */
async function columnsOf(warehouse: Warehouse, table: string): Promise<RefColumn[]> {
  const tables = schemas.get(warehouse) ?? new Map<string, RefColumn[]>();
  schemas.set(warehouse, tables);
  let columns = tables.get(table);
  if (!columns) {
    const rows = await warehouse.all<{ name: string; type: string }>(
      `SELECT column_name AS name, data_type AS type FROM duckdb_columns()
       WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1 ORDER BY column_index`,
      [table],
    );
    columns = rows.map(({ name, type }) => ({
      name,
      type,
      instant: type === 'TIMESTAMP WITH TIME ZONE',
      bookkeeping: BOOKKEEPING.has(name),
    }));
    tables.set(table, columns);
  }
  return columns;
}

/**
 * Empty staging tables temp.<table>_in for the given tables, shaped as theirs, then their rows
 * staged (stageRows). One statement each to empty them (a create if missing and a delete for every
 * one of the five would be two statements a table, a good share of a resync's).
 */
async function stageAll(
  warehouse: Warehouse,
  now: number,
  rowsByTable: Record<string, readonly Readonly<Record<string, unknown>>[]>,
): Promise<void> {
  for (const [table, rows] of Object.entries(rowsByTable)) {
    await warehouse.run(`CREATE OR REPLACE TEMP TABLE ${table}_in AS SELECT * FROM main.${table} LIMIT 0`);
    await stageRows(warehouse, table, rows, now);
  }
}

/**
 * Text of the staged rows one statement takes. DuckDB parses a JSON parameter whole, at several
 * times its size in memory: a site list's 3,000 sites in one statement (~3 MB) ran out of 31 MiB.
 */
const STAGE_JSON_CHARS = 256 * 1024;

/**
 * Stages rows into temp.<table>_in: the rows travel as JSON array parameters of at most
 * STAGE_JSON_CHARS (each row its values in column order, bookkeeping columns stamped `now`),
 * unnested and cast in SQL. (Multi-row VALUES with a parameter and a cast per value is slow to
 * bind, row by row.)
 */
async function stageRows(
  warehouse: Warehouse,
  table: string,
  rows: readonly Readonly<Record<string, unknown>>[],
  now: number,
): Promise<void> {
  if (rows.length === 0) return;
  const columns = await columnsOf(warehouse, table);
  const names = columns.map((c) => c.name).join(', ');
  const values = columns.map((c, i) => fromJson(i, c)).join(', ');
  const insert = `INSERT INTO temp.${table}_in (${names}) SELECT ${values} FROM (SELECT unnest(CAST($1 AS JSON[])) AS r)`;
  // undefined in a row becomes null, as JSON.stringify does in arrays
  const texts = rows.map((row) => {
    const text = JSON.stringify(columns.map((c) => (c.bookkeeping ? now : row[c.name])));
    return { key: text, rows: text.length + 1 };
  });
  for (const { keys } of chunksOf(texts, STAGE_JSON_CHARS)) await warehouse.run(insert, [`[${keys.join(',')}]`]);
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
 * Rewrites the groups of `table` whose staged rows differ from the stored ones (see
 * changedGroupsSql); returns the rows written (an update counts once).
 */
async function replaceChanged(warehouse: Warehouse, table: string, groupKey: string, scope: string): Promise<number> {
  const compared = (await columnsOf(warehouse, table)).filter((c) => !c.bookkeeping).map((c) => c.name);
  await warehouse.run(
    `CREATE OR REPLACE TEMP TABLE changed_groups AS ${changedGroupsSql(table, groupKey, compared, scope)}`,
  );
  const changedKeys = `SELECT ${groupKey} FROM temp.changed_groups`;
  const deleted = await warehouse.changed(`DELETE FROM main.${table} WHERE (${groupKey}) IN (${changedKeys})`);
  const inserted = await warehouse.changed(
    `INSERT INTO main.${table} SELECT * FROM temp.${table}_in WHERE (${groupKey}) IN (${changedKeys})`,
  );
  return Math.max(deleted, inserted);
}

/**
 * Stages `rowsByTable` (stageAll) for the sites whose rows changed (changedSites), then in one
 * transaction writes what changed (`write`, run in order, the rows written per table) and those
 * sites' digests; holding the connection throughout. Nothing changed: no statement but the read of
 * the digests.
 */
function loadReference(
  warehouse: Warehouse,
  now: number,
  resource: ReferenceResource,
  rowsByTable: ReferenceRows,
  write: () => Promise<RowsWritten>,
): Promise<RowsWritten> {
  return warehouse.exclusive(async () => {
    const { rows, digests } = await changedSites(warehouse, resource, rowsByTable);
    if (digests.length === 0) return {};
    await stageAll(warehouse, now, rows);
    return warehouse.transaction(async () => {
      const written = addRows({}, await write());
      await saveDigests(warehouse, resource, digests);
      return written;
    });
  });
}

/**
 * The rows of the sites whose digest differs from the one stored with their last load, and those
 * sites' new digests. A site given the same rows again would have them compared equal to the
 * stored ones and nothing written: leaving it out saves the load's statements, most of a quiet
 * sync's DuckDB time. A site's digest is a SHA-256 of its rows in every table, in the order given,
 * each as the values staged but the bookkeeping columns (the JSON stageRows sends): rows that
 * stage differently digest differently.
 */
async function changedSites(
  warehouse: Warehouse,
  resource: ReferenceResource,
  rowsByTable: ReferenceRows,
): Promise<{ rows: ReferenceRows; digests: [site: string, digest: string][] }> {
  const staged = new Map<string, unknown[]>();
  for (const [table, rows] of Object.entries(rowsByTable)) {
    const compared = (await columnsOf(warehouse, table)).filter((c) => !c.bookkeeping);
    for (const row of rows) {
      const site = String(row.site_id);
      const values = staged.get(site) ?? [];
      staged.set(site, values);
      values.push(
        table,
        compared.map((c) => row[c.name]),
      );
    }
  }
  if (staged.size === 0) return { rows: rowsByTable, digests: [] };
  const stored = new Map(
    (
      await warehouse.all<{ site_id: string; digest: string }>(
        `SELECT site_id, digest FROM reference_digests WHERE resource = $1 AND site_id IN (${sqlList([...staged.keys()])})`,
        [resource],
      )
    ).map((row) => [row.site_id, row.digest]),
  );
  const digests: [string, string][] = [];
  for (const [site, values] of staged) {
    const digest = createHash('sha256').update(JSON.stringify(values)).digest('base64url');
    if (stored.get(site) !== digest) digests.push([site, digest]);
  }
  if (digests.length === staged.size) return { rows: rowsByTable, digests };
  const changed = new Set(digests.map(([site]) => site));
  const rows = Object.fromEntries(
    Object.entries(rowsByTable).map(([table, tableRows]) => [
      table,
      tableRows.filter((row) => changed.has(String(row.site_id))),
    ]),
  );
  return { rows, digests };
}

/** Replaces the stored digests of the sites loaded, in the load's transaction. */
async function saveDigests(
  warehouse: Warehouse,
  resource: ReferenceResource,
  digests: readonly [site: string, digest: string][],
): Promise<void> {
  await warehouse.run(
    `DELETE FROM reference_digests WHERE resource = $1 AND site_id IN (${sqlList(digests.map(([site]) => site))})`,
    [resource],
  );
  await warehouse.run(
    `INSERT INTO reference_digests (site_id, resource, digest)
     SELECT r->>0, $1, r->>1 FROM (SELECT unnest(CAST($2 AS JSON[])) AS r)`,
    [resource, JSON.stringify(digests)],
  );
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
  const scope = 'SELECT site_id FROM temp.sites_in';
  return loadReference(
    warehouse,
    options.now ?? Date.now(),
    'sites',
    {
      sites: sites.map((rows) => rows.site),
      site_assets: sites.flatMap((rows) => rows.assets),
      site_capacity: sites.flatMap((rows) => rows.capacity),
    },
    async () => ({
      sites: await replaceChanged(warehouse, 'sites', 'site_id', scope),
      site_assets: await replaceChanged(warehouse, 'site_assets', 'site_id', scope),
      site_capacity: await replaceChanged(warehouse, 'site_capacity', 'site_id', scope),
    }),
  );
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
 * for all of them, whole sites, so a reader never sees half a site: the statements cost about the
 * same whatever the number of sites, so a sync loads the models of many sites at once.
 */
export async function loadModels(
  warehouse: Warehouse,
  models: readonly ModelRows[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  const scope = 'SELECT site_id, model_id FROM temp.models_in';
  return loadReference(
    warehouse,
    now,
    'models',
    { models: models.map((rows) => rows.model), model_states: models.flatMap((rows) => rows.states) },
    async () => ({
      models: await replaceChanged(warehouse, 'models', 'site_id, model_id', scope),
      model_states: await warehouse.changed(STATES_APPEND),
      model_settings_history: await warehouse.changed(SETTINGS_HISTORY_APPEND, [now]),
    }),
  );
}
