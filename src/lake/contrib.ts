/**
 * What runs other than a shard's sync keep in the lake (docs/lake.md, "Scoring a lake"):
 *
 *   - a shard's **contribution**: Delta tables `shard_<name>` in which every shard keeps exactly
 *     one set of rows, replaced whole by its next run: per table, one commit removes the shard's
 *     files and adds the new ones (copy-on-write of files that shard alone writes, so no other
 *     writer conflicts with it). Every row carries the shard (`shard_index`, `shard_count`) and
 *     the run that wrote it; a rerun never doubles a shard, and a shard of another N is another
 *     contribution;
 *   - a scratch warehouse seeded from the lake for a run that reads it (seed.ts), under a lock
 *     of the lake's own;
 *   - rows appended to a warehouse table of the lake (a reduce's results).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { quoteIdentifier } from '../warehouse/sql.js';
import { WriterLock } from '../warehouse/lock.js';
import { Warehouse } from '../warehouse/warehouse.js';
import type { Action } from './delta/actions.js';
import { commit } from './delta/commit.js';
import { writeDataFiles } from './delta/files.js';
import { listLog, logDir } from './delta/log.js';
import { snapshotSql } from './delta/scan.js';
import { readSnapshot } from './delta/snapshot.js';
import { type ColumnDefinition, ensureTable } from './delta/table.js';
import { clusterOrder, statsColumns } from './commit.js';
import {
  activeFiles,
  CONTRIBUTION_PREFIX,
  ensureLake,
  lakePath,
  LOCK_DIR,
  SEQ_TAG,
  STAGING_DIR,
  tableDir,
} from './layout.js';
import { warehouseSchema } from './schema.js';
import { type SeedOptions, seedFromLake } from './seed.js';
import { formatShard, type Shard, shardTag } from './shard.js';

/** One table of a contribution: the query of its rows (in the scratch warehouse) and their columns. */
export interface ContributionTable {
  /** The table is `shard_<name>` in the lake. */
  name: string;
  columns: readonly ColumnDefinition[];
  query: string;
}

/** The columns every contribution row starts with. */
export const CONTRIBUTION_COLUMNS: readonly ColumnDefinition[] = [
  { name: 'shard_index', type: 'INTEGER', comment: 'The shard (from 0) that contributed the row' },
  { name: 'shard_count', type: 'INTEGER', comment: 'The number of shards it was one of' },
  { name: 'run_id', type: 'VARCHAR', comment: 'The run that contributed it; its next run replaces the row' },
];

export function contributionDir(lake: string, name: string): string {
  return tableDir(lake, `${CONTRIBUTION_PREFIX}${name}`);
}

/** The file-name prefix of a shard's contribution files: not `part-<who>-`, so a sync's clean-up never takes them. */
function filePrefix(shard: Shard): string {
  return `part-contrib-${shardTag(shard)}`;
}

/**
 * Replaces the shard's contribution, table by table in the given order (put the table that
 * says what the others hold last: a run killed between two tables leaves them disagreeing, which
 * the reader detects). Returns the rows committed per table.
 */
export async function commitContribution(
  warehouse: Warehouse,
  lake: string,
  input: { shard: Shard; runId: string; tables: readonly ContributionTable[] },
): Promise<Record<string, number>> {
  const rows: Record<string, number> = {};
  const prefix = filePrefix(input.shard);
  for (const table of input.tables) {
    const dir = contributionDir(lake, table.name);
    await ensureTable(warehouse.connection, dir, {
      columns: [...CONTRIBUTION_COLUMNS, ...table.columns],
      partitionColumns: [],
      description: `Each shard's contribution (${table.name}), replaced by its next run (docs/lake.md)`,
    });
    const snapshot = await readSnapshot(warehouse.connection, dir);
    const mine = activeFiles(snapshot).filter((f) => basename(f.path).startsWith(`${prefix}-`));
    // each column as the table's schema types it, whatever type the query gave it
    const columns = table.columns
      .map((c) => `CAST(${quoteIdentifier(c.name)} AS ${c.type}) AS ${quoteIdentifier(c.name)}`)
      .join(', ');
    const adds = await warehouse.exclusive(() =>
      writeDataFiles(warehouse.connection, {
        table: dir,
        query: `SELECT ${input.shard.index}::INTEGER AS shard_index, ${input.shard.count}::INTEGER AS shard_count,
          '${input.runId.replace(/'/g, "''")}' AS run_id, ${columns} FROM (${table.query})`,
        partitionColumns: [],
        prefix: `${prefix}-${input.runId}`,
        statsColumns: ['shard_index', 'shard_count', 'run_id'],
        dataChange: true,
        staging: join(lakePath(lake), STAGING_DIR),
      }),
    );
    rows[table.name] = adds.reduce((sum, a) => sum + Number(JSON.parse(a.stats ?? '{}').numRecords ?? 0), 0);
    if (adds.length === 0 && mine.length === 0) continue;
    const now = Date.now();
    const actions: Action[] = [
      ...mine.map((f) => ({
        remove: {
          path: f.path,
          deletionTimestamp: now,
          dataChange: true,
          extendedFileMetadata: true,
          partitionValues: f.add.partitionValues,
          size: f.add.size,
        },
      })),
      ...adds.map((add) => ({ add })),
    ];
    await commit({
      table: dir,
      readVersion: snapshot.version,
      operation: mine.length > 0 ? 'MERGE' : 'WRITE',
      readFiles: mine.map((f) => f.path),
      actions,
      info: { efsync: { kind: 'contribution', run_id: input.runId, shard: formatShard(input.shard) } },
    });
  }
  return rows;
}

