/**
 * The writer file (`<dir>/<base>.writer.duckdb`): how it is made, migrated, and what happens when
 * it will not open. Called with the writer lock held. A kill at any instant leaves either a
 * writer file that opens or none, and nothing published is ever lost:
 *
 * - a missing writer file is built as a draft (a copy of the published snapshot, or empty),
 *   migrated and checkpointed there, then renamed into place; a kill mid-way leaves only a draft,
 *   removed by the next open;
 * - pending migrations, and a views definition (views.sql) other than the one applied, are
 *   applied to an existing writer file the same way, to a copy of it;
 * - a writer file already up to date (newest migration, views as defined) is opened without any write;
 * - a writer file DuckDB cannot open (a WAL it cannot replay, a torn file) is moved aside, with
 *   its WAL, under a timestamped name and rebuilt from the published snapshot, so the next sync
 *   continues from the snapshot's sync state. A writer file made from the snapshot gets its
 *   series tables back from the views the publish made of them (unpresentCold), and no warehouse_info;
 * - a writer file mostly free space (the cold store moved days out of it) is compacted the same
 *   way, through a draft, so what a publish copies is the size of the data (compactIfMostlyFree,
 *   also run by the publish).
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, constants, copyFileSync, existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { unpresentCold } from './cold.js';
import { DiskFullError, explainDiskFull, fsyncPath } from './disk.js';
import { openDuckDB, type DuckDBHandle } from './duckdb.js';
import { skippedForMemory } from './executor.js';
import { dropWarehouseInfo } from './info.js';
import { WarehouseBusyError } from './lock.js';
import { migrate, schemaBehind } from './migrate.js';
import { quoteIdentifier, quoteLiteral } from './sql.js';

/**
 * Free space a writer file may hold (when also over a third of it) before it is compacted at
 * open. A nightly move frees about one day of the hot window, which the next night's rows
 * reuse, so a compacted file stays under it.
 */
const COMPACT_FREE_BYTES = 8 * 1024 * 1024;

export interface Recovery {
  /** Where the writer file that would not open went (its WAL, if any, beside it with `.wal`). */
  movedTo: string;
  /** Why it would not open: DuckDB's error, first line. */
  reason: string;
  /** `published snapshot` or `empty warehouse` (nothing was published yet). */
  rebuiltFrom: string;
}

export interface OpenedWriterFile extends DuckDBHandle {
  /** Set when the writer file would not open and was rebuilt. */
  recovery: Recovery | null;
  /** Why a compaction the file needed was left to the next open (out of memory or disk), or null. */
  compactionSkipped: string | null;
}

/**
 * `compactAboveBytes`: the free space a writer file may hold, when over a third of it, before it
 * is compacted; `memoryLimit`: DuckDB's memory for every instance opened here (the writer's, and
 * the drafts a rebuild, a migration or a compaction fills), null for DuckDB's default.
 */
export async function openWriterFile(
  publishedPath: string,
  writerPath: string,
  options: { compactAboveBytes?: number; memoryLimit?: string | null } = {},
): Promise<OpenedWriterFile> {
  const { compactAboveBytes, memoryLimit = null } = options;
  const open = (path: string) => openDuckDB(path, { memoryLimit, writer: true });
  removeDrafts(publishedPath, writerPath);
  if (!existsSync(writerPath)) await buildWriterFile(snapshotOf(publishedPath), writerPath, memoryLimit);
  let recovery: Recovery | null = null;
  let opened: DuckDBHandle;
  try {
    opened = await open(writerPath);
  } catch (error) {
    const reason = firstLine(error);
    if (/Could not set lock on file/i.test(reason)) {
      // A live holder this process could not see (another PID namespace of this host), or a
      // reader that opened the writer file: not damage, so nothing is moved.
      throw new WarehouseBusyError(publishedPath, `another process holding ${writerPath} open (${reason})`);
    }
    recovery = {
      movedTo: moveAside(writerPath),
      reason,
      rebuiltFrom: existsSync(publishedPath) ? 'published snapshot' : 'empty warehouse',
    };
    await buildWriterFile(snapshotOf(publishedPath), writerPath, memoryLimit);
    opened = await open(writerPath);
  }
  if (await schemaOutdated(opened.connection)) {
    opened.close();
    await buildWriterFile(writerPath, writerPath, memoryLimit);
    opened = await open(writerPath);
  }
  const compacted = await compactIfMostlyFree(opened, writerPath, { aboveBytes: compactAboveBytes, memoryLimit });
  return { ...compacted.handle, recovery, compactionSkipped: compacted.skipped };
}

/**
 * Compacts the writer file `opened` holds when it is mostly free space (mostlyFree): closes it,
 * compacts it through a draft and opens it again. The open does it, and a publish before its copy,
 * so that a night whose moves freed most of the file (a first sync of months) copies only its
 * data, and the next night opens it at that size. Compaction only makes the publish copy less:
 * one that runs out of memory or disk leaves the file as it was (its draft removed), to be tried
 * again, and says why (`skipped`).
 */
export async function compactIfMostlyFree(
  opened: DuckDBHandle,
  writerPath: string,
  { aboveBytes = COMPACT_FREE_BYTES, memoryLimit = null }: { aboveBytes?: number; memoryLimit?: string | null } = {},
): Promise<{ handle: DuckDBHandle; skipped: string | null }> {
  if (!(await mostlyFree(opened.connection, aboveBytes))) return { handle: opened, skipped: null };
  opened.close();
  const skipped = await skippedForMemory(() => compactWriterFile(writerPath, memoryLimit)).catch((error: unknown) => {
    const full = explainDiskFull(error, writerPath);
    if (full instanceof DiskFullError) return full.message;
    throw error;
  });
  return { handle: await openDuckDB(writerPath, { memoryLimit, writer: true }), skipped };
}

