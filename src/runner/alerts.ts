/**
 * Alerts to webhooks (`alerts:` in the config; docs/runner.md, "Alerts"). After each run (and in
 * the daemon every `ALERT_EVERY_MS` while idle) the writer's ledger is read for three kinds:
 *
 * - `run/<job>`: the job's last run failed, crashed or ended partial (resolved by an ok run;
 *   skipped, interrupted and running leave it as it is);
 * - `stale/<site_id>/actual|forecast`: the site's newest actual, or newest forecast vintage, is
 *   older than `monitoring.actual_age.crit` / `forecast_age.crit`;
 * - `missed/<job>`: a slot of the job's schedule passed `alerts.missed_grace` ago with no run;
 * - `drift/<site name>`: the newest sites-drift run found the site not as its file says
 *   (docs/sites.md), resolved when a later one finds it so again.
 *
 * Each is compared with `alert_states`: only a change of state (firing, then resolved) is sent,
 * once per webhook, each delivery retried and recorded in `alert_deliveries`. An alert first seen
 * not firing is recorded silently. Under the writer lock, published only when something changed.
 */
import { type LoadedConfig, sizesOf } from '../config.js';
import { newRunId, type Logger } from '../log.js';
import { WarehouseBusyError } from '../warehouse/lock.js';
import { instant } from '../warehouse/sql.js';
import { Warehouse } from '../warehouse/warehouse.js';
import { formatAge } from './age.js';
import { coveredUntil } from './ledger.js';
import type { ScheduledJob } from './scheduler.js';
import { nextSlots } from './slots.js';
import { deliver, type AlertChange, type Delivery } from './webhook.js';

/** How often the idle daemon looks for stale sites and missed slots between runs. */
export const ALERT_EVERY_MS = 15 * 60_000;

export interface AlertOptions {
  config: LoadedConfig;
  /** The jobs that have a schedule (schedule.ts jobSchedules). */
  schedules: readonly ScheduledJob[];
  log: Logger;
  now: number;
  /** How long to wait for another writer (0 in the idle daemon: it tries again later). */
  lockWaitMs: number;
}

/** Evaluates and delivers; the changes sent, or null when alerts are off or the warehouse was busy. */
export async function evaluateAlerts(options: AlertOptions): Promise<AlertChange[] | null> {
  const { config, log } = options;
  if (config.alerts.webhooks.length === 0 || config.sink !== 'warehouse') return null;
  let wh: Warehouse;
  try {
    wh = await Warehouse.open({
      path: config.warehouse.path,
      lockWaitMs: options.lockWaitMs,
      memoryLimit: config.warehouse.memory_limit,
      rows: sizesOf(config).rows,
      holder: { job: 'alerts', runId: newRunId(options.now) },
    });
  } catch (error) {
    if (!(error instanceof WarehouseBusyError)) throw error;
    log.info('alerts not evaluated: another efsync process is writing; the next run evaluates them');
    return null;
  }
  try {
    const changes = await changesOf(wh, await currentAlerts(wh, options), options.now);
    for (const change of changes) await send(wh, change, options);
    if (changes.length > 0) await wh.publish();
    return changes;
  } finally {
    await wh.close();
  }
}

type Current = Omit<AlertChange, 'at'>;

