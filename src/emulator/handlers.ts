// The endpoints, each a function from a parsed request to a status and a JSON body.
// Requests are validated with the zod schemas of src/api/schemas.ts, the one definition of
// the interface; a failure answers 400 with `errors[]` naming the offending field.
import type { z } from 'zod';
import {
  ActualsQuery,
  ActualsUpload,
  CapacityQuery,
  CapacityUpload,
  DeleteActualsQuery,
  DeleteCapacityQuery,
  ForecastQuery,
  issuesToErrors,
  ListModelsQuery,
  ModelOutputQuery,
  SiteRequest,
  TrainSiteModelsBody,
  UpdateModelBody,
  type ErrorItem,
} from '../api/schemas.js';
import { formatExactInstant, formatInstant, startOfUtcDay, DAY, HOUR } from '../time.js';
import {
  firstStepFrom,
  intervalMean,
  issuesBetween,
  latestIssue,
  resolutionOf,
  stitch,
  type ForecastPoint,
} from './forecasts.js';
import {
  capacityArray,
  nameplate,
  type ActualsRecord,
  type ModelRecord,
  type SiteRecord,
  type Store,
} from './store.js';
import { SeriesCursor, STEP_MS } from './truth.js';
import { timestamp } from './timestamps.js';
import type { UntidyKind } from './untidy.js';
import { hashText, uniform } from './noise.js';

/** The longest date range a query may span. */
const MAX_RANGE_DAYS = 370;
/** Actuals younger than this are provisional: they are revised once they are older. */
const PROVISIONAL_MS = 3 * HOUR;

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Set on forecast, output and actuals answers: the ones a malformed-rate fault may break. */
  data?: boolean;
}

/**
 * What the emulator serves. `docs`: exactly the shapes of the service's public pages
 * (docs/interface-assumptions.md, part 1): no `capacity` column in forecasts or model outputs,
 * `capacity_kw_array` segments `{value, dateEnd}`, model states `[{}]`. `rich`: the same plus
 * what the pages allow but do not show: `capacity` columns, `dateStart` on segments, states
 * `{state, timestamp_utc}` in the older SDK's shape.
 */
export type EmulatorProfile = 'rich' | 'docs';

export const EMULATOR_PROFILES: readonly EmulatorProfile[] = ['rich', 'docs'];

export interface Context {
  store: Store;
  profile: EmulatorProfile;
  account: string;
  seed: number;
  now: number;
  historyDays: number;
  /** Vintages that always answer 400 (vintageKey of a site and as_of, or of a model and issue time). */
  failingVintages: ReadonlySet<string>;
  /** The untidy switches on (untidy.ts); the handlers read those that change what they do. */
  untidy: ReadonlySet<UntidyKind>;
}

/** How a failing vintage is named: its site or model id and its instant, to the microsecond. */
export function vintageKey(id: string, at: number): string {
  return `${id}@${formatExactInstant(at)}`;
}

/** The 400 of a vintage switched to fail. */
function failVintage(ctx: Context, id: string, at: number | null | undefined): void {
  if (at === null || at === undefined || !ctx.failingVintages.has(vintageKey(id, at))) return;
  throw new HttpError(400, [
    { field: 'as_of', message: `the vintage ${formatExactInstant(at)} cannot be read (switched to fail)` },
  ]);
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly errors: ErrorItem[],
  ) {
    super(errors.map((e) => `${e.field}: ${e.message}`).join('; '));
  }
}

export function errorReply(status: number, field: string, message: string): Reply {
  return { status, body: { errors: [{ field, message }] } };
}

function parse<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new HttpError(400, issuesToErrors(result.error));
  return result.data;
}

// ---------------------------------------------------------------- sites

export function listSites(ctx: Context): Reply {
  return { status: 200, body: ctx.store.sitesOf(ctx.account).map((site) => siteResponse(ctx, site)) };
}

export function createSite(ctx: Context, body: unknown): Reply {
  const request = parse(SiteRequest, body);
  // A new site comes with history: the emulator backfills `historyDays` before its creation day.
  const site = ctx.store.createSite(ctx.account, request, ctx.now, startOfUtcDay(ctx.now) - ctx.historyDays * DAY);
  return { status: 200, body: { site_id: site.id } };
}

export function getSite(ctx: Context, siteId: string): Reply {
  return { status: 200, body: siteResponse(ctx, ctx.store.site(ctx.account, siteId)) };
}

export function updateSite(ctx: Context, siteId: string, body: unknown): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const request = parse(SiteRequest, body);
  ctx.store.updateSite(site, request, ctx.now);
  return { status: 200, body: { message: 'Site updated successfully' } };
}

