// The one definition of the service interface (Platform API v2). The client validates
// responses with these schemas and the emulator validates requests with them; the wire
// types are `z.input<...>`, the parsed types (instants as epoch ms) are `z.output<...>`.
//
// Tolerant reading, strict writing (docs/interface-assumptions.md): each response shape is
// written as the service's pages document it, and beside it stands what the client also
// accepts, because some page shows it (a null, a missing column, an empty entry). What the
// client had to fill in is listed on the parsed item in `defaulted`, and the sync counts it per
// run. Request shapes are strict: the emulator rejects anything the pages do not document.
import { z } from 'zod';
import { isTimeZone, parseInstant } from '../time.js';

// ---------------------------------------------------------------- scalars

/** A timestamp on the wire, parsed to epoch milliseconds (UTC). */
export const Instant = z.string().transform((text, ctx) => {
  try {
    return parseInstant(text);
  } catch {
    ctx.addIssue({ code: 'custom', message: `not a timestamp: ${JSON.stringify(text)}` });
    return z.NEVER;
  }
});

/** UTC at minute precision: `YYYY-MM-DDTHH:MMZ` (capacity files, and the form the client sends). */
export const MinuteInstant = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$/, 'must be UTC at minute precision, YYYY-MM-DDTHH:MMZ')
  .pipe(Instant);

/** A capacity point's time on the wire: `YYYY-MM-DDTHH:MMZ` (reference example) or with seconds (guide example). */
export const CapacityTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$/, 'must be UTC, YYYY-MM-DDTHH:MMZ or YYYY-MM-DDTHH:MM:SSZ')
  .pipe(Instant);

export const DateText = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date, YYYY-MM-DD');

export const TimeZone = z.string().refine(isTimeZone, 'not a known time zone');

// ---------------------------------------------------------------- sites

export const ModelResolution = z.enum(['15min', '30min', '1h', '1d']);

/** Quantile levels are numbers strictly between 0 and 1 (our choice: the element shape is not public). */
export const QuantileLevel = z.number().gt(0).lt(1);

