// The site forecast, every update_time vintage kept: past vintages by as_of, then the current one.
import pLimit from 'p-limit';
import { loadForecasts, type ForecastColumns } from '../warehouse/loader.js';
import { loadOptions, type ResourceSync } from './types.js';
import { planVintages } from './windows.js';

/** Every read of the site goes to the loader as it came (the loader drops repeated keys). */
export const forecastsSync: ResourceSync<ForecastColumns[]> = {
  async fetch(env, site, mark) {
    const plan = planVintages(env.now, mark, env.settings, env.backfill);
    const limit = pLimit(env.requestsPerSite);
    const series = await Promise.all(plan.reads.map((read) => limit(() => env.client.getSiteForecast(site.siteId, {
      start: read.start,
      end: read.end,
      ...(read.asOf === null ? {} : { asOf: read.asOf }),
    }))));
    return { data: series, mark: plan.mark, defaulted: series.flatMap((read) => read.defaulted.map((field) => `forecasts.${field}`)) };
  },
  load: (env, site, fetched) =>
    loadForecasts(env.warehouse, site.siteId, fetched.data, loadOptions(env, 'forecasts', fetched.mark)),
};
