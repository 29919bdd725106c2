/**
 * efsync's Prometheus metrics (docs/runner.md, "Metrics"): one set of names for the daemon's
 * `/metrics`, the textfile of a one-shot run and a Pushgateway, on prom-client. Each set has its
 * own registry, not prom-client's global one, so two sets in one process (tests) never meet.
 *
 *   const metrics = new RunnerMetrics();
 *   runJob(job, { ..., observer: metrics.observer });   // service requests, retries, 429s, latency
 *   metrics.recordRun(result);                          // the run this process made
 *   await metrics.text(config);                         // the exposition, the warehouse read now
 *
 * The per-job, per-site, size and accuracy gauges come from the PUBLISHED warehouse (read-only, as
 * `efsync status` reads it), read again only when the file changed; a run of this process that
 * did not publish (it changed nothing) still shows as the job's last run. Labels are bounded:
 * efsync_job, table, site_id, site (a site file's name), resource, endpoint (the route template), status, subject, model, state.
 * (`efsync_job`, not `job`: Prometheus sets `job` and `instance` on every target it scrapes, and
 * a metric's own `job` would be renamed `exported_job` or clash with a Pushgateway's group.)
 */
import { existsSync, statSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestObserver } from '../api/client.js';
import type { LoadedConfig } from '../config.js';
import { Warehouse } from '../warehouse/warehouse.js';
import type { RunStatus } from './ledger.js';
import type { RunResult } from './run.js';

/** Every status a run's row can have; the status gauge is 1 for the last run's, 0 for the others. */
const STATUSES: readonly RunStatus[] = ['running', 'ok', 'partial', 'failed', 'interrupted', 'crashed', 'skipped'];

/** Service latency buckets, seconds: a quick GET to a long series read or a slow retry. */
const LATENCY_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** A job's newest run, from the ledger or from this process. */
export interface LastRun {
  job: string;
  status: RunStatus;
  startedAt: number;
  endedAt: number | null;
  rows: Record<string, number>;
  failures: number;
  /** When the job's newest ok run started; null when none did. */
  lastOkAt: number | null;
}

/** What the published warehouse says, read once per change of the file. */
interface WarehouseFacts {
  runs: LastRun[];
  /** Per site and resource: the newest stored valid time and vintage (issue time), epoch ms. */
  freshness: { siteId: string; resource: string; newestValue: number | null; newestVintage: number | null }[];
  nmae: { subject: string; model: string; percent: number }[];
  /** The newest sites-drift run's finding per site (docs/sites.md). */
  drift: { site: string; state: string; fields: number }[];
  sizeBytes: number;
}

