// The site forecast, every update_time vintage kept: past vintages by as_of, then the current one.
import pLimit from 'p-limit';
import type { ForecastSeries } from '../api/schemas.js';
import { loadForecasts, type ForecastColumns } from '../warehouse/loader.js';
import type { RowCounts, SiteTask, SyncEnv } from './types.js';
import { planVintages, type SyncMark, type VintageRead } from './windows.js';

export async function fetchForecasts(env: SyncEnv, siteId: string, reads: VintageRead[]): Promise<ForecastSeries[]> {
  const limit = pLimit(env.requestsPerSite);
  return Promise.all(reads.map((read) => limit(() => env.client.getSiteForecast(siteId, {
    start: read.start,
    end: read.end,
    ...(read.asOf === null ? {} : { asOf: read.asOf }),
  }))));
}

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

export async function syncForecasts(env: SyncEnv, site: SiteTask, mark: SyncMark | null): Promise<RowCounts> {
  const plan = planVintages(env.now, mark, env.settings, env.backfill);
  const series = await fetchForecasts(env, site.siteId, plan.reads);
  return loadForecasts(env.warehouse, site.siteId, forecastColumns(series), {
    now: env.now,
    ...(plan.mark ? { syncState: { resource: 'forecasts', ...plan.mark, runId: env.runId } } : {}),
  });
}