/** A SELECT of every shard's contribution to `name` (every row of the table's newest snapshot); null when none has contributed yet. */
export async function contributionSql(db: DuckDBConnection, lake: string, name: string): Promise<string | null> {
  const dir = contributionDir(lake, name);
  if (!existsSync(logDir(dir)) || listLog(dir).commits.length === 0) return null;
  return snapshotSql(await readSnapshot(db, dir));
}

/** Holds the lake's lock `name` (`_locks/<name>.lock`) while `fn` runs: one such process at a time. */
export async function withLakeLock<T>(
  lake: string,
  name: string,
  holder: { job: string; runId: string },
  waitMs: number,
  fn: () => Promise<T>,
): Promise<T> {
  await ensureLake(lake);
  const lock = await WriterLock.acquire(
    join(lakePath(lake), LOCK_DIR, `${name}.lock`),
    `lake ${lake} ${name}`,
    holder,
    waitMs,
  );
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

/** A migrated, empty warehouse in a temp folder for `fn`; removed after. */
export async function withScratch<T>(
  holder: { job: string; runId: string },
  fn: (warehouse: Warehouse) => Promise<T>,
): Promise<T> {
  const scratch = mkdtempSync(join(tmpdir(), `efsync-lake-${holder.job.replace(/\W+/g, '-')}-`));
  try {
    const warehouse = await Warehouse.open({ path: join(scratch, 'scratch.duckdb'), lockWaitMs: 0, holder });
    try {
      return await fn(warehouse);
    } finally {
      await warehouse.close();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The same, seeded from the lake as a shard's sync is (seed.ts). */
export function withSeededScratch<T>(
  lake: string,
  seed: SeedOptions,
  holder: { job: string; runId: string },
  fn: (warehouse: Warehouse) => Promise<T>,
): Promise<T> {
  return withScratch(holder, async (warehouse) => {
    await seedFromLake(warehouse, lake, seed);
    return fn(warehouse);
  });
}

/**
 * Appends every row of the warehouse's table `name` to the lake's table of that name, in one
 * Delta commit (`who` names the writer in the files' names). For tables whose rows each run
 * writes once under its own key (accuracy_runs, accuracy_results).
 */
export async function appendToLake(
  warehouse: Warehouse,
  lake: string,
  name: string,
  writer: { who: string; runId: string },
): Promise<number> {
  const table = (await warehouseSchema()).tables.find((t) => t.name === name);
  if (!table || table.partition !== null) throw new Error(`${name} is not an unpartitioned table of the lake`);
  const dir = tableDir(lake, name);
  const readVersion = listLog(dir).commits.at(-1) ?? -1;
  const adds = await warehouse.exclusive(() =>
    writeDataFiles(warehouse.connection, {
      table: dir,
      query: `SELECT * FROM main.${quoteIdentifier(name)} ORDER BY ${clusterOrder(table)}`,
      partitionColumns: [],
      prefix: `part-${writer.who}-${writer.runId}`,
      statsColumns: statsColumns(table),
      dataChange: true,
      staging: join(lakePath(lake), STAGING_DIR),
      tags: { [SEQ_TAG]: String(Date.now()) },
    }),
  );
  if (adds.length === 0) return 0;
  await commit({
    table: dir,
    readVersion,
    operation: 'WRITE',
    actions: adds.map((add) => ({ add })),
    info: { efsync: { kind: writer.who, run_id: writer.runId, shard: null } },
  });
  return adds.reduce((sum, a) => sum + Number(JSON.parse(a.stats ?? '{}').numRecords ?? 0), 0);
}
