// The run ledger: the `runs` and `run_failures` tables of 001_core.sql, as the runner writes and
// reads them. Instants go in as ISO text cast to TIMESTAMPTZ and come back as epoch ms.
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { VARCHAR } from '../warehouse/duckdb-api.js';
import { appendBlocks } from '../warehouse/staging.js';
import { instant, quoteLiteral } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { Failure } from '../outcome.js';

/** `crashed`: left `running` by a process that died (killed, power cut); set by the next run. */
export type RunStatus = 'running' | 'ok' | 'partial' | 'failed' | 'interrupted' | 'crashed' | 'skipped';
export type Trigger = 'manual' | 'schedule' | 'catch-up' | 'retry';

export interface RunRow {
  runId: string;
  job: string;
  trigger: Trigger;
  scheduledFor: number | null;
  attempt: number;
  startedAt: number;
  endedAt: number | null;
  status: RunStatus;
  rowsWritten: Record<string, number> | null;
  errorSummary: string | null;
  host: string | null;
  pid: number | null;
}

/** Who runs: written into the ledger and named when another process finds the warehouse busy. */
export interface Runner {
  host: string;
  pid: number;
}

export const THIS_PROCESS: Runner = { host: hostname(), pid: process.pid };

/** A new ledger row: `running` at the start of a run, or a finished `skipped` one (with endedAt). */
export async function insertRun(
  wh: Warehouse,
  run: Omit<RunRow, 'endedAt' | 'rowsWritten'> & { endedAt?: number },
): Promise<void> {
  await wh.run(
    `INSERT INTO runs (run_id, job, trigger, scheduled_for, attempt, started_at, ended_at, status, error_summary, host, pid)
     VALUES ($1, $2, $3, ${instant('$4')}, $5, ${instant('$6')}, ${instant('$7')}, $8, $9, $10, $11)`,
    [
      run.runId,
      run.job,
      run.trigger,
      run.scheduledFor,
      run.attempt,
      run.startedAt,
      run.endedAt ?? null,
      run.status,
      run.errorSummary,
      run.host,
      run.pid,
    ],
  );
}

export async function finishRun(
  wh: Warehouse,
  runId: string,
  end: {
    status: RunStatus;
    endedAt: number;
    rowsWritten: Record<string, number>;
    rowsRemoved?: Record<string, number>;
    errorSummary: string | null;
    defaulted?: Record<string, number>;
  },
): Promise<void> {
  const nonEmpty = (counts: Record<string, number> | undefined) =>
    counts && Object.keys(counts).length > 0 ? JSON.stringify(counts) : null;
  // A run a second signal recorded as interrupted stays so: the statements it interrupted fail
  // the job in the moment before the process exits, and that is not the run's outcome.
  await wh.run(
    `UPDATE runs SET status = $2, ended_at = ${instant('$3')}, rows_written = $4::JSON, error_summary = $5, defaulted = $6::JSON,
       rows_removed = $7::JSON
     WHERE run_id = $1 AND status <> 'interrupted'`,
    [
      runId,
      end.status,
      end.endedAt,
      JSON.stringify(end.rowsWritten),
      end.errorSummary,
      nonEmpty(end.defaulted),
      nonEmpty(end.rowsRemoved),
    ],
  );
}

/**
 * The run's failures, in one statement whatever their number: staged through the appender, as a
 * night can fail an item at every site (the newest output of every model given up).
 */
export async function insertFailures(wh: Warehouse, runId: string, failures: Failure[], at: number): Promise<void> {
  if (failures.length === 0) return;
  const text = (value: (failure: Failure) => string | undefined) => ({
    type: VARCHAR,
    values: failures.map((failure) => value(failure) ?? null),
  });
  await wh.exclusive(async () => {
    await wh.run(
      'CREATE OR REPLACE TEMP TABLE failures_in (site_id VARCHAR, resource VARCHAR, error VARCHAR, item VARCHAR, field_path VARCHAR)',
    );
    await appendBlocks(wh, 'failures_in', [
      {
        rows: failures.length,
        columns: [
          text((f) => f.siteId),
          text((f) => f.resource),
          text((f) => f.reason),
          text((f) => f.item),
          text((f) => f.fieldPath),
        ],
      },
    ]);
    await wh.run(
      `INSERT INTO run_failures (run_id, site_id, resource, error, failed_at, item, field_path)
       SELECT $1, site_id, resource, error, ${instant('$2')}, item, field_path FROM temp.failures_in`,
      [runId, at],
    );
    await wh.run('DROP TABLE temp.failures_in');
  });
}

/** How long a second signal's record of the run keeps trying while the run's own write holds its row. */
const RECORD_ASIDE_WITHIN_MS = 4_000;
const RECORD_ASIDE_EVERY_MS = 25;

/**
 * The run is stopped hard (a second signal) while its job may hold the connection in a
 * transaction: the status is written on a connection of its own and committed at once. The
 * run's own last write of its row may be in flight at that moment (DuckDB then refuses one of
 * the two as a conflict): the record is tried again until that write has committed (the row is
 * no longer running, and nothing changes) or rolled back under the interrupt.
 */
export async function recordInterrupted(wh: Warehouse, runId: string, at: number, reason: string): Promise<void> {
  const giveUpAt = Date.now() + RECORD_ASIDE_WITHIN_MS;
  for (;;) {
    try {
      await wh.runAside(
        `UPDATE runs SET status = 'interrupted', ended_at = ${instant('$2')}, error_summary = $3 WHERE run_id = $1 AND status = 'running'`,
        [runId, at, reason],
      );
      return;
    } catch (error) {
      if (Date.now() >= giveUpAt) throw error;
      await sleep(RECORD_ASIDE_EVERY_MS);
    }
  }
}