export function deleteSite(ctx: Context, siteId: string): Reply {
  ctx.store.deleteSite(ctx.store.site(ctx.account, siteId));
  return { status: 200, body: { message: 'Site deleted successfully' } };
}

/** The documented site response (SITE_RESPONSE_FIELDS); a wind site's assets are its turbine groups. */
function siteResponse(ctx: Context, site: SiteRecord): Record<string, unknown> {
  return {
    id: site.id,
    site_id: site.id,
    name: site.name,
    latitude: site.latitude,
    longitude: site.longitude,
    capacity_kw_array: capacityArray(site, ctx.profile === 'rich'),
    creation_timestamp_utc: formatInstant(site.createdAt),
    type: site.type,
    settings: site.settings,
    assets: site.type === 'wind' ? (site.turbines ?? []) : site.assets,
  };
}

// ---------------------------------------------------------------- capacity

export function uploadCapacity(ctx: Context, siteId: string, body: unknown): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const upload = parse(CapacityUpload, body);
  if (ctx.untidy.has('capacity-upload-500'))
    throw new HttpError(500, [{ field: '(server)', message: 'upload failed' }]);
  ctx.store.uploadCapacity(site, upload.data);
  return { status: 200, body: { message: 'Capacity uploaded successfully' } };
}

const FREQ_MS: Record<string, number> = {
  '1h': HOUR,
  '60min': HOUR,
  '30min': 1_800_000,
  '15min': 900_000,
  '5min': 300_000,
};

/** The capacity in force at every multiple of `freq` in [start_date, end_date], with the site's meta. */
export function siteCapacity(ctx: Context, siteId: string, query: Record<string, string>): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const q = parse(CapacityQuery, query);
  const [start, end] = deleteRange(q.start_date, q.end_date);
  if (end - start > MAX_RANGE_DAYS * DAY) {
    throw new HttpError(400, [{ field: 'end_date', message: `the range may span at most ${MAX_RANGE_DAYS} days` }]);
  }
  const step = FREQ_MS[q.freq];
  const capacityAt = capacityLookup(site);
  const first = ctx.untidy.has('capacity-nulls') ? (site.capacityTimeline[0]?.start ?? -Infinity) : -Infinity;
  const valid_time: string[] = [];
  const value: (number | null)[] = [];
  for (let t = Math.ceil(start / step) * step; t <= end; t += step) {
    valid_time.push(timestamp(t, q.tz));
    value.push(t < first ? null : capacityAt(t));
  }
  return {
    status: 200,
    body: { meta: { site_name: site.name, site_id: site.id, unit: 'kW' }, data: { valid_time, value } },
  };
}

export function deleteCapacity(ctx: Context, siteId: string, query: Record<string, string>): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const q = parse(DeleteCapacityQuery, query);
  if (ctx.untidy.has('capacity-delete-422'))
    throw new HttpError(422, [{ field: 'start_date', message: 'the range cannot be deleted' }]);
  const range = deleteRange(q.start_date, q.end_date);
  const deleted = ctx.untidy.has('capacity-delete-all')
    ? ctx.store.deleteCapacity(site, -Infinity, Infinity)
    : ctx.store.deleteCapacity(site, ...range);
  return { status: 200, body: { message: `Capacity deleted successfully (${deleted} point(s))` } };
}

/** A range with both ends included (deletes, capacity samples): the end not before the start. */
function deleteRange(start: number, end: number): [number, number] {
  if (end < start) throw new HttpError(400, [{ field: 'end_date', message: 'must not be before start_date' }]);
  return [start, end];
}

/**
 * The capacity in force at each valid time: the timeline held forward (before its start, its
 * first value); a timeline deleted whole leaves the site's nameplate.
 */
function capacityLookup(site: SiteRecord): (t: number) => number {
  const segments = site.capacityTimeline;
  if (segments.length === 0) {
    const value = nameplate(site);
    return () => value;
  }
  return (t) => {
    for (let i = segments.length - 1; i >= 0; i--) if (segments[i].start <= t) return segments[i].value;
    return segments[0].value;
  };
}

// ---------------------------------------------------------------- models

export function listModels(ctx: Context, siteId: string, query: Record<string, string>): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const { model_type, extra } = parse(ListModelsQuery, query);
  const extras = new Set(
    (extra ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean),
  );
  const models = [...ctx.store.modelsOf(site.id), ...sharedModels(ctx, site)].filter(
    (model) => !model_type || model.label === model_type,
  );
  return { status: 200, body: models.map((model) => modelItem(ctx, model, site, extras.has('serving_active'))) };
}

