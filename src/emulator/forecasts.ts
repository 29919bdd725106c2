// Forecast vintages: each model issues at its cron times; a vintage issued at I covers the
// interval-beginning valid times I <= t < I + horizon with the truth plus an error that grows with lead time and differs by
// model. Quantile models share one error draw and shift it by the normal quantile of their level,
// so their forecasts never cross.
import { CronExpressionParser } from 'cron-parser';
import { hashInts, hashText, smoothNoise } from './noise.js';
import { powerCurve, SeriesCursor, STEP_MS } from './truth.js';
import { nameplate, type ModelIssueTiming, type ModelKind, type ModelRecord, type SiteRecord } from './store.js';
import { DAY, HOUR } from '../time.js';

const issueCache = new Map<string, number[]>();
const ISSUE_CACHE_LIMIT = 50_000;
const dailyCache = new Map<string, number[] | null>();

/**
 * The issue times of a cron schedule (UTC) within one UTC day. A schedule whose day-of-month,
 * month and day-of-week are all `*` fires at the same times of every day: those are computed
 * once. Others are cached per schedule and day: computed per day, a year's Forecast Updates cost
 * the emulator cron arithmetic on the bench's critical path every night.
 */
function issuesOnDay(schedule: string, dayStart: number): number[] {
  const offsets = dailyOffsets(schedule);
  if (offsets) return offsets.map((offset) => dayStart + offset);
  const key = `${schedule}|${dayStart}`;
  let issues = issueCache.get(key);
  if (!issues) {
    issues = cronFiresOnDay(schedule, dayStart);
    if (issueCache.size >= ISSUE_CACHE_LIMIT) issueCache.clear();
    issueCache.set(key, issues);
  }
  return issues;
}

/** The times of day (ms after midnight UTC) a schedule fires every day at, or null when it depends on the day. */
function dailyOffsets(schedule: string): number[] | null {
  let offsets = dailyCache.get(schedule);
  if (offsets === undefined) {
    const fields = schedule.trim().split(/\s+/);
    const everyDay = fields.length >= 5 && fields.slice(-3).every((field) => field === '*');
    offsets = everyDay ? cronFiresOnDay(schedule, 0) : null;
    dailyCache.set(schedule, offsets);
  }
  return offsets;
}

function cronFiresOnDay(schedule: string, dayStart: number): number[] {
  const issues: number[] = [];
  const cron = CronExpressionParser.parse(schedule, { currentDate: dayStart - 1, tz: 'UTC' });
  for (;;) {
    const next = cron.next().getTime();
    if (next >= dayStart + DAY) break;
    issues.push(next);
  }
  return issues;
}

/**
 * The issue times of a model in [from, to], oldest first. A model issues from the site's
 * `dataStart - horizon` (the emulator backfills history) up to `now`: at each cron fire, or
 * later by its issue timing (a late model, fractional seconds).
 */
export function issuesBetween(model: ModelRecord, site: SiteRecord, from: number, to: number, now: number): number[] {
  const first = Math.max(from, site.dataStart - model.horizonMs);
  const last = Math.min(to, now);
  const timing = model.issueTiming;
  const earliestFire = first - (timing ? timing.delayMs + MAX_FRACTION_MS : 0);
  const out: number[] = [];
  for (let day = Math.floor(earliestFire / DAY) * DAY; day <= last; day += DAY) {
    for (const fire of issuesOnDay(model.schedule, day)) {
      const issue = timing ? fire + issueOffset(model.id, fire, timing) : fire;
      if (issue >= first && issue <= last) out.push(issue);
    }
  }
  return out;
}

/** The most a fractional issue time lags its fire (with its delay). */
const MAX_FRACTION_MS = 6000;

/** How long after `fire` the model issues: its delay, and with fractional times 1-6 s more, to the microsecond. */
function issueOffset(modelId: string, fire: number, timing: ModelIssueTiming): number {
  if (!timing.fractional) return timing.delayMs;
  return timing.delayMs + 1000 + (hashInts(hashText(modelId), fire / 60_000) % 5_000_000) / 1000;
}

/** The latest issue of a model at or before `at`, or null. Looks back at most a week. */
export function latestIssue(model: ModelRecord, site: SiteRecord, at: number, now: number): number | null {
  for (let from = at - DAY; from > at - 8 * DAY; from -= DAY) {
    const issues = issuesBetween(model, site, from, at, now);
    if (issues.length > 0) return issues[issues.length - 1];
    if (from < site.dataStart - model.horizonMs) return null;
  }
  return null;
}

/** Error spread per unit of the site's driver at lead 0, and its growth per day of lead. */
const ERROR = {
  physical: { base: 0.1, perDay: 0.05, bias: 0.02 },
  ai: { base: 0.065, perDay: 0.045, bias: -0.01 },
  quantile: { base: 0.065, perDay: 0.045, bias: 0 },
} as const;

/** How the unit error maps onto each site type's driver. */
const TYPE_SCALE = { solar: 1, wind: 1.4, load: 0.45 } as const;

