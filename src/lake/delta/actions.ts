// The actions of a Delta log (delta-io/delta PROTOCOL.md, "Actions"): the fields efsync reads and
// writes. A commit file holds one action per line; a checkpoint holds one per row, as a struct
// column named like the action. Fields efsync does not use are kept as read (`[field]: unknown`)
// so a checkpoint written from a Spark table's actions loses nothing.

export interface Protocol {
  minReaderVersion: number;
  minWriterVersion: number;
  readerFeatures?: string[] | null;
  writerFeatures?: string[] | null;
}

export interface Metadata {
  id: string;
  name?: string | null;
  description?: string | null;
  format: { provider: string; options?: Record<string, string> | null };
  /** The table's schema, as Spark's JSON form of a StructType (schema.ts). */
  schemaString: string;
  partitionColumns: string[];
  configuration?: Record<string, string> | null;
  createdTime?: number | null;
}

/** The identity of a deletion vector (none in efsync's tables; read to refuse it). */
export interface DeletionVector {
  storageType: string;
  pathOrInlineDv: string;
  offset?: number | null;
}

export interface AddFile {
  /** A relative URI from the table root (URL-encoded), or an absolute URI. */
  path: string;
  /** Partition column → value serialised as text; null is a null value. */
  partitionValues: Record<string, string | null>;
  size: number;
  modificationTime: number;
  dataChange: boolean;
  /** JSON text: numRecords, minValues, maxValues, nullCount (stats.ts). */
  stats?: string | null;
  tags?: Record<string, string> | null;
  deletionVector?: DeletionVector | null;
  [field: string]: unknown;
}

export interface RemoveFile {
  path: string;
  deletionTimestamp?: number | null;
  dataChange: boolean;
  extendedFileMetadata?: boolean | null;
  partitionValues?: Record<string, string | null> | null;
  size?: number | null;
  deletionVector?: DeletionVector | null;
  [field: string]: unknown;
}

/** An application's transaction version (idempotent writes of a streaming writer). */
export interface Txn {
  appId: string;
  version: number;
  lastUpdated?: number | null;
}

export interface CommitInfo {
  timestamp?: number;
  operation?: string;
  /** efsync's own: the id that recognises a commit whose outcome was unknown (commit.ts). */
  txnId?: string;
  [field: string]: unknown;
}

export type Action =
  | { protocol: Protocol }
  | { metaData: Metadata }
  | { add: AddFile }
  | { remove: RemoveFile }
  | { txn: Txn }
  | { commitInfo: CommitInfo }
  | { cdc: unknown }
  | { domainMetadata: unknown };

const KINDS = ['protocol', 'metaData', 'add', 'remove', 'txn', 'commitInfo', 'cdc', 'domainMetadata'] as const;

/**
 * The action of one log line or checkpoint row (its one non-null action field), or null for a
 * field this reader does not know: PROTOCOL.md has readers ignore unknown actions, and a
 * protocol that needs them raises the reader version, which snapshot.ts checks.
 */
export function toAction(record: Record<string, unknown>): Action | null {
  for (const kind of KINDS) {
    const value = record[kind];
    if (value !== null && value !== undefined) return { [kind]: withoutNulls(value) } as Action;
  }
  return null;
}

/** A checkpoint row's struct with its null fields dropped, as a commit line would hold it. */
function withoutNulls(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null));
}

/**
 * The key of a logical file (PROTOCOL.md, "Action Reconciliation"): its path and deletion vector
 * id. The path is compared as written, after URL-decoding, so `a%20b` and `a b` are one file.
 */
export function fileKey(action: { path: string; deletionVector?: DeletionVector | null }): string {
  const dv = action.deletionVector;
  const dvId = dv
    ? `${dv.storageType}${dv.pathOrInlineDv}${dv.offset === undefined || dv.offset === null ? '' : `@${dv.offset}`}`
    : '';
  return `${decodePath(action.path)}\u0000${dvId}`;
}

/** A log path as the file system names it: URL-decoded (Spark writes `%3A` for `:` in a partition folder). */
export function decodePath(path: string): string {
  return decodeURIComponent(path);
}
