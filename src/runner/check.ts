/**
 * `efsync status --check`: the status as one line and an exit code, by the conventions of Nagios
 * plugins (and Icinga, Sensu, Zabbix agents that run them).
 */
import type { Config } from '../config.js';
import { formatAge } from './age.js';
import type { Status } from './status.js';

/** The plugin's exit codes: OK, WARNING, CRITICAL, UNKNOWN. */
export const CHECK_STATES = ['OK', 'WARNING', 'CRITICAL', 'UNKNOWN'] as const;
export type CheckCode = 0 | 1 | 2 | 3;

export interface CheckResult {
  code: CheckCode;
  /** `EFSYNC OK - reason | perfdata`: the one line a monitor shows. */
  line: string;
}

interface Problem {
  code: 1 | 2;
  text: string;
}

/** How many problems the line names before `(+N more)`. */
const NAMED = 3;

/**
 * Judges the status (status.ts) against `monitoring` at `now`: each site's newest actual and
 * newest forecast vintage by age; each job's last run (failed or crashed: critical, partial:
 * warning) and, for scheduled jobs, the time since its last ok run. The worst state wins.
 */
export function checkStatus(status: Status, monitoring: Config['monitoring'], now: number): CheckResult {
  if (!status.published) return { code: 3, line: 'EFSYNC UNKNOWN - nothing published yet: no run has ended' };
  const problems: Problem[] = [];
  const actualAges = siteAges(status, 'newest_actual', 'actual', monitoring.actual_age, now, problems);
  const forecastAges = siteAges(
    status,
    'newest_forecast_update_time',
    'forecast vintage',
    monitoring.forecast_age,
    now,
    problems,
  );
  let failed = 0;
  for (const job of status.jobs) {
    const last = job.last;
    if (last && (last.status === 'failed' || last.status === 'crashed')) {
      failed += 1;
      problems.push({ code: 2, text: `${job.job} ${last.status}${last.errorSummary ? `: ${last.errorSummary}` : ''}` });
    } else if (last?.status === 'partial')
      problems.push({ code: 1, text: `${job.job} partial (${last.failures} failed)` });
    if (job.schedule === null) continue;
    if (!last) {
      problems.push({ code: 1, text: `${job.job} never ran (schedule ${job.schedule})` });
      continue;
    }
    const okAge = last.lastOkAt === null ? null : now - Date.parse(last.lastOkAt);
    const code = okAge === null ? 2 : exceeded(okAge, monitoring.last_ok_age);
    if (code)
      problems.push({
        code,
        text: `${job.job}: ${okAge === null ? 'never ended ok' : `last ok ${formatAge(okAge)} ago`}`,
      });
  }
  const code = Math.max(0, ...problems.map((p) => p.code)) as CheckCode;
  const sorted = problems.sort((a, b) => b.code - a.code).map((p) => p.text);
  const sites = status.freshness.length;
  const reason =
    sorted.length === 0
      ? `${sites} site(s) fresh (oldest actual ${formatAge(Math.max(0, ...actualAges))} old), last runs ok`
      : `${sorted.slice(0, NAMED).join('; ')}${sorted.length > NAMED ? ` (+${sorted.length - NAMED} more)` : ''}`;
  const perf = [
    `sites=${sites};;;0`,
    `problems=${problems.length};;;0`,
    `failed_jobs=${failed};;;0`,
    ageData('actual_age', actualAges, monitoring.actual_age),
    ageData('forecast_age', forecastAges, monitoring.forecast_age),
  ];
  return { code, line: `EFSYNC ${CHECK_STATES[code]} - ${oneLine(reason)} | ${perf.join(' ')}` };
}

interface Thresholds {
  warn: number;
  crit: number;
}

/** Each site's age of `column`, and a problem for each past a threshold (a site with none: warning). */
function siteAges(
  status: Status,
  column: string,
  what: string,
  limits: Thresholds,
  now: number,
  problems: Problem[],
): number[] {
  const ages: number[] = [];
  for (const row of status.freshness) {
    const site = String(row.name ?? row.site_id);
    const value = row[column];
    if (typeof value !== 'string') {
      problems.push({ code: 1, text: `${site}: no ${what} stored` });
      continue;
    }
    const age = now - Date.parse(value);
    ages.push(age);
    const code = exceeded(age, limits);
    if (code) problems.push({ code, text: `${site}: newest ${what} ${formatAge(age)} old` });
  }
  return ages;
}

const exceeded = (age: number, limits: Thresholds): 0 | 1 | 2 => (age > limits.crit ? 2 : age > limits.warn ? 1 : 0);

/** Perfdata of the oldest age, in seconds, with its thresholds: `actual_age=1500s;21600;86400;0`. */
function ageData(label: string, ages: number[], limits: Thresholds): string {
  const value = ages.length === 0 ? 'U' : `${Math.round(Math.max(...ages) / 1000)}s`;
  return `${label}=${value};${limits.warn / 1000};${limits.crit / 1000};0`;
}

/** A reason may quote an error: one line, and no `|`, which would start the perfdata. */
const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '/');