async function currentAlerts(wh: Warehouse, { config, schedules, now }: AlertOptions): Promise<Current[]> {
  const alerts: Current[] = [];
  const runs = await wh.all<{ job: string; status: string; error_summary: string | null }>(
    `SELECT job, status, error_summary FROM job_last_runs WHERE status IN ('ok', 'partial', 'failed', 'crashed') ORDER BY job`,
  );
  for (const run of runs) {
    const firing = run.status !== 'ok';
    const why = run.error_summary ? `: ${run.error_summary.split('\n')[0]}` : '';
    alerts.push({
      key: `run/${run.job}`,
      kind: 'run',
      firing,
      summary: firing ? `${run.job}: the last run ended ${run.status}${why}` : `${run.job}: the last run ended ok`,
      labels: { efsync_job: run.job, status: run.status },
    });
  }
  const sites = await wh.all<{ site_id: string; name: string | null; actual: Date | null; forecast: Date | null }>(
    `SELECT site_id, name, newest_actual AS actual, newest_forecast_update_time AS forecast FROM site_freshness ORDER BY site_id`,
  );
  const { actual_age: actualAge, forecast_age: forecastAge } = config.monitoring;
  for (const site of sites) {
    for (const [what, at, limit] of [
      ['actual', site.actual, actualAge.crit],
      ['forecast', site.forecast, forecastAge.crit],
    ] as const) {
      const age = at === null ? null : now - at.getTime();
      const firing = age === null || age > limit;
      const name = site.name ?? site.site_id;
      alerts.push({
        key: `stale/${site.site_id}/${what}`,
        kind: 'stale',
        firing,
        summary: firing
          ? `${name}: ${age === null ? `no ${what} stored` : `newest ${what} ${formatAge(age)} old (over ${formatAge(limit)})`}`
          : `${name}: ${what}s fresh again (newest ${formatAge(age ?? 0)} old)`,
        labels: { site_id: site.site_id, resource: what },
      });
    }
  }
  const drift = await wh.all<{ site_name: string; state: string; summary: string }>(
    `SELECT site_name, state, summary FROM site_drift ORDER BY site_name`,
  );
  for (const site of drift) {
    const firing = site.state !== 'in_sync';
    alerts.push({
      key: `drift/${site.site_name}`,
      kind: 'drift',
      firing,
      summary: firing
        ? `${site.site_name}: not as its site file says (${site.state}): ${site.summary}`
        : `${site.site_name}: as its site file says again`,
      labels: { site: site.site_name, state: site.state },
    });
  }
  const covered = await coveredUntil(wh);
  for (const { name: job, expr } of schedules) {
    const since = covered.get(job);
    if (since === undefined) continue; // never ran: a new warehouse, nothing was missed yet
    const missed = nextSlots(expr, config.schedule.timezone, since, now - config.alerts.missed_grace);
    const slot = missed.at(-1);
    alerts.push({
      key: `missed/${job}`,
      kind: 'missed',
      firing: slot !== undefined,
      summary:
        slot === undefined
          ? `${job}: ran as scheduled again`
          : `${job}: no run for its slot ${new Date(slot).toISOString()} (${missed.length} slot(s) missed)`,
      labels: { efsync_job: job },
    });
  }
  return alerts;
}

/** The alerts whose state differs from `alert_states` (a new one only when firing); records every new state. */
async function changesOf(wh: Warehouse, current: Current[], now: number): Promise<AlertChange[]> {
  const stored = new Map(
    (await wh.all<{ alert_key: string; firing: boolean }>(`SELECT alert_key, firing FROM alert_states`)).map((r) => [
      r.alert_key,
      r.firing,
    ]),
  );
  const changes: AlertChange[] = [];
  for (const alert of current) {
    const before = stored.get(alert.key);
    if (before === alert.firing) continue;
    await wh.run(`INSERT OR REPLACE INTO alert_states VALUES ($1, $2, $3, $4, ${instant('$5')})`, [
      alert.key,
      alert.kind,
      alert.firing,
      alert.summary,
      now,
    ]);
    if (before !== undefined || alert.firing) changes.push({ ...alert, at: now });
  }
  return changes;
}

async function send(wh: Warehouse, change: AlertChange, { config, log, now }: AlertOptions): Promise<void> {
  const policy = {
    retries: config.alerts.retries,
    backoffMs: config.alerts.retry_backoff,
    timeoutMs: config.alerts.timeout,
  };
  for (const hook of config.alerts.webhooks) {
    const delivery: Delivery = await deliver(hook, change, policy).catch((error: unknown) => ({
      attempts: 0,
      ok: false,
      status: null,
      error: (error as Error).message,
    }));
    await wh.run(`INSERT INTO alert_deliveries VALUES ($1, $2, $3, $4, $5, $6, $7, ${instant('$8')})`, [
      change.key,
      change.firing,
      hook.name,
      delivery.attempts,
      delivery.ok,
      delivery.status,
      delivery.error,
      now,
    ]);
    const fields = { alert: change.key, firing: change.firing, webhook: hook.name, attempts: delivery.attempts };
    if (delivery.ok) log.info(fields, `alert ${change.firing ? 'fired' : 'resolved'}: ${change.summary}`);
    else log.warn({ ...fields, error: delivery.error }, `alert not delivered to ${hook.name}: ${delivery.error}`);
  }
}