export const SiteSettings = z.looseObject({
  model_resolution: ModelResolution.optional(),
  additional_points: z.array(z.unknown()).optional(),
  trainLongTermModels: z.boolean().optional(),
  trainNearTermModels: z.boolean().optional(),
  quantileModels: z.array(QuantileLevel).optional(),
  usePhysicalModels: z.boolean().optional(),
  weather_models: z.array(z.string()).optional(),
  create_params: z.record(z.string(), z.unknown()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  forecast_max_value: z.number().optional(),
});

const Azimuth = z.number().min(0).max(360);
const Angle = z.number().min(0).max(90);
const Capacity = z.number().positive();

export const PVAssetFixed = z.strictObject({
  mount: z.literal('fixed'),
  capacity: Capacity,
  install_date: DateText.optional(),
  azimuth: Azimuth,
  tilt: Angle,
});

export const PVAssetSingleAxis = z.strictObject({
  mount: z.literal('single_axis_tracking'),
  capacity: Capacity,
  install_date: DateText.optional(),
  axis_tilt: Angle.default(0),
  axis_azimuth: Azimuth.default(180),
  max_angle: Angle.default(60),
});

export const PVAssetDualAxis = z.strictObject({
  mount: z.literal('dual_axis_tracking'),
  capacity: Capacity,
  install_date: DateText.optional(),
});

export const PVAsset = z.discriminatedUnion('mount', [PVAssetFixed, PVAssetSingleAxis, PVAssetDualAxis]);

const siteCommon = {
  name: z.string().min(1),
  latitude: z.number().min(-90).max(90),
  longitude: z.number().min(-180).max(180),
  settings: SiteSettings.optional(),
};

export const SolarSiteItem = z.strictObject({
  ...siteCommon,
  type: z.literal('solar'),
  assets: z.array(PVAsset).min(1),
});

/**
 * One group of identical turbines (guide "How to create a wind site"): `turbine_type` is a model
 * of the reference's list (e.g. `V126/3000`) or `generic`, `nr_units` how many, `hub_height` in m.
 */
export const WindAsset = z.strictObject({
  turbine_type: z.string().min(1),
  nr_units: z.number().int().min(1),
  hub_height: z.number().positive(),
  install_date: DateText.optional(),
});

/** Wind: the turbines are its assets; the body carries no capacity. */
export const WindSiteItem = z.strictObject({
  ...siteCommon,
  type: z.literal('wind'),
  assets: z.array(WindAsset).min(1),
});

/** Load: no assets and no capacity (guide "How to create a load site"). */
export const LoadSiteItem = z.strictObject({
  ...siteCommon,
  type: z.literal('load'),
});

export const SiteRequest = z.discriminatedUnion('type', [SolarSiteItem, WindSiteItem, LoadSiteItem]);

/**
 * An instant of a capacity segment: a timestamp, or a number of the epoch (no page shows one,
 * a stand-in did): below 1e11 it is seconds (1e11 s is the year 5138), else milliseconds (1e11 ms
 * is 1973-03-03, before any site). `numeric` says which it was, for `defaulted`.
 */
const SegmentInstant = z.union([
  Instant.transform((at) => ({ at, numeric: false })),
  z
    .number()
    .finite()
    .transform((n) => ({ at: Math.abs(n) < 1e11 ? Math.round(n * 1000) : n, numeric: true })),
]);

/**
 * One segment of `capacity_kw_array`: the guide shows `{value, dateEnd}`; the reference's
 * example is `{}`. `dateStart` is the rich emulator's addition; extra keys are kept.
 */
const CapacitySegmentWire = z.looseObject({
  value: z.number(),
  dateStart: SegmentInstant.nullable().optional(),
  dateEnd: SegmentInstant.nullable().optional(),
});

/**
 * The segments of a site, each read on its own, so one untidy segment costs at most itself:
 * one without a readable `value`, or with an unreadable date, is skipped
 * (`capacity_kw_array[]`); a date given as an epoch number is read by its magnitude
 * (SegmentInstant; `capacity_kw_array[].dateEnd` or `.dateStart`); a missing `dateEnd` is an
 * open end, as `null` (`capacity_kw_array[].dateEnd`).
 */
function capacitySegments(entries: readonly unknown[], defaulted: string[]): CapacitySegment[] {
  const segments: CapacitySegment[] = [];
  for (const entry of entries) {
    const parsed = CapacitySegmentWire.safeParse(entry);
    if (!parsed.success) {
      defaulted.push('capacity_kw_array[]');
      continue;
    }
    const { dateStart, dateEnd, ...rest } = parsed.data;
    if (dateStart?.numeric) defaulted.push('capacity_kw_array[].dateStart');
    if (dateEnd === undefined || dateEnd?.numeric) defaulted.push('capacity_kw_array[].dateEnd');
    segments.push({
      ...rest,
      ...(dateStart === undefined ? {} : { dateStart: dateStart?.at ?? null }),
      dateEnd: dateEnd?.at ?? null,
    });
  }
  return segments;
}

/** An entry of a site's `assets`: a PV asset (solar) or a turbine group (wind); any keys are kept. */
export const SiteAsset = z.looseObject({ capacity: z.number().optional(), mount: z.string().optional() });

/** The fields of a site response, as List Sites and Get Site document them (PVSiteResponse). */
export const SITE_RESPONSE_FIELDS = [
  'id',
  'site_id',
  'name',
  'latitude',
  'longitude',
  'capacity_kw_array',
  'creation_timestamp_utc',
  'type',
  'settings',
  'assets',
] as const;

/**
 * A site of List Sites or Get Site. Tolerated: `site_id` missing (the get-site-info guide shows
 * `id` only): taken from `id`; `assets` null (the reference types it `PVAsset[] | null`) or
 * missing: none; `capacity_kw_array` missing or null: none, and its untidy segments as
 * capacitySegments reads them; `settings` null or missing; extra keys kept.
 */
export const SiteResponse = z
  .looseObject({
    id: z.string(),
    site_id: z.string().optional(),
    name: z.string(),
    latitude: z.number(),
    longitude: z.number(),
    capacity_kw_array: z.array(z.unknown()).nullable().optional(),
    creation_timestamp_utc: Instant,
    type: z.string(),
    settings: z.record(z.string(), z.unknown()).nullable().optional(),
    assets: z.array(SiteAsset).nullable().optional(),
  })
  .transform((site) => {
    const defaulted: string[] = [];
    if (site.site_id === undefined) defaulted.push('site_id');
    if (site.assets == null) defaulted.push('assets');
    if (site.capacity_kw_array == null) defaulted.push('capacity_kw_array');
    return {
      ...site,
      site_id: site.site_id ?? site.id,
      assets: site.assets ?? [],
      capacity_kw_array: capacitySegments(site.capacity_kw_array ?? [], defaulted),
      defaulted,
    };
  });

/**
 * A site's installed capacity in kW: the sum of its PV assets' capacities (solar); else the
 * highest value of its `capacity_kw_array` (wind and load sites document no capacity field of
 * their own, and an outage lowers the segment in force, not what is installed); null when
 * neither is known.
 */
export function nameplateKw(site: Pick<SiteResponse, 'assets' | 'capacity_kw_array'>): number | null {
  const assets = site.assets.map((a) => a.capacity).filter((c): c is number => typeof c === 'number');
  if (assets.length > 0) return assets.reduce((sum, c) => sum + c, 0);
  const values = site.capacity_kw_array.map((segment) => segment.value);
  return values.length > 0 ? Math.max(...values) : null;
}

export const CreateSiteResponse = z.looseObject({ site_id: z.string() });

/**
 * The success body of Update Site, Delete Site, the uploads and deletes, Update Model and Train
 * Site Models: the references type it `{}` (any), the guides show `{"message": "…"}`. Anything
 * is accepted; the message is kept when there is one.
 */
export const Acknowledgement = z.unknown().transform((body) => {
  const message = (body as { message?: unknown } | null)?.message;
  return { message: typeof message === 'string' ? message : null };
});

// ---------------------------------------------------------------- models

/**
 * One training-status entry. The reference types entries only as objects (example `[{}]`); the
 * older SDK's `{state, timestamp_utc}` is one plausible shape. Tolerated: any entry; `state` is
 * read when it is a string (or the entry is one), `timestamp_utc` when it is a readable instant,
 * else null; the entry itself is kept as `details`.
 */
export const ModelState = z.unknown().transform((entry) => {
  const fields = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
  const state = typeof entry === 'string' ? entry : typeof fields.state === 'string' ? fields.state : null;
  const at = Instant.safeParse(fields.timestamp_utc);
  return { state, timestamp_utc: at.success ? at.data : null, details: entry };
});

export const ModelSchedule = z.object({ type: z.literal('cron'), value: z.string() });

/** The fields of a List Site Models item (`serving_active` only with `extra=serving_active`). */
export const MODEL_ITEM_FIELDS = [
  'id',
  'name',
  'label',
  'version',
  'priority',
  'state',
  'display_name',
  'output_types',
  'schedule',
] as const;

/**
 * A model of List Site Models. Tolerated: `output_types` null or missing (none); `schedule`
 * null, missing or of another shape (no schedule); state entries of any shape (see ModelState);
 * extra keys kept. `defaulted` lists state entries that carried no readable state or time.
 */
export const ModelItem = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    label: z.string(),
    version: z.number().int(),
    display_name: z.string().nullable().optional(),
    priority: z.number().int(),
    output_types: z
      .array(z.string())
      .nullable()
      .optional()
      .transform((v) => v ?? []),
    state: z.array(ModelState),
    schedule: z
      .unknown()
      .optional()
      .transform((v) => {
        const parsed = ModelSchedule.safeParse(v);
        return parsed.success ? parsed.data : null;
      }),
    serving_active: z.boolean().nullable().optional(),
  })
  .transform((model) => ({
    ...model,
    defaulted: model.state.some((entry) => entry.state === null || entry.timestamp_utc === null) ? ['state[]'] : [],
  }));

