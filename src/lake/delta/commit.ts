// A Delta commit (PROTOCOL.md "Delta Log Entries"): version v is the file `%020d.json`, and
// whoever creates it first has committed v. Put-if-absent on a POSIX file system: the entry is
// written and fsynced under a temporary name in `_delta_log/` (a name no reader lists), then
// `link()`ed to the version's name, which fails with EEXIST when another writer holds v.
// The loser reads the winner's commit: a logical conflict (it removed a file this commit read or
// removes, changed the table's metadata or protocol, or, as the caller's `conflicts` judges,
// added rows this commit's plan should have read) ends the attempt with DeltaConflictError,
// for the caller to plan again on a new snapshot; otherwise the commit is tried at v + 1 after
// a short random backoff. A commit carries a transaction id in its commitInfo: a link whose
// outcome is unknown (an error after the file may have landed, an NFS retry answered EEXIST for
// our own link) is settled by finding that id in the log.
import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeltaConflictError, FailedError } from '../../errors.js';
import { faultPoint } from '../../fault.js';
import { fileKey, type Action, type AddFile, type CommitInfo } from './actions.js';
import { commitName, logDir, readCommit } from './log.js';

export interface CommitRequest {
  /** The table's root folder. */
  table: string;
  /** The version the change was planned on (-1: the table does not exist yet). */
  readVersion: number;
  /** commitInfo.operation: WRITE, DELETE, OPTIMIZE, CREATE TABLE, ... */
  operation: string;
  actions: Action[];
  /** Paths of files the plan read: another commit removing one of them is a conflict. */
  readFiles?: readonly string[];
  /**
   * Judges the adds (dataChange true) of another writer's commit that landed first: why they
   * invalidate this commit's plan (they hold rows of a key this commit supersedes), or null.
   * A copy-on-write commit needs it: the plan read only the files of its snapshot.
   */
  conflicts?: (adds: AddFile[]) => Promise<string | null>;
  /** Gives up after this many versions lost to other writers. */
  maxAttempts?: number;
  /** More commitInfo fields (efsync's own: who committed what). */
  info?: Record<string, unknown>;
  /**
   * The transaction id, when the caller keeps it to retry a commit whose outcome it did not
   * learn: a version already holding it is this commit, not another writer's.
   */
  txnId?: string;
}

export interface Committed {
  version: number;
  txnId: string;
  /** Versions lost to other writers before this one landed. */
  retries: number;
}

const BACKOFF_MS = 5;
const MAX_BACKOFF_MS = 500;

export async function commit(request: CommitRequest): Promise<Committed> {
  faultPoint('delta-files');
  const txnId = request.txnId ?? randomUUID();
  const info: CommitInfo = {
    timestamp: Date.now(),
    operation: request.operation,
    txnId,
    engineInfo: 'efsync',
    ...request.info,
  };
  const text = [{ commitInfo: info }, ...request.actions].map((a) => `${JSON.stringify(a)}\n`).join('');
  const dir = logDir(request.table);
  const temp = join(dir, `.${txnId}.json.tmp`);
  writeDurably(temp, text);
  faultPoint('delta-temp');
  const watched = watchedKeys(request);
  const maxAttempts = request.maxAttempts ?? 1000;
  try {
    for (let version = request.readVersion + 1, retries = 0; ; version++, retries++) {
      const outcome = tryLink(temp, join(dir, commitName(version)));
      if (outcome === 'linked' || (outcome === 'exists' && ownCommit(request.table, version, txnId))) {
        faultPoint('delta-linked');
        fsyncPath(dir);
        return { version, txnId, retries };
      }
      if (outcome === 'unknown') {
        const landed = findOwnCommit(request.table, version, txnId);
        if (landed !== null) return { version: landed, txnId, retries };
        version--; // the link did not happen: the same version again
        continue;
      }
      await checkConflict(request, version, watched);
      if (retries + 1 >= maxAttempts)
        throw new FailedError(`${request.table}: no Delta commit after ${maxAttempts} versions lost to other writers`);
      await sleep(Math.random() * Math.min(MAX_BACKOFF_MS, BACKOFF_MS * 2 ** Math.min(retries, 7)));
    }
  } finally {
    rmSync(temp, { force: true });
  }
}

function tryLink(temp: string, target: string): 'linked' | 'exists' | 'unknown' {
  try {
    linkSync(temp, target);
    return 'linked';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'exists' : 'unknown';
  }
}

/** The file keys whose removal by another commit makes this one wrong: those it read and those it removes. */
function watchedKeys(request: CommitRequest): Set<string> {
  const keys = new Set((request.readFiles ?? []).map((path) => fileKey({ path })));
  for (const action of request.actions) if ('remove' in action) keys.add(fileKey(action.remove));
  return keys;
}

/** Throws DeltaConflictError when the commit at `version` (another writer's) invalidates this one's plan. */
async function checkConflict(request: CommitRequest, version: number, watched: Set<string>): Promise<void> {
  const { table } = request;
  const actions = readCommit(table, version);
  for (const action of actions) {
    if ('metaData' in action || 'protocol' in action)
      throw new DeltaConflictError(table, version, 'it changed the table metadata or protocol');
    if ('remove' in action && watched.has(fileKey(action.remove)))
      throw new DeltaConflictError(table, version, `it removed ${action.remove.path}, which this commit read`);
  }
  const adds = actions.flatMap((a) => ('add' in a && a.add.dataChange ? [a.add] : []));
  const why = request.conflicts && adds.length > 0 ? await request.conflicts(adds) : null;
  if (why !== null) throw new DeltaConflictError(table, version, why);
}

function ownCommit(table: string, version: number, txnId: string): boolean {
  return readCommit(table, version).some((a) => 'commitInfo' in a && a.commitInfo.txnId === txnId);
}

/** The version at or after `from` whose commitInfo holds `txnId`, or null. */
function findOwnCommit(table: string, from: number, txnId: string): number | null {
  const versions = readdirSync(logDir(table))
    .map((name) => /^(\d{20})\.json$/.exec(name))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]))
    .filter((v) => v >= from)
    .sort((a, b) => a - b);
  return versions.find((v) => ownCommit(table, v, txnId)) ?? null;
}

/** Writes `text` to `file` and fsyncs it, so a link to it never names a file with less. */
export function writeDurably(file: string, text: string | Buffer): void {
  writeFileSync(file, text);
  fsyncPath(file);
}

/** fsync of a file or directory (a directory: so a link or rename in it survives a power cut). */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