export class RunnerMetrics {
  readonly registry = new Registry();
  private readonly r = {
    gauge: <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Gauge<L>({ name, help, labelNames, registers: [this.registry] }),
    counter: <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Counter<L>({ name, help, labelNames, registers: [this.registry] }),
    histogram: <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers: [this.registry] }),
  };
  private readonly lastStatus = this.r.gauge(
    'efsync_job_last_run_status',
    "The job's newest run: 1 for its status, 0 for the other statuses",
    ['efsync_job', 'status'],
  );
  private readonly lastStart = this.r.gauge(
    'efsync_job_last_run_start_timestamp_seconds',
    "When the job's newest run started (Unix seconds)",
    ['efsync_job'],
  );
  private readonly lastDuration = this.r.gauge(
    'efsync_job_last_run_duration_seconds',
    "How long the job's newest run took (absent while it runs)",
    ['efsync_job'],
  );
  private readonly lastOk = this.r.gauge(
    'efsync_job_last_success_timestamp_seconds',
    "When the job's newest run that ended ok started (Unix seconds)",
    ['efsync_job'],
  );
  private readonly lastRows = this.r.gauge('efsync_job_last_run_rows', "Rows the job's newest run wrote, per table", [
    'efsync_job',
    'table',
  ]);
  private readonly lastFailures = this.r.gauge(
    'efsync_job_last_run_failures',
    "Failures (a site, a resource, an item) the job's newest run recorded",
    ['efsync_job'],
  );
  private readonly runs = this.r.counter('efsync_job_runs_total', 'Runs this process made, by job and outcome', [
    'efsync_job',
    'status',
  ]);
  private readonly valueAt = this.r.gauge(
    'efsync_site_newest_value_timestamp_seconds',
    'Newest valid time stored per site and resource (actuals with a value, forecasts, outputs)',
    ['site_id', 'resource'],
  );
  private readonly valueAge = this.r.gauge(
    'efsync_site_newest_value_age_seconds',
    'Age of the newest valid time stored per site and resource, when the metrics were collected',
    ['site_id', 'resource'],
  );
  private readonly vintageAt = this.r.gauge(
    'efsync_site_newest_vintage_timestamp_seconds',
    'Issue time of the newest stored vintage per site and resource (forecasts, outputs)',
    ['site_id', 'resource'],
  );
  private readonly vintageAge = this.r.gauge(
    'efsync_site_newest_vintage_age_seconds',
    'Age of the newest stored vintage per site and resource, when the metrics were collected',
    ['site_id', 'resource'],
  );
  private readonly requests = this.r.counter(
    'efsync_service_requests_total',
    'Requests to the service by endpoint (route template) and HTTP status (none: no answer)',
    ['endpoint', 'status'],
  );
  private readonly retries = this.r.counter(
    'efsync_service_retries_total',
    'Requests repeated after a failure, by endpoint and the status that failed them',
    ['endpoint', 'status'],
  );
  private readonly throttled = this.r.counter(
    'efsync_service_throttled_total',
    'Answers 429 (the quota: the whole client pauses), by endpoint',
    ['endpoint'],
  );
  private readonly latency = this.r.histogram(
    'efsync_service_request_duration_seconds',
    'Time from sending a request to its whole answer, by endpoint',
    ['endpoint'],
    LATENCY_BUCKETS,
  );
  private readonly size = this.r.gauge('efsync_warehouse_size_bytes', 'Size of the published warehouse file');
  private readonly nmae = this.r.gauge(
    'efsync_accuracy_nmae_ratio',
    "The newest accuracy run's headline nMAE (total over its window) per subject and model, as a ratio of capacity",
    ['subject', 'model'],
  );
  private readonly drift = this.r.gauge(
    'efsync_site_drift_fields',
    'Per site of the sites folder, the fields the service holds otherwise than its file says, at the newest sites-drift run (0: in sync; state: in_sync, drifted, absent, orphaned, error)',
    ['site', 'state'],
  );

  /** Runs of this process, newest per job: they win over an older ledger (a run that did not publish). */
  private readonly ownRuns = new Map<string, LastRun>();
  private facts: { key: string; value: WarehouseFacts } | null = null;

  /** For the service client of each run. */
  readonly observer: RequestObserver = {
    request: (endpoint, status, seconds) => {
      this.requests.inc({ endpoint, status: status === null ? 'none' : String(status) });
      this.latency.observe({ endpoint }, seconds);
      if (status === 429) this.throttled.inc({ endpoint });
    },
    retry: (endpoint, status) => this.retries.inc({ endpoint, status: status === null ? 'none' : String(status) }),
  };

  recordRun(result: RunResult): void {
    this.runs.inc({ efsync_job: result.job, status: result.status });
    if (result.status === 'busy') return; // nothing ran, nothing was recorded
    const previous = this.ownRuns.get(result.job);
    this.ownRuns.set(result.job, {
      job: result.job,
      status: result.status,
      startedAt: result.startedAt,
      endedAt: result.endedAt,
      rows: result.rows,
      failures: result.failures.length,
      lastOkAt: result.status === 'ok' ? result.startedAt : (previous?.lastOkAt ?? null),
    });
  }

  /** The exposition, with the warehouse's gauges as the published file has them at `now`. */
  async text(config: LoadedConfig, now = Date.now()): Promise<string> {
    const facts = await this.warehouseFacts(config.warehouse.path);
    this.setRuns(facts?.runs ?? [], now);
    this.setFreshness(facts?.freshness ?? [], now);
    this.nmae.reset();
    for (const n of facts?.nmae ?? []) this.nmae.set({ subject: n.subject, model: n.model }, n.percent / 100);
    this.drift.reset();
    for (const d of facts?.drift ?? []) this.drift.set({ site: d.site, state: d.state }, d.fields);
    // No warehouse, no sample (a label-less gauge would otherwise say 0).
    if (facts) this.size.set(facts.sizeBytes);
    else this.size.remove();
    return this.registry.metrics();
  }

  private setRuns(ledger: LastRun[], now: number): void {
    const last = new Map(ledger.map((run) => [run.job, run]));
    for (const own of this.ownRuns.values()) {
      const stored = last.get(own.job);
      if (!stored || stored.startedAt <= own.startedAt)
        last.set(own.job, { ...own, lastOkAt: own.lastOkAt ?? stored?.lastOkAt ?? null });
    }
    for (const gauge of [this.lastStatus, this.lastStart, this.lastDuration, this.lastOk, this.lastRows]) gauge.reset();
    this.lastFailures.reset();
    for (const run of [...last.values()].sort((a, b) => a.job.localeCompare(b.job))) {
      const job = { efsync_job: run.job };
      for (const status of STATUSES) this.lastStatus.set({ ...job, status }, run.status === status ? 1 : 0);
      this.lastStart.set(job, run.startedAt / 1000);
      if (run.endedAt !== null) this.lastDuration.set(job, (run.endedAt - run.startedAt) / 1000);
      else if (run.status === 'running') this.lastDuration.set(job, (now - run.startedAt) / 1000);
      if (run.lastOkAt !== null) this.lastOk.set(job, run.lastOkAt / 1000);
      for (const [table, rows] of Object.entries(run.rows)) this.lastRows.set({ ...job, table }, rows);
      this.lastFailures.set(job, run.failures);
    }
  }

  private setFreshness(rows: WarehouseFacts['freshness'], now: number): void {
    for (const gauge of [this.valueAt, this.valueAge, this.vintageAt, this.vintageAge]) gauge.reset();
    for (const row of rows) {
      const labels = { site_id: row.siteId, resource: row.resource };
      if (row.newestValue !== null) {
        this.valueAt.set(labels, row.newestValue / 1000);
        this.valueAge.set(labels, (now - row.newestValue) / 1000);
      }
      if (row.newestVintage !== null) {
        this.vintageAt.set(labels, row.newestVintage / 1000);
        this.vintageAge.set(labels, (now - row.newestVintage) / 1000);
      }
    }
  }

  /** The published warehouse's facts, read again only when the file changed (a publish replaces it). */
  private async warehouseFacts(path: string): Promise<WarehouseFacts | null> {
    if (!existsSync(path)) return null;
    const stat = statSync(path);
    const key = `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
    if (this.facts?.key !== key) this.facts = { key, value: await readWarehouseFacts(path, stat.size) };
    return this.facts.value;
  }
}

async function readWarehouseFacts(path: string, sizeBytes: number): Promise<WarehouseFacts> {
  const wh = await Warehouse.open({ path, readOnly: true });
  try {
    return {
      runs: await lastRuns(wh),
      freshness: await freshness(wh),
      nmae: await headlineNmae(wh),
      drift: await siteDrift(wh),
      sizeBytes,
    };
  } finally {
    await wh.close();
  }
}

async function lastRuns(wh: Warehouse): Promise<LastRun[]> {
  const rows = await wh.all<{
    job: string;
    status: RunStatus;
    started_at: Date;
    ended_at: Date | null;
    rows_written: string | null;
    failures: bigint;
    last_ok_at: Date | null;
  }>(
    `SELECT job, status, started_at, ended_at, rows_written::VARCHAR AS rows_written, failures, last_ok_at
     FROM job_last_runs ORDER BY job`,
  );
  return rows.map((r) => ({
    job: r.job,
    status: r.status,
    startedAt: r.started_at.getTime(),
    endedAt: r.ended_at?.getTime() ?? null,
    rows: r.rows_written ? (JSON.parse(r.rows_written) as Record<string, number>) : {},
    failures: Number(r.failures),
    lastOkAt: r.last_ok_at?.getTime() ?? null,
  }));
}

/** Newest valid time and vintage per site: actuals (with a value), forecasts, model outputs. */
async function freshness(wh: Warehouse): Promise<WarehouseFacts['freshness']> {
  const rows = await wh.all<{ site_id: string; resource: string; value_ms: number | null; vintage_ms: number | null }>(
    `SELECT site_id, 'actuals' AS resource, epoch_ms(max(valid_time))::DOUBLE AS value_ms, NULL::DOUBLE AS vintage_ms
       FROM actuals WHERE value IS NOT NULL GROUP BY site_id
     UNION ALL
     SELECT site_id, 'forecasts', epoch_ms(max(valid_time))::DOUBLE, epoch_ms(max(update_time))::DOUBLE
       FROM forecasts GROUP BY site_id
     UNION ALL
     SELECT site_id, 'outputs', epoch_ms(max(valid_time))::DOUBLE, epoch_ms(max(as_of))::DOUBLE
       FROM model_outputs GROUP BY site_id
     ORDER BY site_id, resource`,
  );
  return rows.map((r) => ({
    siteId: r.site_id,
    resource: r.resource,
    newestValue: r.value_ms,
    newestVintage: r.vintage_ms,
  }));
}

/** The newest warehouse accuracy run's nMAE over its whole window (group total), per subject and model. */
async function headlineNmae(wh: Warehouse): Promise<WarehouseFacts['nmae']> {
  const rows = await wh.all<{ subject: string; model: string; value: number }>(
    `SELECT subject, model, value FROM accuracy_latest
     WHERE group_name = 'total' AND metric = 'nmae' AND value IS NOT NULL AND isfinite(value)
     ORDER BY subject, model`,
  );
  return rows.map((r) => ({ subject: r.subject, model: r.model, percent: r.value }));
}

/** The newest drift check per site; none in a snapshot published before sites were managed. */
async function siteDrift(wh: Warehouse): Promise<WarehouseFacts['drift']> {
  if (!(await wh.hasTable('site_drift'))) return [];
  return wh.all<{ site: string; state: string; fields: number }>(
    `SELECT site_name AS site, state, fields FROM site_drift ORDER BY site_name`,
  );
}