export const ModelType = z.enum(['ai', 'physical']);

export const ModelSettings = z.strictObject({
  serving_active: z.boolean().optional(),
  serving_priority: z.number().int().min(0).optional(),
});

export const PriorityConflictResolution = z.enum(['strict', 'auto_increment', 'swap']);

export const UpdateModelBody = z.object({
  settings: ModelSettings,
  priority_conflict_resolution: PriorityConflictResolution.default('strict'),
});

// ---------------------------------------------------------------- series

/** Columnar bodies: every array must have the same length, or the body is malformed. */
function equalLengths<T extends Record<string, unknown>>(columns: readonly (keyof T & string)[]) {
  return (body: T, ctx: z.RefinementCtx) => {
    const expected = (body[columns[0]] as unknown[]).length;
    for (const name of columns.slice(1)) {
      if (body[name] === undefined) continue; // an optional column that is absent
      const length = (body[name] as unknown[]).length;
      if (length !== expected) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `has ${length} values where ${columns[0]} has ${expected}`,
        });
        return;
      }
    }
  };
}

const Num = z.number().nullable();

/** A column that some pages show and others do not: missing means a null per row (listed in `defaulted`). */
function withOptionalColumn<T extends { valid_time: unknown[]; capacity?: (number | null)[] }>(body: T) {
  return {
    ...body,
    capacity: body.capacity ?? new Array<number | null>(body.valid_time.length).fill(null),
    defaulted: body.capacity === undefined ? ['capacity'] : [],
  };
}

