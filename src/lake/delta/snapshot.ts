// The state of a Delta table at a version (PROTOCOL.md "Action Reconciliation"): the newest
// complete checkpoint at or before it, then every commit after it, replayed in order. The
// newest protocol and metaData win, a txn per application id, and a file (path + deletion
// vector id) is active when its newest add is not followed by a remove.
import type { DuckDBConnection } from '@duckdb/node-api';
import { DeltaTableError } from '../../errors.js';
import {
  fileKey,
  type Action,
  type AddFile,
  type Metadata,
  type Protocol,
  type RemoveFile,
  type Txn,
} from './actions.js';
import { readCheckpoint } from './checkpoint.js';
import { listLog, LOG_DIR, readCommit, type Checkpoint } from './log.js';
import { parseSchema, type DeltaSchema } from './types.js';

/** The one protocol efsync reads and writes: no table features, no column mapping. */
export const READER_VERSION = 1;
export const WRITER_VERSION = 2;

export interface Snapshot {
  table: string;
  version: number;
  protocol: Protocol;
  metadata: Metadata;
  schema: DeltaSchema;
  /** The active files, by file key (actions.ts fileKey). */
  files: Map<string, AddFile>;
  /** Removes of files not re-added: the tombstones a checkpoint keeps and vacuum honours. */
  tombstones: Map<string, RemoveFile>;
  txns: Map<string, Txn>;
}

/** Reads `table` (its root folder) at `version`, or at its newest version. */
export async function readSnapshot(db: DuckDBConnection, table: string, version?: number): Promise<Snapshot> {
  const listing = listLog(table);
  const newest = Math.max(-1, ...listing.commits, ...listing.checkpoints.map((c) => c.version));
  if (newest < 0) throw new DeltaTableError('corrupt', `${table}: its ${LOG_DIR} holds no commit`);
  const target = version ?? newest;
  if (!Number.isInteger(target) || target < 0 || target > newest)
    throw new DeltaTableError('corrupt', `${table}: no version ${target} (the newest is ${newest})`);
  const { start, actions } = await startingPoint(db, table, listing.checkpoints, target);
  const state = emptyState();
  for (const action of actions) apply(state, action);
  const committed = new Set(listing.commits);
  for (let v = start + 1; v <= target; v++) {
    if (!committed.has(v))
      throw new DeltaTableError(
        'corrupt',
        `${table}: commit ${v} is missing from its log (versions must be contiguous)`,
      );
    for (const action of readCommit(table, v)) apply(state, action);
  }
  return finish(table, target, state);
}

/**
 * The newest checkpoint at or before `target` that reads, or version -1 (replay from commit 0).
 * A checkpoint that does not read (a writer killed while writing one, where the file system
 * has no atomic rename) is passed over for an older one, as PROTOCOL.md allows.
 */
async function startingPoint(
  db: DuckDBConnection,
  table: string,
  checkpoints: Checkpoint[],
  target: number,
): Promise<{ start: number; actions: Action[] }> {
  for (const checkpoint of checkpoints.filter((c) => c.version <= target).reverse()) {
    try {
      return { start: checkpoint.version, actions: await readCheckpoint(db, table, checkpoint) };
    } catch (error) {
      if (!(error instanceof DeltaTableError)) throw error;
    }
  }
  return { start: -1, actions: [] };
}

interface State {
  protocol: Protocol | null;
  metadata: Metadata | null;
  files: Map<string, AddFile>;
  tombstones: Map<string, RemoveFile>;
  txns: Map<string, Txn>;
}

function emptyState(): State {
  return { protocol: null, metadata: null, files: new Map(), tombstones: new Map(), txns: new Map() };
}

function apply(state: State, action: Action): void {
  if ('protocol' in action) state.protocol = action.protocol;
  else if ('metaData' in action) state.metadata = action.metaData;
  else if ('txn' in action) state.txns.set(action.txn.appId, action.txn);
  else if ('add' in action) {
    const key = fileKey(action.add);
    state.files.set(key, action.add);
    state.tombstones.delete(key);
  } else if ('remove' in action) {
    const key = fileKey(action.remove);
    state.files.delete(key);
    state.tombstones.set(key, action.remove);
  }
}

function finish(table: string, version: number, state: State): Snapshot {
  const { protocol, metadata } = state;
  if (!protocol) throw new DeltaTableError('corrupt', `${table}: no protocol action up to version ${version}`);
  if (!metadata) throw new DeltaTableError('corrupt', `${table}: no metaData action up to version ${version}`);
  checkReadable(table, protocol, metadata);
  for (const file of state.files.values()) {
    if (file.deletionVector)
      throw new DeltaTableError(
        'unsupported',
        `${table}: file ${file.path} has a deletion vector, which efsync does not read`,
      );
  }
  return {
    table,
    version,
    protocol,
    metadata,
    schema: parseSchema(table, metadata.schemaString),
    files: state.files,
    tombstones: state.tombstones,
    txns: state.txns,
  };
}

/**
 * Refuses a table this reader would read wrong: a reader version above 1 (2 is column mapping,
 * 3 names reader features: deletion vectors, timestamp without time zone, type widening, ...)
 * or data files that are not Parquet.
 */
function checkReadable(table: string, protocol: Protocol, metadata: Metadata): void {
  if (protocol.minReaderVersion > READER_VERSION) {
    const features = protocol.readerFeatures?.length ? ` (reader features: ${protocol.readerFeatures.join(', ')})` : '';
    throw new DeltaTableError(
      'unsupported',
      `${table}: Delta reader version ${protocol.minReaderVersion}${features} is not supported; efsync reads version ${READER_VERSION} only`,
      'read it with an engine that supports those features (Spark, delta-rs), or rewrite it without them',
    );
  }
  if (metadata.format.provider !== 'parquet')
    throw new DeltaTableError(
      'unsupported',
      `${table}: data format ${metadata.format.provider} is not supported (parquet only)`,
    );
}

/** Refuses to write a table whose protocol asks more of a writer than version 2 (CHECK constraints, identity columns, features). */
export function checkWritable(snapshot: Snapshot): void {
  if (snapshot.protocol.minWriterVersion > WRITER_VERSION)
    throw new DeltaTableError(
      'unsupported',
      `${snapshot.table}: Delta writer version ${snapshot.protocol.minWriterVersion} is not supported; efsync writes version ${WRITER_VERSION} only`,
    );
}
