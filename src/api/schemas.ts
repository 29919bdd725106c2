// The one definition of the service interface (Platform API v2). The client validates
// responses with these schemas and the emulator validates requests with them; the wire
// types are `z.input<...>`, the parsed types (instants as epoch ms) are `z.output<...>`.
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

/** Capacity points must be UTC at minute precision: `YYYY-MM-DDTHH:MMZ`. */
export const MinuteInstant = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$/, 'must be UTC at minute precision, YYYY-MM-DDTHH:MMZ')
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

export const PVAssetFixed = z.object({
  mount: z.literal('fixed'),
  capacity: Capacity,
  install_date: DateText.optional(),
  azimuth: Azimuth,
  tilt: Angle,
});

export const PVAssetSingleAxis = z.object({
  mount: z.literal('single_axis_tracking'),
  capacity: Capacity,
  install_date: DateText.optional(),
  axis_tilt: Angle.default(0),
  axis_azimuth: Azimuth.default(180),
  max_angle: Angle.default(60),
});

export const PVAssetDualAxis = z.object({
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

export const SolarSiteItem = z.object({
  ...siteCommon,
  type: z.literal('solar'),
  assets: z.array(PVAsset).min(1),
});

/** Wind: `turbine_type` (e.g. `V126/3000` or `generic`), a turbine count and the total capacity in kW. */
export const WindSiteItem = z.object({
  ...siteCommon,
  type: z.literal('wind'),
  turbine_type: z.string().min(1),
  turbine_count: z.number().int().min(1),
  capacity: Capacity,
  hub_height: z.number().positive().optional(),
});

/** Load: no assets; `capacity` is the connection's peak in kW, used to normalise errors. */
export const LoadSiteItem = z.object({
  ...siteCommon,
  type: z.literal('load'),
  capacity: Capacity.optional(),
});

export const SiteRequest = z.discriminatedUnion('type', [SolarSiteItem, WindSiteItem, LoadSiteItem]);

/** One segment of the capacity timeline; `dateStart` is the emulator's addition, extra keys are kept. */
export const CapacitySegment = z.looseObject({
  value: z.number(),
  dateStart: Instant.nullable().optional(),
  dateEnd: Instant.nullable().optional(),
});

export const SiteResponse = z.looseObject({
  id: z.string(),
  site_id: z.string(),
  name: z.string(),
  latitude: z.number(),
  longitude: z.number(),
  capacity_kw_array: z.array(CapacitySegment).default([]),
  creation_timestamp_utc: Instant,
  type: z.string(),
  settings: z.record(z.string(), z.unknown()).nullable().optional(),
  assets: z.array(z.looseObject({ capacity: z.number().optional(), mount: z.string().optional() })).default([]),
  turbine_type: z.string().optional(),
  turbine_count: z.number().int().optional(),
  capacity: z.number().optional(),
});

export const CreateSiteResponse = z.looseObject({ site_id: z.string() });

// ---------------------------------------------------------------- models

/** Training status, in the older SDK's shape; unknown states are kept as they come. */
export const ModelState = z.looseObject({
  state: z.string(),
  timestamp_utc: Instant,
});

export const ModelSchedule = z.object({ type: z.literal('cron'), value: z.string() });

export const ModelItem = z.looseObject({
  id: z.string(),
  name: z.string(),
  label: z.string(),
  version: z.number().int(),
  display_name: z.string().nullable().optional(),
  priority: z.number().int(),
  output_types: z.array(z.string()).nullable().optional().transform((v) => v ?? []),
  state: z.array(ModelState),
  schedule: ModelSchedule.nullable().optional(),
  serving_active: z.boolean().nullable().optional(),
});

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

export const ForecastSeries = z
  .looseObject({
    valid_time: z.array(Instant),
    forecast: z.array(Num),
    capacity: z.array(Num),
    model_name: z.array(z.string()),
    model_version: z.array(z.number().int()),
    update_time: z.array(Instant),
  })
  .superRefine(equalLengths(['valid_time', 'forecast', 'capacity', 'model_name', 'model_version', 'update_time']));

export const ModelOutput = z
  .looseObject({
    model_id: z.string(),
    model_version: z.number().int(),
    model_name: z.string(),
    model_label: z.string(),
    priority: z.number().int(),
    as_of: Instant,
    forecast: z.array(Num),
    valid_time: z.array(Instant),
    capacity: z.array(Num),
  })
  .superRefine(equalLengths(['valid_time', 'forecast', 'capacity']));

export const ActualsSeries = z
  .looseObject({
    valid_time: z.array(Instant),
    value: z.array(Num),
  })
  .superRefine(equalLengths(['valid_time', 'value']));

// ---------------------------------------------------------------- capacity

export const CapacityPoint = z.object({
  valid_time: MinuteInstant,
  value: z.number().nonnegative(),
});

export const CapacityUpload = z.object({ data: z.array(CapacityPoint).min(1) });

export const MessageResponse = z.looseObject({ message: z.string() });

// ---------------------------------------------------------------- errors

export const ErrorItem = z.object({ field: z.string(), message: z.string() });
export const ErrorBody = z.object({ errors: z.array(ErrorItem) });

/** `errors[]` items from a zod failure: `field` is the dotted path of the offending value. */
export function issuesToErrors(error: z.ZodError, prefix?: string): ErrorItem[] {
  return error.issues.map((issue) => ({
    field: [prefix, ...issue.path.map(String)].filter((p) => p !== undefined && p !== '').join('.') || '(body)',
    message: issue.message,
  }));
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
export type SiteResponseWire = z.input<typeof SiteResponse>;
export type CapacitySegment = z.output<typeof CapacitySegment>;
export type ModelItem = z.output<typeof ModelItem>;
export type ModelItemWire = z.input<typeof ModelItem>;
export type ModelState = z.output<typeof ModelState>;
export type ModelSettings = z.output<typeof ModelSettings>;
export type UpdateModelBody = z.input<typeof UpdateModelBody>;
export type PriorityConflictResolution = z.output<typeof PriorityConflictResolution>;
export type ForecastSeries = z.output<typeof ForecastSeries>;
export type ForecastSeriesWire = z.input<typeof ForecastSeries>;
export type ModelOutput = z.output<typeof ModelOutput>;
export type ModelOutputWire = z.input<typeof ModelOutput>;
export type ActualsSeries = z.output<typeof ActualsSeries>;
export type ActualsSeriesWire = z.input<typeof ActualsSeries>;
export type CapacityPoint = z.input<typeof CapacityPoint>;
export type CapacityUpload = z.input<typeof CapacityUpload>;
export type ErrorItem = z.output<typeof ErrorItem>;
export type SiteType = 'solar' | 'wind' | 'load';
