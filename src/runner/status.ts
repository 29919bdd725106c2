/**
 * `efsync status`: what ran and what failed, what runs next, and how fresh each site's data is.
 * It reads the PUBLISHED warehouse read-only (the writer works on its own file), so it answers
 * while a sync runs; the run in progress, if any, is named from the writer lock.
 */
import { existsSync, readFileSync } from 'node:fs';
import { type LoadedConfig, sizesOf } from '../config.js';
import { belowSmallest, describeSizes, type Sizes } from '../resources/sizes.js';
import { holderAlive, type LockHolder } from '../warehouse/lock.js';
import { Warehouse } from '../warehouse/warehouse.js';
import { formatExactInstant, formatInZone } from '../time.js';
import { toRunRow, type RunRow } from './ledger.js';
import type { JobRegistry } from './registry.js';
import { jobSchedules, upcoming } from './schedule.js';

export interface JobStatus {
  job: string;
  description: string;
  schedule: string | null;
  scheduleSource: 'config' | 'default';
  /** Next slots in the configured zone (ISO with offset); empty when not scheduled. */
  next: string[];
  last:
    | (Omit<RunRow, 'scheduledFor' | 'startedAt' | 'endedAt'> & {
        scheduledFor: string | null;
        startedAt: string;
        endedAt: string | null;
        failures: number;
        lastOkAt: string | null;
      })
    | null;
}

export interface FailureStatus {
  runId: string;
  job: string;
  siteId: string | null;
  resource: string | null;
  error: string;
  failedAt: string;
}

export interface Status {
  generatedAt: string;
  timezone: string;
  warehouse: string;
  /** The sizes the memory budget sets (src/resources/sizes.ts), as a run of this config would take them. */
  memory: Sizes;
  /** False before the first run has published a warehouse. */
  published: boolean;
  /** The process writing now, from the writer lock; `alive: false` when it crashed (the next run takes over). */
  writing: (LockHolder & { alive: boolean }) | null;
  jobs: JobStatus[];
  /** Job modules in jobs/ that did not load, with the reason. */
  brokenJobs: { job: string; error: string }[];
  /** One row per site: newest actual and forecast stored (ISO UTC). */
  freshness: Record<string, unknown>[];
  failures: FailureStatus[];
  /** Actuals carrying each data-quality flag, per site (view actual_flag_counts); flags no actual carries are left out. */
  flags: FlagCount[];
  /** Vintages the sync gave up reading (vintage_reads, docs/sync.md "Vintages one by one"), newest first; and how many are still pending. */
  vintages: { givenUp: GivenUpVintage[]; pending: number };
  /** Sites as code (docs/sites.md): the newest changes applied, newest first, and the sites the newest drift check found not as their files say. */
  sites: { changes: SiteChange[]; drift: SiteDrift[] };
}

export interface SiteChange {
  appliedAt: string;
  site: string;
  action: string;
  /** As a site file writes it: `settings.model_resolution`, `models.ai.serving_priority`. */
  field: string;
  /** JSON text; null when there was none. */
  before: string | null;
  after: string | null;
  status: string;
  error: string | null;
}

export interface SiteDrift {
  site: string;
  state: string;
  summary: string;
  checkedAt: string;
}

export interface GivenUpVintage {
  siteId: string;
  /** forecasts or outputs */
  resource: string;
  /** The model of an output vintage; null for the site forecast. */
  modelId: string | null;
  /** The issue time (outputs: the cron fire), ISO UTC to the microsecond. */
  issue: string;
  attempts: number;
  reason: string;
  lastFailedAt: string;
}

export interface FlagCount {
  siteId: string;
  /** The site's name, as the report and people name it. */
  site: string;
  flag: string;
  count: number;
  /** The latest valid time flagged (ISO UTC). */
  lastTime: string;
}

const RECENT_FAILURES = 20;
const RECENT_SITE_CHANGES = 20;
const NEXT_SLOTS = 3;

