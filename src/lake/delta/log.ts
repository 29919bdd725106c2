// The files of a Delta log (`<table>/_delta_log/`, PROTOCOL.md "Delta Log Entries" and
// "Checkpoints"): their names, the listing, `_last_checkpoint` and the commit files' actions.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeltaTableError } from '../../errors.js';
import { toAction, type Action } from './actions.js';

export const LOG_DIR = '_delta_log';
export const LAST_CHECKPOINT = '_last_checkpoint';

const COMMIT = /^(\d{20})\.json$/;
const CHECKPOINT = /^(\d{20})\.checkpoint\.parquet$/;
const CHECKPOINT_PART = /^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$/;

export function logDir(table: string): string {
  return join(table, LOG_DIR);
}

/** `00000000000000000007.json`: the name of a version's commit. */
export function commitName(version: number): string {
  return `${pad(version, 20)}.json`;
}

export function checkpointName(version: number): string {
  return `${pad(version, 20)}.checkpoint.parquet`;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** A complete checkpoint: its version and file names (one, or every part of a multi-part one). */
export interface Checkpoint {
  version: number;
  files: string[];
}

export interface LogListing {
  /** Versions of the commit files, ascending. */
  commits: number[];
  /** Complete checkpoints, ascending by version. */
  checkpoints: Checkpoint[];
}

/** What `_delta_log/` holds; a table without that folder is no Delta table. */
export function listLog(table: string): LogListing {
  let names: string[];
  try {
    names = readdirSync(logDir(table));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new DeltaTableError('corrupt', `${table} is not a Delta table (no ${LOG_DIR} folder)`);
    throw error;
  }
  const commits: number[] = [];
  const single = new Map<number, string>();
  const parts = new Map<number, Map<number, string[]>>();
  for (const name of names) {
    const commit = COMMIT.exec(name);
    if (commit) commits.push(Number(commit[1]));
    const checkpoint = CHECKPOINT.exec(name);
    if (checkpoint) single.set(Number(checkpoint[1]), name);
    const part = CHECKPOINT_PART.exec(name);
    if (part) {
      // Writers that failed may leave parts of an incomplete attempt: the parts are grouped by
      // their count, and only a group with every part counts (PROTOCOL.md, multi-part checkpoints).
      const byCount = parts.get(Number(part[1])) ?? new Map<number, string[]>();
      const count = Number(part[3]);
      byCount.set(count, [...(byCount.get(count) ?? []), name]);
      parts.set(Number(part[1]), byCount);
    }
  }
  const checkpoints: Checkpoint[] = [...single].map(([version, name]) => ({ version, files: [name] }));
  for (const [version, byCount] of parts) {
    if (single.has(version)) continue;
    const complete = [...byCount].find(([count, files]) => new Set(files).size === count);
    if (complete) checkpoints.push({ version, files: complete[1].sort() });
  }
  commits.sort((a, b) => a - b);
  checkpoints.sort((a, b) => a.version - b.version);
  return { commits, checkpoints };
}

/** The actions of one commit file, in order. */
export function readCommit(table: string, version: number): Action[] {
  const file = join(logDir(table), commitName(version));
  const actions: Action[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      throw new DeltaTableError('corrupt', `${file}: line ${index + 1} is not JSON`);
    }
    const action = toAction(record as Record<string, unknown>);
    if (action) actions.push(action);
  }
  return actions;
}
