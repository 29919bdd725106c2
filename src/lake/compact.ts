/**
 * `efsync lake compact`: per table and partition, the active files merged into one holding only
 * the rows a reader resolves to (duplicates and superseded rows dropped), committed as one Delta
 * commit that removes the k inputs and adds the merged file, with `dataChange: false` (no row
 * changed for a reader). The inputs stay on disk for readers of older snapshots until `lake
 * vacuum`. Then a checkpoint of each table 10 commits past its last. One compactor at a time
 * (its lock); safe beside running shards: they only add files, so a shard's commit never
 * conflicts with it, and the merged file keeps the largest commit order (SEQ_TAG) of its inputs,
 * so a row a shard committed meanwhile still wins for its key.
 */
import { join } from 'node:path';
import { newRunId } from '../log.js';
import { quoteLiteral } from '../warehouse/sql.js';
import { openDuckDB } from '../warehouse/duckdb.js';
import { WriterLock } from '../warehouse/lock.js';
import { checkpointIfDue } from './delta/checkpoint-write.js';
import { commit } from './delta/commit.js';
import { writeDataFiles } from './delta/files.js';
import { statsColumns } from './commit.js';
import {
  activeFiles,
  ensureLake,
  lakePath,
  lakeSnapshots,
  LOCK_DIR,
  MONTH,
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
  const done: Compacted = { runId, replaced: 0, written: 0, rowsBefore: 0, rowsAfter: 0, checkpoints: 0 };
  try {
    await removeUncommitted(db.connection, lake, COMPACTOR);
    const schema = await warehouseSchema();
    const snapshots = await lakeSnapshots(db.connection, lake);
    for (const table of schema.tables) {
      const snapshot = snapshots.get(table.name);
      if (!snapshot) continue;
      for (const [month, group] of byMonth(activeFiles(snapshot))) {
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
          tags: { [SEQ_TAG]: String(Math.max(...group.map((f) => f.seq))) },
        });
        const now = Date.now();
        await commit({
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
        });
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

/** Active files by their month partition (null for an unpartitioned table). */
function byMonth(files: LakeFile[]): Map<string | null, LakeFile[]> {
  const groups = new Map<string | null, LakeFile[]>();
  for (const file of files) {
    const month = file.add.partitionValues[MONTH] ?? null;
    groups.set(month, [...(groups.get(month) ?? []), file]);
  }
  return groups;
}