/** With `shared-models`, the first model of the account's first site, listed under each other site too. */
function sharedModels(ctx: Context, site: SiteRecord): ModelRecord[] {
  if (!ctx.untidy.has('shared-models')) return [];
  const owner = ctx.store.sitesOf(ctx.account)[0];
  const model = owner && owner.id !== site.id ? ctx.store.modelsOf(owner.id)[0] : undefined;
  return model ? [model] : [];
}

export function updateModel(ctx: Context, modelId: string, body: unknown): Reply {
  const model = ctx.store.model(ctx.account, modelId);
  const update = parse(UpdateModelBody, body);
  ctx.store.updateModel(model, update.settings, update.priority_conflict_resolution);
  return { status: 200, body: { message: 'Model updated successfully' } };
}

export function trainModels(ctx: Context, body: unknown): Reply {
  const request = parse(TrainSiteModelsBody, body);
  request.splits?.forEach((split, i) => {
    if (split.end_date <= split.start_date) {
      throw new HttpError(400, [{ field: `splits.${i}.end_date`, message: 'must be after start_date' }]);
    }
  });
  const sites = request.site_ids.map((id) => ctx.store.site(ctx.account, id));
  const models = sites.reduce((sum, site) => sum + ctx.store.trainModels(site, ctx.now), 0);
  return { status: 200, body: { message: `Training started for ${models} model(s) of ${sites.length} site(s)` } };
}

/** The columns the emulator's models take as input, by site type: its weather (or calendar) driver. */
const INPUT_COLUMN = { solar: 'clear_sky_power_kw', wind: 'wind_speed_ms', load: 'hour_of_day_utc' } as const;

/** The input of the model's latest vintage: its driver over the vintage's valid times, with metadata. */
export function modelInput(ctx: Context, modelId: string): Reply {
  const model = ctx.store.model(ctx.account, modelId);
  const site = ctx.store.sites.get(model.siteId) as SiteRecord;
  const issue = latestIssue(model, site, ctx.now, ctx.now);
  const step = resolutionOf(site);
  const cursor = new SeriesCursor(site, ctx.seed);
  const column = INPUT_COLUMN[site.type];
  const valid_time: string[] = [];
  const values: number[] = [];
  if (issue !== null) {
    for (let t = firstStepFrom(issue, step); t < issue + model.horizonMs; t += step) {
      valid_time.push(timestamp(t, 'UTC'));
      values.push(
        site.type === 'load'
          ? new Date(t).getUTCHours()
          : round3(intervalMean(t, step, (point) => cursor.at(point).driver)),
      );
    }
  }
  return {
    status: 200,
    body: {
      dataframe: { valid_time, [column]: values },
      metadata: {
        model_id: model.id,
        model_name: model.name,
        site_id: site.id,
        issue_time: issue === null ? null : timestamp(issue, 'UTC'),
        resolution: String(site.settings.model_resolution),
      },
    },
  };
}

/** The documented model item (MODEL_ITEM_FIELDS); states in the SDK's shape when rich, `{}` (as the reference shows) otherwise. */
function modelItem(ctx: Context, model: ModelRecord, site: SiteRecord, withServing: boolean): Record<string, unknown> {
  return {
    id: model.id,
    name: model.name,
    label: model.label,
    version: model.version,
    display_name: model.display_name,
    priority: model.priority,
    output_types: site.type === 'solar' ? ['forecast', 'clearsky'] : ['forecast'],
    state: model.states.map((entry) =>
      ctx.profile === 'rich' ? { state: entry.state, timestamp_utc: formatInstant(entry.timestamp) } : {},
    ),
    schedule: ctx.untidy.has('no-schedules') ? null : { type: 'cron', value: model.schedule },
    ...(withServing ? { serving_active: model.serving_active } : {}),
  };
}

// ---------------------------------------------------------------- series

/** The range [start, end] of a forecast or output query: start defaults to today 00:00 UTC, end to start + 2 days. */
function forecastRange(ctx: Context, start: number | undefined, end: number | undefined): [number, number] {
  const from = start ?? startOfUtcDay(ctx.now);
  return checkRange(from, end ?? from + 2 * DAY);
}

function checkRange(start: number, end: number): [number, number] {
  if (end <= start) throw new HttpError(400, [{ field: 'end_date', message: 'must be after start_date' }]);
  if (end - start > MAX_RANGE_DAYS * DAY) {
    throw new HttpError(400, [{ field: 'end_date', message: `the range may span at most ${MAX_RANGE_DAYS} days` }]);
  }
  return [start, end];
}