export async function collectStatus(config: LoadedConfig, registry: JobRegistry, now = Date.now()): Promise<Status> {
  const tz = config.schedule.timezone;
  const path = config.warehouse.path;
  const published = existsSync(path);
  const writing = readLock(`${path}.lock`);
  const ledger = published
    ? await readPublished(path, writing)
    : {
        last: new Map(),
        freshness: [],
        failures: [],
        flags: [],
        vintages: { givenUp: [], pending: 0 },
        sites: { changes: [], drift: [] },
      };
  const jobs = jobSchedules(config, registry).map(
    (s): JobStatus => ({
      job: s.job,
      description: registry.get(s.job).description,
      schedule: s.expr,
      scheduleSource: s.source,
      next: s.expr === null ? [] : upcoming(s.expr, tz, now, NEXT_SLOTS).map((ms) => formatInZone(ms, tz)),
      last: ledger.last.get(s.job) ?? null,
    }),
  );
  return {
    generatedAt: new Date(now).toISOString(),
    timezone: tz,
    warehouse: path,
    memory: sizesOf(config),
    published,
    writing,
    jobs,
    brokenJobs: [...registry.broken].map(([job, error]) => ({ job, error: error.message })),
    freshness: ledger.freshness,
    failures: ledger.failures,
    flags: ledger.flags,
    vintages: ledger.vintages,
    sites: ledger.sites,
  };
}

async function readPublished(path: string, writing: Status['writing']) {
  const wh = await Warehouse.open({ path, readOnly: true });
  try {
    return {
      last: await lastRuns(wh, writing),
      freshness: await freshness(wh),
      failures: await recentFailures(wh),
      flags: await flagCounts(wh),
      vintages: await vintageReads(wh),
      sites: await sitesAsCode(wh),
    };
  } finally {
    await wh.close();
  }
}

async function lastRuns(
  wh: Warehouse,
  writing: Status['writing'],
): Promise<Map<string, NonNullable<JobStatus['last']>>> {
  const rows = await wh.all<Parameters<typeof toRunRow>[0] & { failures: bigint; last_ok_at: Date | null }>(
    `SELECT * REPLACE (rows_written::VARCHAR AS rows_written) FROM job_last_runs ORDER BY job`,
  );
  return new Map(
    rows.map((r) => {
      const run = toRunRow(r);
      return [
        run.job,
        {
          ...run,
          status: shownStatus(run, writing),
          scheduledFor: iso(run.scheduledFor),
          startedAt: new Date(run.startedAt).toISOString(),
          endedAt: iso(run.endedAt),
          failures: Number(r.failures),
          lastOkAt: r.last_ok_at?.toISOString() ?? null,
        },
      ];
    }),
  );
}

/** A run still marked running that no live lock holder runs crashed: shown as the next run will mark it. */
function shownStatus(run: RunRow, writing: Status['writing']): RunRow['status'] {
  if (run.status !== 'running') return run.status;
  return writing?.alive && writing.runId === run.runId ? 'running' : 'crashed';
}

/** W's `site_freshness` view (002_views.sql): newest actual and forecast per site. */
async function freshness(wh: Warehouse): Promise<Record<string, unknown>[]> {
  return (await wh.all<Record<string, unknown>>(`SELECT * FROM site_freshness ORDER BY site_id`)).map(plainValues);
}

async function flagCounts(wh: Warehouse): Promise<FlagCount[]> {
  // a snapshot published before migration 011 has no flags yet
  const [{ views }] = await wh.all<{ views: bigint }>(
    `SELECT count(*) AS views FROM duckdb_views() WHERE view_name = 'actual_flag_counts'`,
  );
  if (Number(views) === 0) return [];
  const rows = await wh.all<{ site_id: string; site: string; flag: string; flagged: bigint; last_time: Date }>(
    `SELECT c.site_id, coalesce(s.name, c.site_id) AS site, c.flag, c.flagged, c.last_time
     FROM actual_flag_counts c LEFT JOIN sites s USING (site_id) ORDER BY site, c.site_id, c.bit`,
  );
  return rows.map((r) => ({
    siteId: r.site_id,
    site: r.site,
    flag: r.flag,
    count: Number(r.flagged),
    lastTime: r.last_time.toISOString(),
  }));
}

