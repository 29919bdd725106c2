/**
 * The lake on disk (docs/lake.md): one Delta table per warehouse table.
 *
 *   <lake>/<table>/_delta_log/%020d.json                       the table's commits (src/lake/delta/)
 *   <lake>/<table>/_delta_log/%020d.checkpoint.parquet         every 10 commits or so, by the compactor
 *   <lake>/<table>/month=YYYY-MM/part-<who>-<run>-<id>-<k>.parquet   month-partitioned tables
 *   <lake>/<table>/part-<who>-<run>-<id>-0.parquet             the other tables
 *   <lake>/<table>/_schema.parquet       0 rows, the table's columns: the views' glob always matches
 *   <lake>/shard_<name>/                  a Delta table of the shards' contributions (contrib.ts): no warehouse table
 *   <lake>/_staging/<id>/                 files DuckDB is writing (never in a table's folder)
 *   <lake>/_locks/<who>.lock              one process per shard, one compactor
 *
 * `<who>` is the shard tag (s1of4) or `compact`. A file is in the table when the table's log
 * adds it and no later commit removes it; a data file no commit names is invisible to every
 * Delta reader, and `lake vacuum` deletes it once older than the retention.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, mkdirSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { basename, join, relative, resolve, sep } from 'node:path';
import { openDuckDB } from '../warehouse/duckdb.js';
import { quoteIdentifier, quoteLiteral } from '../warehouse/sql.js';
import type { AddFile, CommitInfo } from './delta/actions.js';
import { fsyncPath } from './delta/commit.js';
import { listLog, logDir, readCommit } from './delta/log.js';
import { readSnapshot, type Snapshot } from './delta/snapshot.js';
import { ensureTable, type Ensured, type TableDefinition } from './delta/table.js';
import { migratedInMemory, warehouseSchema, type TableSchema } from './schema.js';

export const STAGING_DIR = '_staging';
export const LOCK_DIR = '_locks';
export const SCHEMA_FILE = '_schema.parquet';
/** The partition column of the month-partitioned tables: the UTC month (YYYY-MM) of valid_time. */
export const MONTH = 'month';
/**
 * The add tag holding a file's commit order (epoch ms of the commit that first wrote its rows; a
 * compacted file keeps the largest of its inputs): the newest row per key wins (read.ts). Not
 * the Delta version, since a compaction commits after shards that committed newer rows.
 */
export const SEQ_TAG = 'efsync.seq';
/** The folders of the shards' contributions (contrib.ts): Delta tables that are no warehouse table. */
export const CONTRIBUTION_PREFIX = 'shard_';
/**
 * The add tag naming the writer whose rows a file holds (s1of4): a shard rewrites its own files
 * copy-on-write, and the compactor merges each owner's files apart, so shards rarely rewrite
 * the same file. Files without it (written before it existed) belong to no one.
 */
export const OWNER_TAG = 'efsync.owner';

export function lakePath(lake: string): string {
  return resolve(lake);
}

export function tableDir(lake: string, table: string): string {
  return join(lakePath(lake), table);
}

/** The Delta definition of a warehouse table: its columns, and `month` as the partition column where it has one. */
export function tableDefinition(table: TableSchema): TableDefinition {
  const columns = table.columns.map((c) => ({ name: c.name, type: c.type, comment: c.comment }));
  if (table.partition !== 'month') return { columns, partitionColumns: [], description: table.comment };
  return {
    columns: [...columns, { name: MONTH, type: 'VARCHAR', comment: 'UTC month (YYYY-MM) of valid_time' }],
    partitionColumns: [MONTH],
    description: table.comment,
  };
}

/** A lake is there when its folder holds the Delta table of `sites`. */
export function isLake(lake: string): boolean {
  return existsSync(logDir(tableDir(lake, 'sites')));
}

/**
 * Creates the lake's folders and every table as a Delta table (adding the columns a newer
 * efsync's migrations added), with its empty typed `_schema.parquet`. Idempotent; what each
 * table needed, by name. `efsync lake init` runs it before shards start; a shard runs it too,
 * and finds nothing to do.
 */
export async function ensureLake(
  lake: string,
  options: { rewriteSchemas?: boolean } = {},
): Promise<Map<string, Ensured>> {
  const root = lakePath(lake);
  for (const dir of [STAGING_DIR, LOCK_DIR]) mkdirSync(join(root, dir), { recursive: true });
  const schema = await warehouseSchema();
  const ensured = new Map<string, Ensured>();
  const db = await migratedInMemory();
  try {
    for (const table of schema.tables) {
      const dir = tableDir(lake, table.name);
      ensured.set(table.name, await ensureTable(db.connection, dir, tableDefinition(table)));
      if (options.rewriteSchemas || !existsSync(join(dir, SCHEMA_FILE)))
        await writeSchemaFile(db.connection, root, table);
    }
  } finally {
    db.close();
  }
  return ensured;
}