/** The columns of Get Site Forecast; `capacity` is on the newest reference page only. */
export const FORECAST_FIELDS = [
  'valid_time',
  'forecast',
  'capacity',
  'model_name',
  'model_version',
  'update_time',
] as const;

/**
 * Get Site Forecast, columnar. Tolerated: no `capacity` column (an older version of the
 * reference page and both forecast guides show none): capacity null per row; extra keys kept.
 * Columns of different lengths make the body malformed.
 */
export const ForecastSeries = z
  .looseObject({
    valid_time: z.array(Instant),
    forecast: z.array(Num),
    capacity: z.array(Num).optional(),
    model_name: z.array(z.string()),
    model_version: z.array(z.number().int()),
    update_time: z.array(Instant),
  })
  .superRefine(equalLengths(['valid_time', 'forecast', 'capacity', 'model_name', 'model_version', 'update_time']))
  .transform(withOptionalColumn);

/** The fields of Get Model Output as its reference page documents them: no `capacity`. */
export const MODEL_OUTPUT_FIELDS = [
  'model_id',
  'model_version',
  'model_name',
  'model_label',
  'priority',
  'as_of',
  'forecast',
  'valid_time',
] as const;

/**
 * Get Model Output. `as_of` is `date-time | null`: null when the model has produced nothing
 * yet ("no output yet", not an error). Tolerated: a `capacity` column (the rich emulator sends
 * one) or none (the reference documents none): capacity null per row; extra keys kept.
 */
export const ModelOutput = z
  .looseObject({
    model_id: z.string(),
    model_version: z.number().int(),
    model_name: z.string(),
    model_label: z.string(),
    priority: z.number().int(),
    as_of: Instant.nullable(),
    forecast: z.array(Num),
    valid_time: z.array(Instant),
    capacity: z.array(Num).optional(),
  })
  .superRefine(equalLengths(['valid_time', 'forecast', 'capacity']))
  .transform(withOptionalColumn);

export const ActualsSeries = z
  .looseObject({
    valid_time: z.array(Instant),
    value: z.array(Num),
  })
  .superRefine(equalLengths(['valid_time', 'value']));

// ---------------------------------------------------------------- capacity

export const CapacityPoint = z.object({
  valid_time: CapacityTime,
  value: z.number().nonnegative(),
});

export const CapacityUpload = z.object({ data: z.array(CapacityPoint).min(1) });

// ---------------------------------------------------------------- further endpoints
// Delete Site, Get/Upload/Delete Site Actuals, Get/Delete Site Capacity, Get Site Forecast
// Updates, Train Site Models, Get Model Input (docs/interface-assumptions.md has the sources).
// Their success bodies are Acknowledgements (above).

/** An object the pages leave open (any keys): kept as it came. */
export const AnyObject = z.record(z.string(), z.unknown());

/**
 * Get Site Forecast Updates: the issue times of the site's forecast (an array of date-times).
 * Tolerated: a `null` entry (a stand-in listed one), skipped and counted in `nulls`; any other
 * entry that is not a timestamp makes the list malformed.
 */
export const ForecastUpdates = z.array(z.string().nullable()).transform((entries, ctx) => {
  // One loop over the strings rather than Instant per entry: the list holds every issue time
  // since the site's history began, and a zod transform per entry costs several times the parse.
  const times: number[] = [];
  let nulls = 0;
  entries.forEach((entry, index) => {
    if (entry === null) nulls++;
    else {
      try {
        times.push(parseInstant(entry));
      } catch {
        ctx.addIssue({ code: 'custom', message: `not a timestamp: ${JSON.stringify(entry)}`, path: [index] });
      }
    }
  });
  return Object.assign(times, { nulls });
});

