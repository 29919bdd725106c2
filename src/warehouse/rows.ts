// The rows and columns the loader takes, named as the warehouse names them (its tables'
// columns). The sync's normalize stage (src/sync/normalize.ts) builds them from the service's
// responses; the warehouse knows nothing of those responses. Instants are epoch ms UTC (see
// sql.ts); JSON columns take any value JSON.stringify writes.
//
// Reference rows are objects, one per table row. Series come as columns: parallel arrays of equal
// length (anything indexable, so typed arrays fit), with what a whole block shares given once.

/** Which instant of its interval a timestamp names (interval_labels, and the flags' capacity). */
export type IntervalLabel = 'beginning' | 'ending' | 'instant';

/** A value per row: an array, or a typed array. */
export type Column<T> = ArrayLike<T>;

/** A row of `sites` (synced_at is the loader's). */
export type SiteRow = {
  site_id: string;
  name: string;
  type: string;
  latitude: number;
  longitude: number;
  nameplate_kw: number | null;
  created_at: number;
  settings: unknown;
  details: unknown;
};

/** A row of `site_assets`. */
export type AssetRow = {
  site_id: string;
  asset_index: number;
  mount: string | null;
  capacity_kw: number | null;
  install_date: unknown;
  azimuth: unknown;
  tilt: unknown;
  axis_tilt: unknown;
  axis_azimuth: unknown;
  max_angle: unknown;
  details: unknown;
};

/** A row of `site_capacity`. */
export type CapacityRow = {
  site_id: string;
  segment_index: number;
  valid_from: number | null;
  valid_to: number | null;
  value_kw: number;
  details: unknown;
};

/** A site with its assets and capacity segments: loaded together, so a reader never sees one without the others. */
export type SiteRows = { site: SiteRow; assets: AssetRow[]; capacity: CapacityRow[] };

/** A row of `models` (synced_at is the loader's). */
export type ModelRow = {
  model_id: string;
  site_id: string;
  name: string;
  label: string;
  version: number;
  display_name: string | null;
  model_type: string | null;
  quantile: number | null;
  priority: number;
  serving_active: boolean | null;
  output_types: readonly string[];
  schedule_cron: string | null;
  latest_state: string | null;
};

/** A row of `model_states`. */
export type ModelStateRow = { site_id: string; model_id: string; state: string; state_at: number; details: unknown };

/** A model with its state entries. */
export type ModelRows = { model: ModelRow; states: ModelStateRow[] };

/** Rows of `forecasts` of one site. */
export interface ForecastColumns {
  valid_time: Column<number>;
  forecast: Column<number | null>;
  capacity: Column<number | null>;
  model_name: Column<string>;
  model_version: Column<number>;
  update_time: Column<number>;
}

/** Rows of `model_outputs` of one model and vintage (as_of). */
export interface ModelOutputColumns {
  model_id: string;
  model_name: string;
  model_version: number;
  as_of: number;
  valid_time: Column<number>;
  forecast: Column<number | null>;
  capacity: Column<number | null>;
}

/** Rows of `actuals` (or `actuals_by_type`, of one type) of one site. */
export interface ActualColumns {
  valid_time: Column<number>;
  value: Column<number | null>;
}

/** What a load returns: rows inserted plus rows updated, per table; tables with 0 are left out. */
export type RowsWritten = Record<string, number>;

/** Adds `part` into `total` (in place) and returns `total`. */
export function addRows(total: RowsWritten, part: RowsWritten): RowsWritten {
  for (const [table, rows] of Object.entries(part)) {
    if (rows > 0) total[table] = (total[table] ?? 0) + rows;
  }
  return total;
}

export function nonZero(rows: RowsWritten): RowsWritten {
  return Object.fromEntries(Object.entries(rows).filter(([, n]) => n > 0));
}
