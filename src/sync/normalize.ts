// The normalize stage of the sync: parsed service responses (src/api) in, rows and columns named
// as the warehouse names them (src/warehouse/rows.ts) out. Extract knows HTTP and the service's
// shapes, load knows DuckDB and these rows; this is the one place that knows both. Pure: no I/O.
import type { ActualsSeries, ForecastSeries, ModelItem, ModelOutput, SiteResponse } from '../api/schemas.js';
import { nameplateKw } from '../api/schemas.js';
import type {
  ActualColumns,
  AssetRow,
  CapacityRow,
  ForecastColumns,
  ModelOutputColumns,
  ModelRows,
  SiteRows,
} from '../warehouse/rows.js';

/** A listed model with its type, when the service's model_type filter placed it. */
export type SiteModel = ModelItem & { model_type?: 'ai' | 'physical' | null };

/** Fields of the site response stored in their own columns or tables; the rest go to `details`. */
const SITE_COLUMNS = new Set([
  'id',
  'site_id',
  'name',
  'type',
  'latitude',
  'longitude',
  'creation_timestamp_utc',
  'settings',
  'assets',
  'capacity_kw_array',
  'defaulted',
]);

/** A site as `sites`, `site_assets` and `site_capacity` rows. */
export function siteRows(site: SiteResponse): SiteRows {
  return {
    site: {
      site_id: site.site_id,
      name: site.name,
      type: site.type,
      latitude: site.latitude,
      longitude: site.longitude,
      nameplate_kw: nameplateKw(site),
      created_at: site.creation_timestamp_utc,
      settings: site.settings ?? null,
      details: Object.fromEntries(Object.entries(site).filter(([key]) => !SITE_COLUMNS.has(key))),
    },
    assets: site.assets.map((asset, index): AssetRow => {
      const fields = asset as Record<string, unknown>;
      return {
        site_id: site.site_id,
        asset_index: index,
        mount: asset.mount ?? null,
        capacity_kw: asset.capacity ?? null,
        install_date: fields.install_date ?? null,
        azimuth: fields.azimuth ?? null,
        tilt: fields.tilt ?? null,
        axis_tilt: fields.axis_tilt ?? null,
        axis_azimuth: fields.axis_azimuth ?? null,
        max_angle: fields.max_angle ?? null,
        details: asset,
      };
    }),
    capacity: site.capacity_kw_array.map(
      (segment, index): CapacityRow => ({
        site_id: site.site_id,
        segment_index: index,
        valid_from: segment.dateStart ?? null,
        valid_to: segment.dateEnd ?? null,
        value_kw: segment.value,
        details: segment,
      }),
    ),
  };
}

/** The quantile level of a model named quantile_p<percent>, else null. */
export function quantileOf(name: string): number | null {
  const match = /^quantile_p(\d+(?:\.\d+)?)$/.exec(name);
  return match ? Number(match[1]) / 100 : null;
}

/** A state entry that can be stored: it names a state and a time (entries of other shapes are not). */
type DatedState = ModelItem['state'][number] & { state: string; timestamp_utc: number };

/** A site's model as a `models` row (its newest state as latest_state) and its `model_states` rows. */
export function modelRows(siteId: string, model: SiteModel): ModelRows {
  const states = model.state.filter(
    (entry): entry is DatedState => entry.state !== null && entry.timestamp_utc !== null,
  );
  const newest = states.reduce<DatedState | undefined>(
    (best, entry) => (best === undefined || entry.timestamp_utc >= best.timestamp_utc ? entry : best),
    undefined,
  );
  return {
    model: {
      model_id: model.id,
      site_id: siteId,
      name: model.name,
      label: model.label,
      version: model.version,
      display_name: model.display_name ?? null,
      model_type: model.model_type ?? null,
      quantile: quantileOf(model.name),
      priority: model.priority,
      serving_active: model.serving_active ?? null,
      output_types: model.output_types,
      schedule_cron: model.schedule?.value ?? null,
      latest_state: newest?.state ?? null,
    },
    states: states.map((entry) => ({
      site_id: siteId,
      model_id: model.id,
      state: entry.state,
      state_at: entry.timestamp_utc,
      details: entry.details,
    })),
  };
}

/** A read of the site forecast as `forecasts` columns (the response's own, named one by one: it may carry more). */
export function forecastColumns(series: ForecastSeries): ForecastColumns {
  return {
    valid_time: series.valid_time,
    forecast: series.forecast,
    capacity: series.capacity,
    model_name: series.model_name,
    model_version: series.model_version,
    update_time: series.update_time,
  };
}

/** A vintage of a model's output (one that has an as_of) as `model_outputs` columns. */
export function outputColumns(output: ModelOutput & { as_of: number }): ModelOutputColumns {
  return {
    model_id: output.model_id,
    model_name: output.model_name,
    model_version: output.model_version,
    as_of: output.as_of,
    valid_time: output.valid_time,
    forecast: output.forecast,
    capacity: output.capacity,
  };
}

/** An actuals series as `actuals` columns. */
export function actualColumns(series: ActualsSeries): ActualColumns {
  return { valid_time: series.valid_time, value: series.value };
}

/**
 * `resource.valid_time[repeated]` once for each valid time a body lists more than once (the
 * loader keeps its greatest value, src/warehouse/dedupe.ts): the run says the answer was untidy.
 * One pass over a body whose valid times rise, as the service's do.
 */
export function repeatedTimes(resource: string, times: readonly number[]): string[] {
  let rising = true;
  for (let i = 1; i < times.length && rising; i++) rising = times[i] > times[i - 1];
  if (rising) return [];
  return new Array<string>(times.length - new Set(times).size).fill(`${resource}.valid_time[repeated]`);
}