const GIVEN_UP_SHOWN = 50;

async function vintageReads(wh: Warehouse): Promise<Status['vintages']> {
  // a snapshot published before migration 018 has no vintage_reads yet
  if (!(await wh.hasTable('vintage_reads'))) return { givenUp: [], pending: 0 };
  const [{ pending }] = await wh.all<{ pending: bigint }>(
    `SELECT count(*) AS pending FROM vintage_reads WHERE status = 'pending'`,
  );
  const rows = await wh.all<{
    site_id: string;
    resource: string;
    model_id: string;
    issue: bigint;
    attempts: number;
    reason: string;
    last_failed_at: Date;
  }>(
    `SELECT site_id, resource, model_id, epoch_us(issue) AS issue, attempts, reason, last_failed_at FROM vintage_reads
     WHERE status = 'given_up' ORDER BY issue DESC, site_id, resource, model_id LIMIT ${GIVEN_UP_SHOWN}`,
  );
  return {
    pending: Number(pending),
    givenUp: rows.map((r) => ({
      siteId: r.site_id,
      resource: r.resource,
      modelId: r.model_id === '' ? null : r.model_id,
      issue: formatExactInstant(Number(r.issue) / 1000),
      attempts: Number(r.attempts),
      reason: r.reason,
      lastFailedAt: r.last_failed_at.toISOString(),
    })),
  };
}

async function sitesAsCode(wh: Warehouse): Promise<Status['sites']> {
  // a snapshot published before migration 031 has no sites ledger yet
  if (!(await wh.hasTable('site_changes'))) return { changes: [], drift: [] };
  const changes = await wh.all<Omit<SiteChange, 'appliedAt'> & { appliedAt: Date }>(
    `SELECT applied_at AS appliedAt, site_name AS site, action, field, before::VARCHAR AS before, after::VARCHAR AS after,
            status, error
     FROM site_changes ORDER BY applied_at DESC, site_name, field LIMIT ${RECENT_SITE_CHANGES}`,
  );
  const drift = await wh.all<Omit<SiteDrift, 'checkedAt'> & { checkedAt: Date }>(
    `SELECT site_name AS site, state, summary, checked_at AS checkedAt FROM site_drift WHERE state <> 'in_sync' ORDER BY site_name`,
  );
  return {
    changes: changes.map((c) => ({ ...c, appliedAt: c.appliedAt.toISOString() })),
    drift: drift.map((d) => ({ ...d, checkedAt: d.checkedAt.toISOString() })),
  };
}

async function recentFailures(wh: Warehouse): Promise<FailureStatus[]> {
  const rows = await wh.all<{
    run_id: string;
    job: string;
    site_id: string | null;
    resource: string | null;
    error: string;
    failed_at: Date;
  }>(
    `SELECT f.run_id, r.job, f.site_id, f.resource, f.error, f.failed_at
     FROM run_failures f JOIN runs r USING (run_id)
     ORDER BY f.failed_at DESC, f.run_id, f.site_id LIMIT ${RECENT_FAILURES}`,
  );
  return rows.map((r) => ({
    runId: r.run_id,
    job: r.job,
    siteId: r.site_id,
    resource: r.resource,
    error: r.error,
    failedAt: r.failed_at.toISOString(),
  }));
}

/** The writer lock's holder; `alive` false when it is dead (lock.ts holderAlive): a crash. */
function readLock(lockPath: string): (LockHolder & { alive: boolean }) | null {
  let holder: LockHolder;
  try {
    holder = JSON.parse(readFileSync(lockPath, 'utf8')) as LockHolder;
  } catch {
    return null;
  }
  return { ...holder, alive: holderAlive(holder, lockPath) };
}

