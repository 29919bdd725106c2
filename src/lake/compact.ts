/**
 * `efsync lake compact`: per table and partition, the committed files merged into one, holding
 * only the rows a reader resolves to (duplicates and superseded rows dropped), committed as one
 * manifest entry that lists the new files and the files they replace; the replaced files are
 * deleted after the commit. One compactor at a time (its lock); safe beside running shards: it
 * replaces only files committed when it started, and a newer commit of a key still wins (the
 * merged file takes the largest seq of its inputs).
 */
import { mkdirSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { WriterLock } from '../warehouse/lock.js';
import { openDuckDB } from '../warehouse/duckdb.js';
import {
  committedFiles,
  ensureLake,
  absolute,
  lakePath,
  LOCK_DIR,
  moveIntoLake,
  readManifests,
  removeUncommitted,
  SCHEMA_FILE,
  STAGING_DIR,
  writeManifest,
  type CommittedFile,
  type ManifestFile,
} from './layout.js';
import { filesSource, resolvedSql } from './read.js';
import { quoteLiteral } from '../warehouse/sql.js';
import { warehouseSchema } from './schema.js';
import { newRunId } from '../log.js';

export const COMPACTOR = 'compact';

export interface Compacted {
  runId: string;
  /** Files merged, and files written. */
  replaced: number;
  written: number;
  /** Rows before and after, over the partitions compacted. */
  rowsBefore: number;
  rowsAfter: number;
  manifest: string | null;
}

export async function compactLake(lake: string, options: { lockWaitMs?: number } = {}): Promise<Compacted> {
  await ensureLake(lake);
  const runId = newRunId();
  const lock = await WriterLock.acquire(
    join(lakePath(lake), LOCK_DIR, `${COMPACTOR}.lock`),
    `lake ${lake} compactor`,
    { job: 'lake compact', runId },
    options.lockWaitMs ?? 0,
  );
  const staging = join(lakePath(lake), STAGING_DIR, `${COMPACTOR}-${runId}`);
  const db = await openDuckDB(':memory:');
  try {
    const schema = await warehouseSchema();
    removeUncommitted(lake, COMPACTOR, schema.tables);
    deleteReplaced(lake);
    const files = committedFiles(lake);
    const written: ManifestFile[] = [];
    const replaces: string[] = [];
    let rowsBefore = 0;
    let rowsAfter = 0;
    for (const table of schema.tables) {
      for (const [partition, group] of partitions(files.get(table.name) ?? [])) {
        if (group.length < 2) continue;
        const dir = join(staging, table.name, partition);
        mkdirSync(dir, { recursive: true });
        const source = filesSource(table, absolute(lake, `${table.name}/${SCHEMA_FILE}`), group);
        const target = join(dir, `part-${COMPACTOR}-${runId}-0.parquet`);
        const result = await db.connection.run(
          `COPY (${resolvedSql(table, source)} ORDER BY ALL) TO ${quoteLiteral(target)} (FORMAT parquet)`,
        );
        const rows = Number(result.rowsChanged);
        const seq = Math.max(...group.map((f) => f.seq));
        rowsBefore += group.reduce((sum, f) => sum + f.rows, 0);
        rowsAfter += rows;
        for (const path of moveIntoLake(lake, staging, table.name))
          written.push({ table: table.name, path, rows, seq });
        replaces.push(...group.map((f) => f.path));
      }
    }
    if (written.length === 0) return { runId, replaced: 0, written: 0, rowsBefore, rowsAfter, manifest: null };
    const manifest = writeManifest(lake, {
      run_id: runId,
      kind: 'compact',
      shard: null,
      committed_at: new Date().toISOString(),
      files: written,
      replaces,
    });
    deleteReplaced(lake);
    return { runId, replaced: replaces.length, written: written.length, rowsBefore, rowsAfter, manifest };
  } finally {
    db.close();
    rmSync(staging, { recursive: true, force: true });
    lock.release();
  }
}

/** Committed files by partition folder (relative to the table), e.g. `month=2026-11` or ``. */
function partitions(files: CommittedFile[]): Map<string, CommittedFile[]> {
  const byPartition = new Map<string, CommittedFile[]>();
  for (const file of files) {
    const partition = file.path.split('/').slice(1, -1).join('/');
    byPartition.set(partition, [...(byPartition.get(partition) ?? []), file]);
  }
  return byPartition;
}

/** Files a committed compaction replaced that are still on disk (the compactor was stopped before deleting them). */
function deleteReplaced(lake: string): void {
  for (const entry of readManifests(lake)) {
    for (const path of entry.replaces) {
      try {
        unlinkSync(absolute(lake, path));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
}