/** Upload Site Actuals: points of one time series; `type` defaults to `power` (kW). */
export const ActualsUpload = z.object({
  data: z.array(z.object({ valid_time: Instant, value: z.number() })),
  type: z.string().min(1).default('power'),
});

/** Delete Site Actuals: the range (both ends included) and the series type. */
export const DeleteActualsQuery = z.object({
  start_date: Instant,
  end_date: Instant,
  tz: TimeZone.default('UTC'),
  type: z.string().default('power'),
});

/** Sampling steps of Get Site Capacity. */
export const CapacityFreq = z.enum(['1h', '60min', '30min', '15min', '5min']);

/**
 * Get Site Capacity: the timeline in force, SAMPLED every `freq` over the range (not the
 * uploaded points): `{meta: {site_name, site_id, unit: "kW"}, data: {valid_time, value}}`.
 * Also read: the `data` columns alone, and an array of `{valid_time, value}` rows; any order
 * (sorted by time here). Tolerated: a `null` value (a stand-in sends them at the instants
 * before the site's first point, where no capacity is in force yet): that instant is left out,
 * as no capacity, and counted in `nulls`.
 */
const CapacityValue = z.number().nullable();
const CapacityColumns = z
  .looseObject({ valid_time: z.array(Instant), value: z.array(CapacityValue) })
  .superRefine(equalLengths(['valid_time', 'value']));
const CapacityRows = z
  .array(z.looseObject({ valid_time: Instant, value: CapacityValue }))
  .transform((rows) => ({ valid_time: rows.map((r) => r.valid_time), value: rows.map((r) => r.value) }));
const CapacityEnvelope = z
  .looseObject({ meta: AnyObject.nullable().optional(), data: z.union([CapacityColumns, CapacityRows]) })
  .transform((body) => body.data);
export const CapacityTimeline = z.union([CapacityEnvelope, CapacityColumns, CapacityRows]).transform((timeline) => {
  const order = timeline.valid_time
    .map((_, i) => i)
    .filter((i) => timeline.value[i] !== null)
    .sort((a, b) => timeline.valid_time[a] - timeline.valid_time[b]);
  return {
    valid_time: order.map((i) => timeline.valid_time[i]),
    value: order.map((i) => timeline.value[i] as number),
    nulls: timeline.valid_time.length - order.length,
  };
});

export const CapacityQuery = z.object({
  freq: CapacityFreq.default('1h'),
  start_date: Instant,
  end_date: Instant,
  tz: TimeZone.default('UTC'),
});

/** Get Site Actual Types: the series types a site holds, each with the span of its valid times. */
export const ActualTypes = z.array(
  z.looseObject({
    type: z.string(),
    min: Instant.nullable()
      .optional()
      .transform((v) => v ?? null),
    max: Instant.nullable()
      .optional()
      .transform((v) => v ?? null),
  }),
);

/** Delete Site Capacity (ours, as Delete Site Actuals): the points with start_date <= valid_time <= end_date. */
export const DeleteCapacityQuery = z.object({
  start_date: Instant,
  end_date: Instant,
  tz: TimeZone.default('UTC'),
});

/** Train Site Models: the sites, and optionally the periods of the training data to use. */
export const TrainSiteModelsBody = z.object({
  site_ids: z.array(z.string().min(1)).min(1),
  output_backtest_data: z.boolean().default(false),
  splits: z.array(z.object({ start_date: Instant, end_date: Instant })).optional(),
});

/** Get Model Input: the model's latest input `dataframe` and its `metadata`, both open objects. */
export const ModelInput = z.looseObject({
  dataframe: AnyObject.nullable()
    .optional()
    .transform((v) => v ?? {}),
  metadata: AnyObject.nullable()
    .optional()
    .transform((v) => v ?? {}),
});

// ---------------------------------------------------------------- errors

export const ErrorItem = z.object({ field: z.string(), message: z.string() });
export const ErrorBody = z.object({ errors: z.array(ErrorItem) });

/**
 * FastAPI's own error bodies (401/403/404/405/422 before the service's code runs):
 * `{"detail": "…"}` or `{"detail": [{loc, msg, type}]}`, read as error items.
 */