/** Dates as ISO text and BIGINTs as numbers, for JSON and for the table. */
function plainValues(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(row).map(([key, value]) => [
      key,
      value instanceof Date ? value.toISOString() : typeof value === 'bigint' ? Number(value) : value,
    ]),
  );
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The human view: a few aligned tables. */
export function formatStatus(status: Status): string[] {
  const lines: string[] = [];
  lines.push(`warehouse ${status.warehouse}${status.published ? '' : ' (nothing published yet)'}`);
  lines.push(describeSizes(status.memory));
  const tooSmall = belowSmallest(status.memory.budget);
  if (tooSmall) lines.push(`warning: ${tooSmall}`);
  if (status.writing) {
    const w = status.writing;
    lines.push(
      w.alive
        ? `writing now: ${w.job} (run ${w.runId}, pid ${w.pid} on ${w.host}) since ${w.startedAt}`
        : `crashed: ${w.job} (run ${w.runId}, pid ${w.pid}) ended without releasing the lock; the next run marks it crashed`,
    );
  }
  lines.push('', `jobs (times in ${status.timezone})`);
  lines.push(
    ...table(
      ['job', 'schedule', 'next', 'last run', 'status', 'rows', 'error'],
      status.jobs.map((j) => [
        j.job,
        j.schedule ?? '-',
        j.next[0] ?? '-',
        j.last ? formatInZone(Date.parse(j.last.startedAt), status.timezone) : 'never',
        j.last ? j.last.status : '-',
        j.last?.rowsWritten ? String(Object.values(j.last.rowsWritten).reduce((a, b) => a + b, 0)) : '-',
        j.last?.errorSummary ?? '',
      ]),
    ),
  );
  for (const broken of status.brokenJobs)
    lines.push(`  ${broken.job}: jobs/${broken.job}.ts did not load: ${broken.error}`);
  lines.push('', 'freshness per site (UTC)');
  if (status.freshness.length === 0) lines.push('  no sites synced yet');
  else {
    const columns = Object.keys(status.freshness[0]);
    lines.push(
      ...table(
        columns,
        status.freshness.map((row) => columns.map((c) => String(row[c] ?? '-'))),
      ),
    );
  }
  lines.push('', 'data-quality flags on actuals (left out of accuracy scores; docs/accuracy.md)');
  lines.push(
    ...(status.flags.length === 0
      ? ['  none']
      : table(
          ['site', 'id', 'flag', 'actuals', 'latest (UTC)'],
          status.flags.map((f) => [f.site, f.siteId, f.flag, String(f.count), f.lastTime]),
        )),
  );
  const { givenUp, pending } = status.vintages;
  lines.push('', `vintages given up (${givenUp.length}; ${pending} pending, read again by the next sync)`);
  lines.push(
    ...(givenUp.length === 0
      ? ['  none']
      : table(
          ['issue (UTC)', 'site', 'resource', 'model', 'reads', 'reason'],
          givenUp.map((v) => [v.issue, v.siteId, v.resource, v.modelId ?? '-', String(v.attempts), v.reason]),
        )),
  );
  const { changes, drift } = status.sites;
  lines.push('', `site changes applied (newest ${changes.length}; docs/sites.md)`);
  lines.push(
    ...(changes.length === 0
      ? ['  none']
      : table(
          ['applied at', 'site', 'action', 'field', 'before -> after', 'status'],
          changes.map((c) => [
            c.appliedAt,
            c.site,
            c.action,
            c.field,
            `${c.before ?? '-'} -> ${c.after ?? '-'}`,
            c.error ? `${c.status}: ${c.error}` : c.status,
          ]),
        )),
  );
  lines.push('', `sites not as their files say (${drift.length}, at the newest sites-drift run)`);
  lines.push(
    ...(drift.length === 0
      ? ['  none']
      : table(
          ['site', 'state', 'checked at', 'what'],
          drift.map((d) => [d.site, d.state, d.checkedAt, d.summary]),
        )),
  );
  lines.push('', `recent failures (${status.failures.length})`);
  lines.push(
    ...(status.failures.length === 0
      ? ['  none']
      : table(
          ['failed at', 'job', 'site', 'resource', 'error'],
          status.failures.map((f) => [f.failedAt, f.job, f.siteId ?? '-', f.resource ?? '-', f.error]),
        )),
  );
  return lines;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    `  ${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('  ')}`;
  return [line(header), ...rows.map(line)];
}
