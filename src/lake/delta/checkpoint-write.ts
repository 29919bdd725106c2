// Writing a checkpoint (PROTOCOL.md "Checkpoints", "Last Checkpoint File"): DuckDB writes the
// reconciled actions of a snapshot in the checkpoint schema, one action per row, done by the
// compactor every CHECKPOINT_INTERVAL commits so readers replay a few commits, not the history.
import type { DuckDBConnection } from '@duckdb/node-api';
import { randomUUID } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { faultPoint } from '../../fault.js';
import { quoteIdentifier, quoteLiteral } from '../../warehouse/sql.js';
import type { Action } from './actions.js';
import { fsyncPath, writeDurably } from './commit.js';
import { checkpointName, LAST_CHECKPOINT, listLog, logDir } from './log.js';
import { readSnapshot, type Snapshot } from './snapshot.js';
import { DAY } from '../../time.js';

/** Commits between checkpoints (the compactor writes one when this many have passed since the last). */
export const CHECKPOINT_INTERVAL = 10;

/** Tombstones are kept in a checkpoint this long (delta.deletedFileRetentionDuration's default). */
const TOMBSTONE_RETENTION_MS = 7 * DAY;

/**
 * The checkpoint schema (PROTOCOL.md "Checkpoint Schema") of the actions efsync's tables hold;
 * the JSON of each action is read into it by DuckDB, string maps as MAP(VARCHAR, VARCHAR).
 */
const MAP = 'MAP(VARCHAR, VARCHAR)';
const CHECKPOINT_COLUMNS = {
  txn: 'STRUCT("appId" VARCHAR, version BIGINT, "lastUpdated" BIGINT)',
  add: `STRUCT(path VARCHAR, "partitionValues" ${MAP}, size BIGINT, "modificationTime" BIGINT, "dataChange" BOOLEAN, tags ${MAP}, stats VARCHAR)`,
  remove: `STRUCT(path VARCHAR, "deletionTimestamp" BIGINT, "dataChange" BOOLEAN, "extendedFileMetadata" BOOLEAN, "partitionValues" ${MAP}, size BIGINT)`,
  metaData: `STRUCT(id VARCHAR, name VARCHAR, description VARCHAR, format STRUCT(provider VARCHAR, options ${MAP}), "schemaString" VARCHAR, "partitionColumns" VARCHAR[], configuration ${MAP}, "createdTime" BIGINT)`,
  protocol: 'STRUCT("minReaderVersion" INTEGER, "minWriterVersion" INTEGER)',
};

/**
 * Writes the checkpoint of `snapshot` (its protocol, metaData, txns, active files and unexpired
 * tombstones) as `%020d.checkpoint.parquet`, then `_last_checkpoint`. Both land by rename from
 * a temporary name, so a reader never meets half a checkpoint; a checkpoint is the same for
 * whoever writes it, so two compactors writing one is harmless.
 */
export async function writeCheckpoint(db: DuckDBConnection, snapshot: Snapshot, now = Date.now()): Promise<number> {
  const dir = logDir(snapshot.table);
  const tombstones = [...snapshot.tombstones.values()].filter(
    (r) =>
      r.deletionTimestamp === undefined ||
      r.deletionTimestamp === null ||
      r.deletionTimestamp > now - TOMBSTONE_RETENTION_MS,
  );
  const actions: Action[] = [
    { protocol: snapshot.protocol },
    { metaData: snapshot.metadata },
    ...[...snapshot.txns.values()].map((txn) => ({ txn })),
    ...[...snapshot.files.values()].map((add) => ({ add: { ...add, dataChange: false } })),
    ...tombstones.map((remove) => ({ remove: { ...remove, dataChange: false } })),
  ];
  const id = randomUUID();
  const json = join(dir, `.${id}.checkpoint.json.tmp`);
  const parquet = join(dir, `.${id}.checkpoint.parquet.tmp`);
  try {
    writeFileSync(json, actions.map((a) => `${JSON.stringify(a)}\n`).join(''));
    const columns = Object.entries(CHECKPOINT_COLUMNS)
      .map(([name, type]) => `${quoteIdentifier(name)}: ${quoteLiteral(type)}`)
      .join(', ');
    await db.run(
      `COPY (SELECT * FROM read_json(${quoteLiteral(json)}, format = 'newline_delimited', columns = {${columns}}))
       TO ${quoteLiteral(parquet)} (FORMAT parquet)`,
    );
    fsyncPath(parquet);
    renameSync(parquet, join(dir, checkpointName(snapshot.version)));
    fsyncPath(dir);
    faultPoint('delta-checkpoint');
    const last = join(dir, `.${id}.last_checkpoint.tmp`);
    writeDurably(last, JSON.stringify({ version: snapshot.version, size: actions.length }));
    renameSync(last, join(dir, LAST_CHECKPOINT));
    fsyncPath(dir);
  } finally {
    rmSync(json, { force: true });
    rmSync(parquet, { force: true });
  }
  return actions.length;
}

/** Writes a checkpoint of the newest version when CHECKPOINT_INTERVAL commits have passed since the last; its version, or null. */
export async function checkpointIfDue(db: DuckDBConnection, table: string): Promise<number | null> {
  const listing = listLog(table);
  const last = listing.checkpoints.at(-1)?.version ?? 0;
  const newest = listing.commits.at(-1) ?? -1;
  if (newest - last < CHECKPOINT_INTERVAL) return null;
  const snapshot = await readSnapshot(db, table, newest);
  await writeCheckpoint(db, snapshot);
  return newest;
}