export function siteForecast(ctx: Context, siteId: string, query: Record<string, string>): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const q = parse(ForecastQuery, query);
  failVintage(ctx, site.id, q.as_of);
  const [start, end] = forecastRange(ctx, q.start_date, q.end_date);
  let models = ctx.store.modelsOf(site.id).filter((model) => model.serving_active);
  if (q.model_id !== undefined) {
    const chosen = ctx.store.modelsOf(site.id).find((model) => model.id === q.model_id);
    if (!chosen)
      throw new HttpError(404, [{ field: 'model_id', message: `no model ${q.model_id} at site ${site.id}` }]);
    models = [chosen];
  }
  const points = stitch(site, models, ctx.seed, start, end, q.as_of ?? ctx.now, ctx.now);
  const capacityAt = capacityLookup(site);
  const n = points.length;
  const body = {
    valid_time: new Array<string>(n),
    forecast: new Array<number>(n),
    capacity: new Array<number>(n),
    model_name: new Array<string>(n),
    model_version: new Array<number>(n),
    update_time: new Array<string>(n),
  };
  for (let i = 0; i < n; i++) {
    const point = points[i];
    const capacity = capacityAt(point.t);
    body.valid_time[i] = timestamp(point.t, q.tz);
    body.forecast[i] = outputValue(point.value, capacity, q.return_normalized);
    body.capacity[i] = capacity;
    body.model_name[i] = point.model.name;
    body.model_version[i] = point.model.version;
    body.update_time[i] = timestamp(point.issue, q.tz);
  }
  return { status: 200, body: ctx.profile === 'rich' ? body : withoutCapacity(body), data: true };
}

/** A value capped at the capacity in force, in kW or (normalised) as a share of it. */
function outputValue(value: number, capacity: number, normalized: boolean): number {
  const capped = Math.min(value, capacity);
  if (!normalized) return round3(capped);
  return capacity > 0 ? Math.round((capped / capacity) * 1e6) / 1e6 : 0;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** The issue times of the serving models' vintages, oldest first: the site forecast's updates. */
export function forecastUpdates(ctx: Context, siteId: string): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const issues = new Set<number>();
  for (const model of ctx.store.modelsOf(site.id)) {
    if (!model.serving_active) continue;
    for (const issue of issuesBetween(model, site, 0, ctx.now, ctx.now)) issues.add(issue);
  }
  return { status: 200, body: [...issues].sort((a, b) => a - b).map((issue) => timestamp(issue, 'UTC')) };
}

export function modelOutput(ctx: Context, modelId: string, query: Record<string, string>): Reply {
  const model = ctx.store.model(ctx.account, modelId);
  const site = ctx.store.sites.get(model.siteId) as SiteRecord;
  const q = parse(ModelOutputQuery, query);
  if (q.output_type === 'clearsky' && site.type !== 'solar') {
    throw new HttpError(400, [{ field: 'output_type', message: 'clearsky output exists for solar sites only' }]);
  }
  const [start, end] = forecastRange(ctx, q.start_date, q.end_date);
  const asOf = Math.min(q.as_of ?? ctx.now, ctx.now);
  const vintage = latestIssue(model, site, asOf, ctx.now);
  failVintage(ctx, model.id, vintage);
  let points: ForecastPoint[] = [];
  if (vintage !== null) {
    points = stitch(site, [model], ctx.seed, start, end, vintage, ctx.now);
    if (q.fill === 'disabled') points = points.filter((point) => point.issue === vintage);
  }
  const capacityAt = capacityLookup(site);
  const clearSky = new SeriesCursor(site, ctx.seed);
  const step = resolutionOf(site);
  const n = points.length;
  const body = {
    model_id: model.id,
    model_version: model.version,
    model_name: model.name,
    model_label: model.label,
    priority: model.priority,
    as_of: vintage === null ? null : timestamp(vintage, q.tz),
    forecast: new Array<number>(n),
    valid_time: new Array<string>(n),
    capacity: new Array<number>(n),
  };
  for (let i = 0; i < n; i++) {
    const point = points[i];
    const capacity = capacityAt(point.t);
    const value =
      q.output_type === 'clearsky' ? intervalMean(point.t, step, (t) => clearSky.at(t).driver) : point.value;
    body.forecast[i] = outputValue(value, capacity, false);
    body.valid_time[i] = timestamp(point.t, q.tz);
    body.capacity[i] = capacity;
  }
  return { status: 200, body: ctx.profile === 'rich' ? body : withoutCapacity(body), data: true };
}