/**
 * Whether the published snapshot already holds everything the writer file does except runs that
 * changed nothing (ended ok, no row written, no failure; `runId`, the run ending now, is one):
 * the same migrations and views definition, and every other run in it with the same status. A
 * run that changed nothing then leaves the snapshot as it is (docs/warehouse.md, "When a run
 * publishes"). Runs after an interrupted, failed or crashed one, or after skips were recorded,
 * see a difference and publish. False when there is no snapshot or it cannot be read (a session holds it read-write).
 */
export async function snapshotHoldsAllBut(wh: Warehouse, runId: string): Promise<boolean> {
  return wh.exclusive(async () => {
    try {
      await wh.run(`ATTACH ${quoteLiteral(wh.path)} AS efsync_snapshot (READ_ONLY)`);
    } catch {
      return false;
    }
    try {
      const [row] = await wh.all<{ same_schema: boolean; unpublished: bigint }>(
        `SELECT NOT EXISTS (SELECT version FROM schema_migrations EXCEPT SELECT version FROM efsync_snapshot.schema_migrations)
                AND NOT EXISTS (SELECT version FROM efsync_snapshot.schema_migrations EXCEPT SELECT version FROM schema_migrations)
                AND (SELECT digest FROM schema_views) = (SELECT digest FROM efsync_snapshot.schema_views) AS same_schema,
                (SELECT count(*) FROM runs w
                 WHERE w.run_id <> $1
                   AND NOT EXISTS (SELECT 1 FROM efsync_snapshot.runs s WHERE s.run_id = w.run_id AND s.status = w.status)
                   AND NOT (w.status = 'ok'
                            AND NOT EXISTS (SELECT 1 FROM run_failures f WHERE f.run_id = w.run_id)
                            AND coalesce(list_sum(map_values(w.rows_written::MAP(VARCHAR, BIGINT))), 0) = 0)
                ) AS unpublished`,
        [runId],
      );
      return row.same_schema === true && row.unpublished === 0n;
    } catch {
      return false;
    } finally {
      await wh.run('DETACH efsync_snapshot');
    }
  });
}

/**
 * Runs still marked `running` whose process is gone. Called while holding the writer lock, so
 * no other process can be writing: every `running` row is left over from a crash.
 */
export async function markOrphanedRuns(wh: Warehouse, at: number): Promise<string[]> {
  const orphans = await wh.all<{ run_id: string; host: string | null; pid: number | null }>(
    `SELECT run_id, host, pid FROM runs WHERE status = 'running'`,
  );
  for (const orphan of orphans) {
    await wh.run(
      `UPDATE runs SET status = 'crashed', ended_at = coalesce(ended_at, ${instant('$2')}), error_summary = $3
       WHERE run_id = $1`,
      [
        orphan.run_id,
        at,
        `the process (${orphan.host ?? '?'} pid ${orphan.pid ?? '?'}) ended without recording an outcome`,
      ],
    );
  }
  return orphans.map((o) => o.run_id);
}

/**
 * The run that already took this slot, if any, so a slot is never run twice (a double fire, two
 * daemons, a DST hour that repeats): any run of the slot that did not end failed or interrupted,
 * or any run of this attempt or a later one. A failed slot can be retried, an interrupted or
 * crashed one caught up, each once per attempt number.
 */
export async function slotTakenBy(
  wh: Warehouse,
  job: string,
  scheduledFor: number,
  attempt: number,
): Promise<string | null> {
  const rows = await wh.all<{ run_id: string }>(
    `SELECT run_id FROM runs WHERE job = $1 AND scheduled_for = ${instant('$2')}
       AND (status NOT IN ('failed', 'interrupted', 'crashed') OR attempt >= $3)
     ORDER BY started_at LIMIT 1`,
    [job, scheduledFor, attempt],
  );
  return rows[0]?.run_id ?? null;
}

/** The highest attempt recorded for a slot (0 when none), so a catch-up of it is the next attempt. */
export async function lastAttempt(wh: Warehouse, job: string, scheduledFor: number): Promise<number> {
  const rows = await wh.all<{ attempt: number | null }>(
    `SELECT max(attempt) AS attempt FROM runs WHERE job = $1 AND scheduled_for = ${instant('$2')}`,
    [job, scheduledFor],
  );
  return rows[0]?.attempt ?? 0;
}

/**
 * Per job, the start of its newest run that counts as having covered the schedule up to then:
 * every run except interrupted and crashed ones (such a nightly is caught up at the next start).
 */
export async function coveredUntil(wh: Warehouse): Promise<Map<string, number>> {
  const rows = await wh.all<{ job: string; covered: Date }>(
    `SELECT job, max(greatest(started_at, coalesce(scheduled_for, started_at))) AS covered
     FROM runs WHERE status NOT IN ('interrupted', 'crashed', 'running') GROUP BY job`,
  );
  return new Map(rows.map((r) => [r.job, r.covered.getTime()]));
}

interface RunRecord {
  run_id: string;
  job: string;
  trigger: Trigger;
  scheduled_for: Date | null;
  attempt: number;
  started_at: Date;
  ended_at: Date | null;
  status: RunStatus;
  rows_written: string | null;
  error_summary: string | null;
  host: string | null;
  pid: number | null;
}

export function toRunRow(r: RunRecord): RunRow {
  return {
    runId: r.run_id,
    job: r.job,
    trigger: r.trigger,
    scheduledFor: r.scheduled_for?.getTime() ?? null,
    attempt: r.attempt,
    startedAt: r.started_at.getTime(),
    endedAt: r.ended_at?.getTime() ?? null,
    status: r.status,
    rowsWritten: r.rows_written ? (JSON.parse(r.rows_written) as Record<string, number>) : null,
    errorSummary: r.error_summary,
    host: r.host,
    pid: r.pid,
  };
}