export const FastApiErrorBody = z.object({
  detail: z.union([
    z.string().transform((message) => [{ field: '(detail)', message }]),
    z
      .array(z.looseObject({ loc: z.array(z.union([z.string(), z.number()])).optional(), msg: z.string() }))
      .transform((items) =>
        items.map((item) => ({ field: (item.loc ?? []).map(String).join('.') || '(detail)', message: item.msg })),
      ),
  ]),
});

/** `errors[]` items from a zod failure: `field` is the dotted path of the offending value. */
export function issuesToErrors(error: z.ZodError, prefix?: string): ErrorItem[] {
  const field = (path: readonly PropertyKey[]) =>
    [prefix, ...path.map(String)].filter((p) => p !== undefined && p !== '').join('.') || '(body)';
  // An undocumented key is named itself, one error each, as FastAPI names an extra field.
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ field: field([...issue.path, key]), message: 'extra field not permitted' }))
      : [{ field: field(issue.path), message: issue.message }],
  );
}

// ---------------------------------------------------------------- query parameters

const Bool = z.enum(['true', 'false']).transform((v) => v === 'true');

export const ForecastQuery = z.object({
  start_date: Instant.optional(),
  end_date: Instant.optional(),
  tz: TimeZone.default('UTC'),
  as_of: Instant.optional(),
  model_id: z.string().optional(),
  return_normalized: Bool.default(false),
});

export const ActualsQuery = z.object({
  start_date: Instant,
  end_date: Instant,
  tz: TimeZone.default('UTC'),
  type: z.string().default('power'),
});

/**
 * The spec's unnamed Model Output parameter (`disabled`/`auto`); our wire name is `fill`,
 * changeable in config (`service.output_fill_param`). `auto` fills valid times that the
 * chosen vintage does not cover from the vintages before it; `disabled` returns that vintage alone.
 */
export const OutputFill = z.enum(['disabled', 'auto']);

export const ModelOutputQuery = z.object({
  start_date: Instant.optional(),
  end_date: Instant.optional(),
  tz: TimeZone.default('UTC'),
  as_of: Instant.optional(),
  output_type: z.enum(['forecast', 'clearsky']).default('forecast'),
  fill: OutputFill.default('disabled'),
});

export const ListModelsQuery = z.object({
  model_type: ModelType.optional(),
  extra: z.string().optional(),
});

// ---------------------------------------------------------------- types

export type SiteRequest = z.input<typeof SiteRequest>;
export type SiteSettings = z.output<typeof SiteSettings>;
export type PVAsset = z.output<typeof PVAsset>;
export type SiteResponse = z.output<typeof SiteResponse>;
/** A segment as the client keeps it (capacitySegments): instants as epoch ms, an open end null. */
export type CapacitySegment = {
  [key: string]: unknown;
  value: number;
  dateStart?: number | null;
  dateEnd: number | null;
};
export type ModelItem = z.output<typeof ModelItem>;
export type ModelState = z.output<typeof ModelState>;
export type WindAsset = z.output<typeof WindAsset>;
export type ModelSettings = z.output<typeof ModelSettings>;
export type UpdateModelBody = z.input<typeof UpdateModelBody>;
export type PriorityConflictResolution = z.output<typeof PriorityConflictResolution>;
export type ForecastSeries = z.output<typeof ForecastSeries>;
export type ModelOutput = z.output<typeof ModelOutput>;
export type ActualsSeries = z.output<typeof ActualsSeries>;
export type CapacityPoint = z.input<typeof CapacityPoint>;
export type CapacityUpload = z.input<typeof CapacityUpload>;
export type ErrorItem = z.output<typeof ErrorItem>;
export type Acknowledgement = z.output<typeof Acknowledgement>;
export type SiteType = 'solar' | 'wind' | 'load';
export type ActualsUpload = z.input<typeof ActualsUpload>;
export type CapacityTimeline = z.output<typeof CapacityTimeline>;
export type ForecastUpdateList = z.output<typeof ForecastUpdates>;
export type CapacityFreq = z.output<typeof CapacityFreq>;
export type ActualTypes = z.output<typeof ActualTypes>;
export type TrainSiteModelsBody = z.input<typeof TrainSiteModelsBody>;
export type ModelInput = z.output<typeof ModelInput>;