/** The table's 0-row Parquet file, landed by rename (shards starting at once all write it). */
async function writeSchemaFile(db: DuckDBConnection, root: string, table: TableSchema): Promise<void> {
  const draft = join(root, STAGING_DIR, `schema-${table.name}-${process.pid}-${Date.now()}.parquet`);
  await db.run(`COPY main.${quoteIdentifier(table.name)} TO ${quoteLiteral(draft)} (FORMAT parquet)`);
  fsyncPath(draft);
  renameSync(draft, join(root, table.name, SCHEMA_FILE));
  fsyncPath(join(root, table.name));
}

/** The newest snapshot of every table of the lake: the warehouse's, then the shards' contributions there are. */
export async function lakeSnapshots(db: DuckDBConnection, lake: string): Promise<Map<string, Snapshot>> {
  const snapshots = new Map<string, Snapshot>();
  for (const table of (await warehouseSchema()).tables)
    snapshots.set(table.name, await readSnapshot(db, tableDir(lake, table.name)));
  for (const entry of safeEntries(lakePath(lake))) {
    const dir = tableDir(lake, entry.name);
    const isTable = entry.isDirectory() && existsSync(logDir(dir)) && listLog(dir).commits.length > 0;
    if (entry.name.startsWith(CONTRIBUTION_PREFIX) && isTable) snapshots.set(entry.name, await readSnapshot(db, dir));
  }
  return snapshots;
}

export interface LakeFile {
  /** Relative to the table, as the log names it. */
  path: string;
  /** Absolute path. */
  file: string;
  rows: number;
  seq: number;
  add: AddFile;
}

/** The active files of a snapshot, with their rows (from the add's stats) and commit order. */
export function activeFiles(snapshot: Snapshot): LakeFile[] {
  return [...snapshot.files.values()].map((add) => lakeFile(snapshot.table, add));
}

/** A file an add of `table` (its folder) names. */
export function lakeFile(table: string, add: AddFile): LakeFile {
  return {
    path: add.path,
    file: join(table, ...decodeURIComponent(add.path).split('/')),
    rows: add.stats ? Number((JSON.parse(add.stats) as { numRecords?: number }).numRecords ?? 0) : 0,
    seq: Number(add.tags?.[SEQ_TAG] ?? 0),
    add,
  };
}

/** Every table's active files (for tests and the bench), opening its own DuckDB. */
export async function lakeFiles(lake: string): Promise<Map<string, LakeFile[]>> {
  const db = await openDuckDB(':memory:');
  try {
    const files = new Map<string, LakeFile[]>();
    for (const [name, snapshot] of await lakeSnapshots(db.connection, lake)) files.set(name, activeFiles(snapshot));
    return files;
  } finally {
    db.close();
  }
}

/** The commitInfo of every commit of `table`, by version: who committed what (efsync's `efsync` field). */
export function tableCommits(lake: string, table: string): { version: number; info: CommitInfo }[] {
  const dir = tableDir(lake, table);
  return listLog(dir).commits.flatMap((version) =>
    readCommit(dir, version).flatMap((a) => ('commitInfo' in a ? [{ version, info: a.commitInfo }] : [])),
  );
}

/**
 * Deletes the data files an earlier process of `who` wrote into the tables without committing
 * them (killed between its files and its commit): `part-<who>-*` files no add of the log names,
 * active or removed. Call it holding `who`'s lock. They are invisible to readers anyway; this
 * only spares them waiting for vacuum.
 */
export async function removeUncommitted(db: DuckDBConnection, lake: string, who: string): Promise<string[]> {
  const removed: string[] = [];
  for (const [name, snapshot] of await lakeSnapshots(db, lake)) {
    const named = new Set(
      [...snapshot.files.values(), ...snapshot.tombstones.values()].map((f) => decodeURIComponent(f.path)),
    );
    const dir = tableDir(lake, name);
    for (const file of dataFiles(dir)) {
      const path = relative(dir, file).split(sep).join('/');
      if (basename(file).startsWith(`part-${who}-`) && !named.has(path)) {
        unlinkSync(file);
        removed.push(`${name}/${path}`);
      }
    }
  }
  return removed;
}

/** The Parquet data files under a table's folder (not its log, not its schema file). */
export function dataFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of safeEntries(dir)) {
    const path = join(dir, entry.name);
    if (entry.name.startsWith('_') || entry.name.startsWith('.')) continue;
    if (entry.isDirectory()) files.push(...dataFiles(path));
    else if (entry.name.endsWith('.parquet')) files.push(path);
  }
  return files;
}

export function safeEntries(dir: string) {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
