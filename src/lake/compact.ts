/**
 * `efsync lake compact`: per table, partition and owner (the shard whose rows a file holds,
 * OWNER_TAG), the active files merged into one holding only the rows a reader resolves to
 * (duplicates left by lakes written before copy-on-write dropped), committed as one Delta commit
 * that removes the k inputs and adds the merged file, with `dataChange: false` (no row changed
 * for a reader). Merging each owner's files apart keeps a shard's copy-on-write rewrites to its
 * own files. The inputs stay on disk for readers of older snapshots until `lake vacuum`. Then a
 * checkpoint of each table 10 commits past its last. One compactor at a time (its lock); safe
 * beside running shards: a shard that rewrote one of the inputs meanwhile makes the compaction of
 * that group conflict, and the group is left for the next compaction (a shard whose commit lost
 * to the compaction plans again on the merged file).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { newRunId } from '../log.js';
import { quoteLiteral } from '../warehouse/sql.js';
import { openDuckDB } from '../warehouse/duckdb.js';
import { WriterLock } from '../warehouse/lock.js';
import { DeltaConflictError } from '../errors.js';
import { checkpointIfDue } from './delta/checkpoint-write.js';
import { readSnapshot } from './delta/snapshot.js';
import { commit } from './delta/commit.js';
import { writeDataFiles } from './delta/files.js';
import { statsColumns } from './commit.js';
import {
  activeFiles,
  ensureLake,
  lakePath,
  lakeFile,
  tableDir,
  LOCK_DIR,
  MONTH,
  OWNER_TAG,
  removeUncommitted,
  SCHEMA_FILE,
  SEQ_TAG,
  STAGING_DIR,
  type LakeFile,
} from './layout.js';
import { filesSource, resolvedSql } from './read.js';
import { warehouseSchema } from './schema.js';

export const COMPACTOR = 'compact';

export interface Compacted {
  runId: string;
  /** Files merged, and files written. */
  replaced: number;
  written: number;
  /** Rows before and after, over the partitions compacted. */
  rowsBefore: number;
  rowsAfter: number;
  /** Groups left as they were: a shard rewrote one of their files meanwhile. */
  conflicts: number;
  /** Tables checkpointed. */
  checkpoints: number;
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
  const db = await openDuckDB(':memory:');
  const done: Compacted = { runId, replaced: 0, written: 0, rowsBefore: 0, rowsAfter: 0, conflicts: 0, checkpoints: 0 };
  try {
    await removeUncommitted(db.connection, lake, COMPACTOR);
    const schema = await warehouseSchema();
    for (const table of schema.tables) {
      // Read just before its compaction: shards keep committing meanwhile.
      const snapshot = await readSnapshot(db.connection, tableDir(lake, table.name));
      for (const { month, owner, group } of byMonthAndOwner(activeFiles(snapshot))) {
        if (group.length < 2) continue;
        const source = filesSource(table, join(snapshot.table, SCHEMA_FILE), group);
        const adds = await writeDataFiles(db.connection, {
          table: snapshot.table,
          query: `SELECT *${month === null ? '' : `, ${quoteLiteral(month)} AS ${MONTH}`} FROM (${resolvedSql(table, source)}) ORDER BY ALL`,
          partitionColumns: month === null ? [] : [MONTH],
          prefix: `part-${COMPACTOR}-${runId}`,
          statsColumns: statsColumns(table),
          dataChange: false,
          staging: join(lakePath(lake), STAGING_DIR),
          tags: {
            [SEQ_TAG]: String(Math.max(...group.map((f) => f.seq))),
            ...(owner === null ? {} : { [OWNER_TAG]: owner }),
          },
        });
        const now = Date.now();
        const landed = await commit({
          table: snapshot.table,
          readVersion: snapshot.version,
          operation: 'OPTIMIZE',
          readFiles: group.map((f) => f.path),
          actions: [
            ...group.map((f) => ({
              remove: {
                path: f.path,
                deletionTimestamp: now,
                dataChange: false,
                extendedFileMetadata: true,
                partitionValues: f.add.partitionValues,
                size: f.add.size,
              },
            })),
            ...adds.map((add) => ({ add })),
          ],
          info: { efsync: { kind: 'compact', run_id: runId, shard: null } },
        }).catch((error: unknown) => {
          if (!(error instanceof DeltaConflictError)) throw error;
          for (const add of adds) rmSync(lakeFile(snapshot.table, add).file, { force: true });
          return null;
        });
        if (landed === null) {
          done.conflicts += 1;
          continue;
        }
        done.replaced += group.length;
        done.written += adds.length;
        done.rowsBefore += group.reduce((sum, f) => sum + f.rows, 0);
        done.rowsAfter += adds.reduce((sum, a) => sum + Number(JSON.parse(a.stats ?? '{}').numRecords ?? 0), 0);
      }
      if ((await checkpointIfDue(db.connection, snapshot.table)) !== null) done.checkpoints += 1;
    }
    return done;
  } finally {
    db.close();
    lock.release();
  }
}

/** Active files by their month partition (null for an unpartitioned table) and owner (null: none). */
function byMonthAndOwner(files: LakeFile[]): { month: string | null; owner: string | null; group: LakeFile[] }[] {
  const groups = new Map<string, { month: string | null; owner: string | null; group: LakeFile[] }>();
  for (const file of files) {
    const month = file.add.partitionValues[MONTH] ?? null;
    const owner = file.add.tags?.[OWNER_TAG] ?? null;
    const id = JSON.stringify([month, owner]);
    const entry = groups.get(id) ?? { month, owner, group: [] };
    entry.group.push(file);
    groups.set(id, entry);
  }
  return [...groups.values()];
}
