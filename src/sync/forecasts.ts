// The site forecast, every update_time vintage kept: past vintages by as_of, then the current one.
import pLimit from 'p-limit';
import type { ForecastSeries } from '../api/schemas.js';
import { loadForecasts, type ForecastColumns } from '../warehouse/loader.js';
import { loadOptions, type ResourceSync } from './types.js';
import { planVintages } from './windows.js';

/** Several reads of one site's forecast as one set of columns (the loader drops repeated keys). */
export function forecastColumns(series: ForecastSeries[]): ForecastColumns {
  if (series.length === 1) return series[0];
  return {
    valid_time: series.flatMap((s) => s.valid_time),
    forecast: series.flatMap((s) => s.forecast),
    capacity: series.flatMap((s) => s.capacity),
    model_name: series.flatMap((s) => s.model_name),
    model_version: series.flatMap((s) => s.model_version),
    update_time: series.flatMap((s) => s.update_time),
  };
}

export const forecastsSync: ResourceSync<ForecastColumns> = {
  async fetch(env, site, mark) {
    const plan = planVintages(env.now, mark, env.settings, env.backfill);
    const limit = pLimit(env.requestsPerSite);
    const series = await Promise.all(plan.reads.map((read) => limit(() => env.client.getSiteForecast(site.siteId, {
      start: read.start,
      end: read.end,
      ...(read.asOf === null ? {} : { asOf: read.asOf }),
    }))));
    return { data: forecastColumns(series), mark: plan.mark };
  },
  load: (env, site, fetched) =>
    loadForecasts(env.warehouse, site.siteId, fetched.data, loadOptions(env, 'forecasts', fetched.mark)),
};