/**
 * How one model's vintages turn the truth into forecasts. Quantile models draw one shared
 * error per site and issue, shifted by the normal quantile of their level, so p10 <= p50 <= p90.
 */
export class ModelForecaster {
  private readonly spread: (typeof ERROR)[ModelKind];
  private readonly scale: number;
  private readonly shift: number;
  private readonly seedBase: number;
  private issue = Number.NaN;
  private noiseSeed = 0;

  constructor(
    private readonly site: SiteRecord,
    readonly model: ModelRecord,
    seed: number,
    private readonly cursor: SeriesCursor,
  ) {
    this.spread = ERROR[model.kind];
    this.scale = TYPE_SCALE[site.type];
    this.shift = model.kind === 'quantile' ? normalQuantile(model.quantile ?? 0.5) : 0;
    this.seedBase = hashText(model.kind === 'quantile' ? `${seed}:${site.id}:quantiles` : `${seed}:${model.id}`);
  }

  /** The forecast (kW, before the capacity cap) for valid time `t` from the vintage issued at `issue`. */
  value(issue: number, t: number): number {
    if (issue !== this.issue) {
      this.issue = issue;
      this.noiseSeed = hashInts(this.seedBase, issue / 60_000);
    }
    const point = this.cursor.at(t);
    const truth = point.power;
    const leadDays = Math.max(t - issue, 0) / DAY;
    const sigma = (this.spread.base + this.spread.perDay * leadDays) * this.scale;
    const error = this.spread.bias * this.scale + sigma * (smoothNoise(this.noiseSeed, t, 6 * HOUR) + this.shift);
    switch (this.site.type) {
      case 'solar': {
        const clearSkyPower = point.driver;
        return clamp(truth + clearSkyPower * error, 0, clearSkyPower);
      }
      case 'wind':
        return nameplate(this.site) * powerCurve(point.driver * Math.exp(error));
      case 'load':
        return clamp(truth * (1 + error), 0, nameplate(this.site) * 1.1);
    }
  }
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(Math.max(value, low), high);
}

/** The standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9). */
export function normalQuantile(p: number): number {
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239,
  ];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (
      (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
      ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    );
  }
  if (p > 1 - low) return -normalQuantile(1 - p);
  const q = p - 0.5,
    r = q * q;
  return (
    ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
  );
}

/** One point of a stitched or per-model series. */
export interface ForecastPoint {
  t: number;
  value: number;
  model: ModelRecord;
  issue: number;
}

const RESOLUTIONS: Record<string, number> = { '15min': STEP_MS, '30min': 2 * STEP_MS, '1h': HOUR, '1d': DAY };

/** The step of a site's forecasts, from its `model_resolution` setting (15 minutes by default). */
export function resolutionOf(site: SiteRecord): number {
  return RESOLUTIONS[String(site.settings.model_resolution)] ?? STEP_MS;
}

/** The mean of `value` over the 15-minute points of the interval [t, t + step). */
export function intervalMean(t: number, step: number, value: (point: number) => number): number {
  if (step === STEP_MS) return value(t);
  let sum = 0;
  for (let point = t; point < t + step; point += STEP_MS) sum += value(point);
  return sum / (step / STEP_MS);
}

/**
 * For each valid time in [start, end] on the site's resolution grid, the value of the first
 * model (in the given order) that has one: from its latest issue I with I <= asOf and
 * I <= t < I + horizon. Coarser steps average the 15-minute values of the interval beginning at t.
 * Valid times no model covers, and those before the site's history, are left out.
 */
export function stitch(
  site: SiteRecord,
  models: ModelRecord[],
  seed: number,
  start: number,
  end: number,
  asOf: number,
  now: number,
): ForecastPoint[] {
  const step = resolutionOf(site);
  const cutoff = Math.min(asOf, now);
  const cursor = new SeriesCursor(site, seed);
  const forecasters = models.map((model) => new ModelForecaster(site, model, seed, cursor));
  const issueLists = models.map((model) =>
    issuesBetween(model, site, start - model.horizonMs, Math.min(cutoff, end), now),
  );
  const pointers = models.map(() => -1);
  const out: ForecastPoint[] = [];
  for (let t = firstStepFrom(start, step); t <= end; t += step) {
    for (let m = 0; m < models.length; m++) {
      const issues = issueLists[m];
      // Advance to the latest issue at or before t (and at or before the cutoff, by construction).
      while (pointers[m] + 1 < issues.length && issues[pointers[m] + 1] <= t) pointers[m]++;
      const issue = issues[pointers[m]];
      if (issue === undefined || t >= issue + models[m].horizonMs || t < site.dataStart) continue;
      const forecaster = forecasters[m];
      out.push({ t, value: intervalMean(t, step, (point) => forecaster.value(issue, point)), model: models[m], issue });
      break;
    }
  }
  return out;
}

/** The first multiple of `step` at or after `ms`: ranges hold the values of [start, end], both ends included. */
export function firstStepFrom(ms: number, step = STEP_MS): number {
  return Math.ceil(ms / step) * step;
}
