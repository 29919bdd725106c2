// The sites ledger in the warehouse (migration 031): the sites efsync manages, every change an
// apply made or tried, and the newest drift check. Plan reads the managed sites from the
// published snapshot (no writer needed); apply and the drift job write under the writer lock.
import { instant } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { FieldChange } from './diff.js';

export interface ManagedSite {
  site_id: string;
  name: string;
  /** The file's name in the sites folder. */
  file: string;
  protect: boolean;
}

/** The sites efsync manages; none in a snapshot published before sites were managed. */
export async function managedSites(warehouse: Warehouse | null): Promise<ManagedSite[]> {
  if (!warehouse || !(await warehouse.hasTable('managed_sites'))) return [];
  return warehouse.all<ManagedSite>(`SELECT site_id, name, file, protect FROM managed_sites ORDER BY file, site_id`);
}

export interface Manage extends ManagedSite {
  contentHash: string;
}

/** Rows written by one statement: a thousand sites adopted in ten. */
const ROWS_A_STATEMENT = 100;

/**
 * Records that an apply saw the sites' files (each one's name, file and protect flag as the file
 * says now), in one transaction; how many rows changed (a row that already said all that is left).
 */
export async function recordManaged(warehouse: Warehouse, sites: readonly Manage[], runId: string | null, at: number) {
  const stored = new Map(
    (
      await warehouse.all<ManagedSite & { content_hash: string; managed_since: Date }>(
        `SELECT site_id, name, file, protect, content_hash, managed_since FROM managed_sites`,
      )
    ).map((row) => [row.site_id, row]),
  );
  const changed = sites.filter((site) => {
    const row = stored.get(site.site_id);
    return !(
      row &&
      row.name === site.name &&
      row.file === site.file &&
      row.protect === site.protect &&
      row.content_hash === site.contentHash
    );
  });
  await warehouse.transaction(async () => {
    for (let i = 0; i < changed.length; i += ROWS_A_STATEMENT) {
      const chunk = changed.slice(i, i + ROWS_A_STATEMENT);
      await warehouse.run(
        `DELETE FROM managed_sites WHERE site_id IN (${chunk.map((_, j) => `$${j + 1}`).join(', ')})`,
        chunk.map((site) => site.site_id),
      );
    }
    await insertRows(
      warehouse,
      'managed_sites',
      [false, false, false, false, false, true, true, false],
      changed.map((site) => [
        site.site_id,
        site.name,
        site.file,
        site.protect,
        site.contentHash,
        stored.get(site.site_id)?.managed_since.getTime() ?? at,
        at,
        runId,
      ]),
    );
  });
  return changed.length;
}

export async function forgetManaged(warehouse: Warehouse, siteId: string): Promise<void> {
  await warehouse.run(`DELETE FROM managed_sites WHERE site_id = $1`, [siteId]);
}

export interface ChangeRecord {
  runId: string | null;
  fingerprint: string;
  siteId: string | null;
  siteName: string;
  file: string | null;
  action: 'create' | 'update' | 'serving' | 'delete';
  gitCommit: string | null;
  at: number;
}

/** One row per field of `changes`, all with the same outcome. */
export async function recordChanges(
  warehouse: Warehouse,
  record: ChangeRecord,
  changes: readonly FieldChange[],
  error: string | null,
): Promise<void> {
  for (const change of changes) {
    await warehouse.run(
      `INSERT INTO site_changes VALUES ($1, $2, $3, $4, $5, $6, $7, $8::JSON, $9::JSON, $10, $11, $12, ${instant('$13')})`,
      [
        record.runId,
        record.fingerprint,
        record.siteId,
        record.siteName,
        record.file,
        record.action,
        change.field,
        change.before === undefined ? null : JSON.stringify(change.before),
        change.after === undefined ? null : JSON.stringify(change.after),
        error === null ? 'ok' : 'failed',
        error,
        record.gitCommit,
        record.at,
      ],
    );
  }
}

export type DriftState = 'in_sync' | 'drifted' | 'absent' | 'orphaned' | 'error';

export interface DriftRow {
  siteName: string;
  siteId: string | null;
  file: string | null;
  state: DriftState;
  fields: number;
  summary: string;
}

/** Replaces the drift table with what this check found, in one transaction. */
export async function recordDrift(warehouse: Warehouse, rows: readonly DriftRow[], runId: string, at: number) {
  await warehouse.transaction(async () => {
    await warehouse.run(`DELETE FROM site_drift`);
    await insertRows(
      warehouse,
      'site_drift',
      [false, false, false, false, false, false, true, false],
      rows.map((row) => [row.siteName, row.siteId, row.file, row.state, row.fields, row.summary, at, runId]),
    );
  });
}

/**
 * Inserts `rows` into `table` (every column, in order), ROWS_A_STATEMENT at a time; a column
 * `instants` marks is given in epoch milliseconds.
 */
async function insertRows(
  warehouse: Warehouse,
  table: string,
  instants: readonly boolean[],
  rows: readonly (string | number | boolean | null)[][],
): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_A_STATEMENT) {
    const chunk = rows.slice(i, i + ROWS_A_STATEMENT);
    const values = chunk.map(
      (_, r) =>
        `(${instants.map((isInstant, c) => (isInstant ? instant(`$${r * instants.length + c + 1}`) : `$${r * instants.length + c + 1}`)).join(', ')})`,
    );
    await warehouse.run(`INSERT INTO ${table} VALUES ${values.join(', ')}`, chunk.flat());
  }
}