/**
 * Whether over a third of the file, and over `aboveBytes`, is free blocks: DuckDB reuses freed blocks
 * but never gives them back, and a publish copies the whole file.
 */
async function mostlyFree(connection: DuckDBConnection, aboveBytes: number): Promise<boolean> {
  const reader = await connection.runAndReadAll(
    'SELECT free_blocks, used_blocks, block_size FROM pragma_database_size() WHERE database_name = current_database()',
  );
  const [free, used, blockSize] = reader.getRows()[0].map(Number);
  return 2 * free > used && free * blockSize > aboveBytes;
}

/**
 * The writer file copied into a draft renamed over it: its schema (tables, views, macros,
 * comments) with COPY FROM DATABASE, then each table's rows in a transaction of their own, in any
 * order, on one thread: keeping rows in order, and a sort per thread, take memory of their own,
 * and one commit of the whole file holds all of it, so only table by table does a large file fit
 * the warehouse's memory limit.
 */
async function compactWriterFile(writerPath: string, memoryLimit: string | null): Promise<void> {
  await replaceThroughDraft(writerPath, null, memoryLimit, async (connection) => {
    await connection.run('SET preserve_insertion_order = false');
    await connection.run('SET threads = 1');
    await connection.run(`ATTACH ${quoteLiteral(writerPath)} AS compacted_source (READ_ONLY)`);
    const [[name]] = (await connection.runAndReadAll('SELECT current_database()')).getRows();
    const draft = quoteIdentifier(String(name));
    await connection.run(`COPY FROM DATABASE compacted_source TO ${draft} (SCHEMA)`);
    const tables = await connection.runAndReadAll(
      "SELECT table_name FROM duckdb_tables() WHERE database_name = 'compacted_source' AND schema_name = 'main'",
    );
    for (const [table] of tables.getRows()) {
      const qualified = `main.${quoteIdentifier(String(table))}`;
      await connection.run(`INSERT INTO ${draft}.${qualified} SELECT * FROM compacted_source.${qualified}`);
      await connection.run('CHECKPOINT');
    }
    await connection.run('DETACH compacted_source');
  });
}

async function schemaOutdated(connection: DuckDBConnection): Promise<boolean> {
  if (!(await schemaBehind(connection))) return false;
  await connection.run('CHECKPOINT');
  return true;
}

/** A migrated, checkpointed copy of `source` (empty when null), renamed over `writerPath`. */
async function buildWriterFile(source: string | null, writerPath: string, memoryLimit: string | null): Promise<void> {
  await replaceThroughDraft(writerPath, source, memoryLimit, async (connection) => {
    await unpresentCold(connection);
    await dropWarehouseInfo(connection);
    await migrate(connection);
  });
}

/**
 * The one way the writer file is replaced: a draft beside it (a copy of `source`, or empty when
 * null) is filled by `fill`, checkpointed, synced and renamed over it, so a kill at any instant
 * leaves the old file or the new one, and a draft the next open removes.
 */
async function replaceThroughDraft(
  writerPath: string,
  source: string | null,
  memoryLimit: string | null,
  fill: (connection: DuckDBConnection) => Promise<void>,
): Promise<void> {
  const draft = `${writerPath}.draft-${randomUUID().slice(0, 8)}`;
  try {
    if (source !== null) {
      cloneFile(source, draft);
      chmodSync(draft, 0o644); // the published snapshot is read-only; the writer file is not
    }
    const built = await openDuckDB(draft, { memoryLimit, writer: true });
    try {
      await fill(built.connection);
      await built.connection.run('CHECKPOINT');
    } finally {
      built.close();
    }
    fsyncPath(draft, 'r+');
    // A WAL left beside the old file belongs to it, not to this one: DuckDB would replay it.
    rmSync(`${writerPath}.wal`, { force: true });
    renameSync(draft, writerPath);
    fsyncPath(dirname(writerPath), 'r');
  } finally {
    rmSync(draft, { force: true });
    rmSync(`${draft}.wal`, { force: true });
  }
}

function snapshotOf(publishedPath: string): string | null {
  return existsSync(publishedPath) ? publishedPath : null;
}

/** Moves the writer file and its WAL to `<writer>.broken-<UTC timestamp>`; returns that path. */
function moveAside(writerPath: string): string {
  const aside = `${writerPath}.broken-${new Date().toISOString().replace(/[-:]/g, '').replace('.', '')}`;
  renameSync(writerPath, aside);
  if (existsSync(`${writerPath}.wal`)) renameSync(`${writerPath}.wal`, `${aside}.wal`);
  fsyncPath(dirname(writerPath), 'r');
  return aside;
}

/**
 * Drafts of a writer killed mid-build or mid-publish (`<writer>.draft-*`, `<published>.tmp-*`,
 * `<published>.wal.tmp-*`).
 * Only the lock holder calls this, so no live process owns them.
 */
function removeDrafts(publishedPath: string, writerPath: string): void {
  const dir = dirname(writerPath);
  const prefixes = [
    `${basename(writerPath)}.draft-`,
    `${basename(publishedPath)}.tmp-`,
    `${basename(publishedPath)}.wal.tmp-`,
  ];
  for (const name of readdirSync(dir)) {
    if (prefixes.some((prefix) => name.startsWith(prefix))) rmSync(join(dir, name), { force: true });
  }
}

/**
 * The one way a warehouse file is copied (publish, a writer file built from the snapshot, a
 * reader's private copy): a reflink where the filesystem has them (btrfs, XFS, ZFS 2.2+; a
 * moment, whatever the size, and no space taken until either file changes), else a plain copy.
 */
export function cloneFile(from: string, to: string): void {
  copyFileSync(from, to, constants.COPYFILE_FICLONE);
}

function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0];
}