/** The body without its `capacity` column, as the docs profile serves forecasts and outputs. */
function withoutCapacity<T extends { capacity: unknown }>(body: T): Omit<T, 'capacity'> {
  const { capacity: _dropped, ...rest } = body;
  return rest;
}

/**
 * A site's actuals of one series type. `power` is generated (the metered truth); every type holds
 * what clients uploaded, an upload winning over the generated value, and deletes take both out.
 */
export function siteActuals(ctx: Context, siteId: string, query: Record<string, string>): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const q = parse(ActualsQuery, query);
  const [start, end] = checkRange(q.start_date, q.end_date);
  const changes = site.actuals?.[q.type];
  const times: number[] = [];
  const value: (number | null)[] = [];
  if (q.type === 'power') {
    const first = Math.max(firstStepFrom(start), site.dataStart);
    const last = Math.min(end, lastEndedQuarter(ctx.now));
    const seed = hashText(`${ctx.seed}:${site.id}:actuals`);
    const cursor = new SeriesCursor(site, ctx.seed);
    for (let t = first; t <= last; t += STEP_MS) {
      if (changes && isDeleted(changes, t)) continue;
      times.push(t);
      value.push(actualValue(cursor.at(t).power, ctx.now, seed, t));
    }
  }
  const series = changes ? withUploads(times, value, changes, start, end) : { times, value };
  return {
    status: 200,
    body: { valid_time: series.times.map((t) => timestamp(t, q.tz)), value: series.value },
    data: true,
  };
}

/** The series a site holds: power (generated, unless deleted whole) and every type with uploads, each with its span. */
export function actualTypes(ctx: Context, siteId: string): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const types: { type: string; min: string; max: string }[] = [];
  const powerTimes = [site.dataStart, lastEndedQuarter(ctx.now)];
  for (const type of new Set(['power', ...Object.keys(site.actuals ?? {})])) {
    const changes = site.actuals?.[type];
    const times = Object.keys(changes?.uploaded ?? {}).map(Number);
    if (type === 'power') times.push(...powerTimes.filter((t) => !changes || !isDeleted(changes, t)));
    if (times.length === 0) continue;
    types.push({ type, min: timestamp(Math.min(...times), 'UTC'), max: timestamp(Math.max(...times), 'UTC') });
  }
  return { status: 200, body: types };
}

/** The label of the last quarter hour that has ended by `now`: metered values exist up to it. */
function lastEndedQuarter(now: number): number {
  return Math.floor(now / STEP_MS) * STEP_MS - STEP_MS;
}

function isDeleted(changes: ActualsRecord, t: number): boolean {
  return changes.deleted.some(([from, to]) => t >= from && t <= to);
}

/** The generated points with the uploads of the range [start, end] laid over them, in time order. */
function withUploads(times: number[], values: (number | null)[], changes: ActualsRecord, start: number, end: number) {
  const merged = new Map<number, number | null>(times.map((t, i) => [t, values[i]]));
  for (const [key, uploaded] of Object.entries(changes.uploaded)) {
    const t = Number(key);
    if (t >= start && t <= end) merged.set(t, uploaded);
  }
  const sorted = [...merged.keys()].sort((a, b) => a - b);
  return { times: sorted, value: sorted.map((t) => merged.get(t) ?? null) };
}

export function uploadActuals(ctx: Context, siteId: string, body: unknown): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const upload = parse(ActualsUpload, body);
  ctx.store.uploadActuals(site, upload.type, upload.data);
  return {
    status: 200,
    body: { message: `Actuals uploaded successfully (${upload.data.length} point(s) of ${upload.type})` },
  };
}

export function deleteActuals(ctx: Context, siteId: string, query: Record<string, string>): Reply {
  const site = ctx.store.site(ctx.account, siteId);
  const q = parse(DeleteActualsQuery, query);
  ctx.store.deleteActuals(site, q.type, ...deleteRange(q.start_date, q.end_date));
  return { status: 200, body: { message: `Actuals deleted successfully (${q.type})` } };
}

/**
 * The metered value of the quarter hour beginning at `t`: the truth, with about 1 hour in 150
 * missing (null), and when it ended within PROVISIONAL_MS of now a provisional reading a few
 * percent off, revised to the truth later.
 */
function actualValue(truth: number, now: number, seed: number, t: number): number | null {
  if (uniform(seed, Math.floor(t / HOUR)) < 1 / 150) return null;
  if (now - (t + STEP_MS) < PROVISIONAL_MS) return round3(truth * (1 + 0.12 * (uniform(seed, t / STEP_MS, 7) - 0.5)));
  return round3(truth);
}
