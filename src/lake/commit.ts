/**
 * Commits a shard run's scratch warehouse to the lake, one Delta commit per table that changed,
 * copy-on-write (rewrite.ts): the rows that differ from what was seeded are written by DuckDB as
 * Parquet (staged under <lake>/_staging/, then renamed into the table's folder) together with
 * the rows kept from each active file that held a key they supersede, and the commit removes
 * those files and adds the new ones, so a Delta reader sees one row per key. A commit that loses
 * to a conflicting one (it removed a file this one rewrites, or added a key this one supersedes)
 * is planned again on the new snapshot, a few times with backoff. Each commit carries a `txn`
 * action (appId efsync-<shard>-<table>, the shard's run number as version): an error whose
 * outcome is unknown is settled by the snapshot's txn version. Delta commits one table at a
 * time: the revisions first, then the series and small tables, sync_state and the run ledger
 * last, so a shard killed between two tables has never advanced a sync state past rows the lake
 * lacks, nor lost the revision of an actual it revised, and its rerun (seeded from what did
 * land) commits the rest.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { rmSync } from 'node:fs';
import { quoteIdentifier } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { DeltaConflictError } from '../errors.js';
import type { AddFile, RemoveFile } from './delta/actions.js';
import { commit } from './delta/commit.js';
import { writeDataFiles } from './delta/files.js';
import { readSnapshot, type Snapshot } from './delta/snapshot.js';
import {
  activeFiles,
  lakeFile,
  lakePath,
  MONTH,
  OWNER_TAG,
  SEQ_TAG,
  STAGING_DIR,
  tableDir,
  type LakeFile,
} from './layout.js';
import { dropChanges, filesHolding, rewriteSql, stageChanges } from './rewrite.js';
import { warehouseSchema, type TableSchema } from './schema.js';
import { formatShard, type Shard } from './shard.js';
import { join } from 'node:path';

export interface CommitInput {
  lake: string;
  /** File-name tag of the writer (s1of4). */
  who: string;
  shard: Shard | undefined;
  runId: string;
}

export interface Committed {
  /** Rows committed per table (only non-zero), kept rows of rewritten files included. */
  rows: Record<string, number>;
  files: number;
  /** Files removed: rewritten without the rows they superseded. */
  removed: number;
  /** The Delta version committed per table. */
  versions: Record<string, number>;
  /** The shard's run number: the version of its commits' txn actions. */
  run: number;
  /** Plans lost to a conflicting commit and made again. */
  replans: number;
}

/**
 * Tables committed first: the revisions before the actuals they revise, since a rerun seeded
 * with revised actuals could no longer see the revision (it writes it again instead, replacing
 * the row of the same key).
 */
const FIRST = ['actual_revisions', 'actual_revisions_by_type'];
/** Tables committed last: the watermark and the run's ledger rows land after the data they describe. */
const LAST = ['sync_state', 'runs', 'run_failures'];

/** Plans of one table's commit before the run fails (each lost to a conflicting commit). */
const MAX_PLANS = 8;
const REPLAN_BACKOFF_MS = 50;

/** The order a shard commits the tables in. */
export function commitOrder<T extends { name: string }>(tables: readonly T[]): T[] {
  const middle = tables.filter((t) => !FIRST.includes(t.name) && !LAST.includes(t.name));
  return [...tables.filter((t) => FIRST.includes(t.name)), ...middle, ...tables.filter((t) => LAST.includes(t.name))];
}

export async function commitToLake(warehouse: Warehouse, input: CommitInput): Promise<Committed> {
  const ordered = commitOrder((await warehouseSchema()).tables);
  const run = (await lastRun(warehouse, input, ordered)) + 1;
  const committed: Committed = { rows: {}, files: 0, removed: 0, versions: {}, run, replans: 0 };
  for (const table of ordered) {
    const changes = await warehouse.exclusive(() => stageChanges(warehouse, table));
    try {
      if (changes.rows === 0 && changes.gone === 0) continue;
      await commitTable(warehouse, input, table, run, committed);
    } finally {
      await dropChanges(warehouse);
    }
  }
  return committed;
}

/** The txn appId of a shard's commits to a table. */
export function txnAppId(who: string, table: string): string {
  return `efsync-${who}-${table}`;
}

/** The highest run number of the shard's commits to any table (0 before its first). */
async function lastRun(warehouse: Warehouse, input: CommitInput, tables: readonly TableSchema[]): Promise<number> {
  let last = 0;
  for (const table of tables) {
    const snapshot = await snapshotOf(warehouse, tableDir(input.lake, table.name));
    last = Math.max(last, snapshot.txns.get(txnAppId(input.who, table.name))?.version ?? 0);
  }
  return last;
}

function snapshotOf(warehouse: Warehouse, dir: string): Promise<Snapshot> {
  return warehouse.exclusive(() => readSnapshot(warehouse.connection, dir));
}

