// The push ledger (warehouse table capacity_pushes): what was pushed, from which file and
// commit, and what the service said. Plan diffs against the last successful push of each site.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { formatMinute, parseInstant } from '../time.js';
import { instant } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { TimelinePoint } from './validate.js';

export interface PushRecord {
  runId: string | null;
  siteId: string;
  file: string;
  contentHash: string;
  gitCommit: string | null;
  points: TimelinePoint[];
  /** The service's points the file removed, deleted after the upload; null when none. */
  deletedPoints: TimelinePoint[] | null;
  /** A failed push: the service's timeline read back after it (change points over the window); else null. */
  heldPoints: TimelinePoint[] | null;
  response: unknown;
  status: 'ok' | 'failed';
  error: string | null;
  pushedAt: number;
}

export interface StoredPush extends PushRecord {
  pushId: string;
}

/** Points as they travel and as the ledger keeps them: `{valid_time: 'YYYY-MM-DDTHH:MMZ', value}` in kW. */
export function wirePoints(points: TimelinePoint[]): { valid_time: string; value: number }[] {
  return points.map((p) => ({ valid_time: formatMinute(p.time), value: p.valueKw }));
}

export async function recordPush(warehouse: Warehouse, push: PushRecord): Promise<string> {
  const pushId = randomUUID();
  await warehouse.run(
    `INSERT INTO capacity_pushes (push_id, run_id, site_id, file, content_hash, git_commit, points, deleted_points, response, status, error, pushed_at, held_points)
     VALUES ($1, $2, $3, $4, $5, $6, $7::JSON, $8::JSON, $9::JSON, $10, $11, ${instant('$12')}, $13::JSON)`,
    [
      pushId,
      push.runId,
      push.siteId,
      push.file,
      push.contentHash,
      push.gitCommit,
      JSON.stringify(wirePoints(push.points)),
      push.deletedPoints === null ? null : JSON.stringify(wirePoints(push.deletedPoints)),
      push.response === undefined ? null : JSON.stringify(push.response),
      push.status,
      push.error,
      push.pushedAt,
      push.heldPoints === null ? null : JSON.stringify(wirePoints(push.heldPoints)),
    ],
  );
  return pushId;
}

/** A row of capacity_pushes as SELECT_PUSH reads it (the JSON columns as text). */
export interface PushRow {
  push_id: string;
  run_id: string | null;
  site_id: string;
  file: string;
  content_hash: string;
  git_commit: string | null;
  points: string;
  deleted_points: string | null;
  held_points: string | null;
  response: string | null;
  status: 'ok' | 'failed';
  error: string | null;
  pushed_at: Date;
}

const SELECT_PUSH = `SELECT push_id, run_id, site_id, file, content_hash, git_commit, points::VARCHAR AS points,
  deleted_points::VARCHAR AS deleted_points, held_points::VARCHAR AS held_points, response::VARCHAR AS response, status, error, pushed_at FROM capacity_pushes`;

function pointsOf(json: string): TimelinePoint[] {
  return (JSON.parse(json) as { valid_time: string; value: number }[]).map((p) => ({
    time: parseInstant(p.valid_time),
    valueKw: p.value,
  }));
}

function fromRow(row: PushRow): StoredPush {
  return {
    pushId: row.push_id,
    runId: row.run_id,
    siteId: row.site_id,
    file: row.file,
    contentHash: row.content_hash,
    gitCommit: row.git_commit,
    points: pointsOf(row.points),
    deletedPoints: row.deleted_points === null ? null : pointsOf(row.deleted_points),
    heldPoints: row.held_points === null ? null : pointsOf(row.held_points),
    response: row.response === null ? null : JSON.parse(row.response),
    status: row.status,
    error: row.error,
    pushedAt: row.pushed_at.getTime(),
  };
}

/** The newest successful push of each site. */
export async function lastSuccessfulPushes(warehouse: Warehouse): Promise<Map<string, StoredPush>> {
  // A snapshot published before the capacity migration has no ledger yet: nothing was pushed.
  if (!(await warehouse.hasTable('capacity_pushes'))) return new Map();
  const rows = await warehouse.all<PushRow>(
    `${SELECT_PUSH} WHERE status = 'ok' QUALIFY row_number() OVER (PARTITION BY site_id ORDER BY pushed_at DESC, push_id) = 1`,
  );
  return new Map(rows.map((row) => [row.site_id, fromRow(row)]));
}

/** HEAD of the git repository holding `dir`, or null when it is in none (or git is missing). */
export function gitCommit(dir: string): string | null {
  try {
    return (
      execFileSync('git', ['-C', dir, 'rev-parse', '--verify', 'HEAD'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() || null
    );
  } catch {
    return null;
  }
}