/** One table's copy-on-write commit, planned again when a conflicting commit lands first. */
async function commitTable(
  warehouse: Warehouse,
  input: CommitInput,
  table: TableSchema,
  run: number,
  committed: Committed,
): Promise<void> {
  const dir = tableDir(input.lake, table.name);
  const appId = txnAppId(input.who, table.name);
  for (let plan = 1; ; plan++) {
    const snapshot = await snapshotOf(warehouse, dir);
    const holding = await warehouse.exclusive(() => filesHolding(warehouse, table, dir, activeFiles(snapshot)));
    const adds = await writeFiles(warehouse, input, table, rewriteSql(table, dir, holding));
    if (adds.length === 0 && holding.length === 0) return;
    try {
      const done = await commit({
        table: dir,
        readVersion: snapshot.version,
        operation: holding.length > 0 ? 'MERGE' : 'WRITE',
        readFiles: holding.map((f) => f.path),
        actions: [
          { txn: { appId, version: run, lastUpdated: Date.now() } },
          ...holding.map((f) => ({ remove: removal(f) })),
          ...adds.map((add) => ({ add })),
        ],
        conflicts: (others) => addsConflict(warehouse, table, dir, others),
        info: { efsync: { kind: 'sync', run_id: input.runId, shard: formatShard(input.shard) } },
      });
      committed.rows[table.name] = adds.reduce(
        (sum, a) => sum + Number(JSON.parse(a.stats ?? '{}').numRecords ?? 0),
        0,
      );
      committed.files += adds.length;
      committed.removed += holding.length;
      committed.versions[table.name] = done.version;
      return;
    } catch (error) {
      // A commit that failed after its entry may have landed: the snapshot's txn says.
      const txn = (await snapshotOf(warehouse, dir)).txns.get(appId);
      if (!(error instanceof DeltaConflictError) && txn !== undefined && txn.version >= run) return;
      for (const add of adds) rmSync(lakeFile(dir, add).file, { force: true });
      if (!(error instanceof DeltaConflictError) || plan >= MAX_PLANS) throw error;
      committed.replans += 1;
      await sleep(REPLAN_BACKOFF_MS * 2 ** (plan - 1) * (0.5 + Math.random()));
    }
  }
}

/** Writes the rows of `query` as new files of the table; their adds. */
async function writeFiles(
  warehouse: Warehouse,
  input: CommitInput,
  table: TableSchema,
  query: string,
): Promise<AddFile[]> {
  const dir = tableDir(input.lake, table.name);
  return warehouse.exclusive(() =>
    writeDataFiles(warehouse.connection, {
      table: dir,
      query: `SELECT *${table.partition === 'month' ? `, ${monthOf('valid_time')} AS ${MONTH}` : ''} FROM (${query}) ORDER BY ${clusterOrder(table)}`,
      partitionColumns: table.partition === 'month' ? [MONTH] : [],
      prefix: `part-${input.who}-${input.runId}`,
      statsColumns: statsColumns(table),
      dataChange: true,
      staging: join(lakePath(input.lake), STAGING_DIR),
      tags: { [SEQ_TAG]: String(Date.now()), [OWNER_TAG]: input.who },
    }),
  );
}

function removal(file: LakeFile): RemoveFile {
  return {
    path: file.path,
    deletionTimestamp: Date.now(),
    dataChange: true,
    extendedFileMetadata: true,
    partitionValues: file.add.partitionValues,
    size: file.add.size,
  };
}

/** Why another writer's adds, landed first, invalidate this commit's plan: they hold a key it supersedes. */
async function addsConflict(
  warehouse: Warehouse,
  table: TableSchema,
  dir: string,
  adds: AddFile[],
): Promise<string | null> {
  const files = adds.map((add) => lakeFile(dir, add));
  const [held] = await warehouse.exclusive(() => filesHolding(warehouse, table, dir, files));
  return held ? `it added ${held.path}, which holds rows this commit supersedes` : null;
}

/** UTC month (YYYY-MM) of a TIMESTAMPTZ column, whatever the session's time zone. */
export function monthOf(column: string): string {
  return `strftime(make_timestamp(epoch_us(${quoteIdentifier(column)})), '%Y-%m')`;
}

/** Key columns first, site first: the order files are sorted in, so row-group min/max let readers skip other sites. */
function keyColumns(table: TableSchema): string[] {
  const names = table.columns.map((c) => c.name);
  const key =
    table.resolve.kind === 'latest' ? [...table.resolve.key] : names.includes('site_id') ? ['site_id'] : [names[0]];
  return names.includes('site_id') ? ['site_id', ...key.filter((k) => k !== 'site_id')] : key;
}

export function clusterOrder(table: TableSchema): string {
  return keyColumns(table).map(quoteIdentifier).join(', ');
}

/** The add stats' columns: the key columns and valid_time, where a table has one. */
export function statsColumns(table: TableSchema): string[] {
  const names = table.columns.map((c) => c.name);
  return [...new Set([...keyColumns(table), ...(names.includes('valid_time') ? ['valid_time'] : [])])];
}
