// The site forecast, every issued vintage kept: the service lists its issue times (Get Site
// Forecast Updates), and each one not read yet is read as of that time, intraday ones included.
import pLimit from 'p-limit';
import type { ForecastSeries } from '../api/schemas.js';
import { loadForecasts } from '../warehouse/loader.js';
import { forecastColumns } from './normalize.js';
import { loadOptions, skippedUpdates, type ResourceSync } from './types.js';
import { planForecastUpdates } from './windows.js';

/** Every read of the site goes to the loader as it came (the loader drops repeated keys). */
export const forecastsSync: ResourceSync<ForecastSeries[]> = {
  async fetch(env, site, mark) {
    const updates = await site.updates();
    const plan = planForecastUpdates(env.now, mark, env.settings, updates, env.backfill);
    const limit = pLimit(env.requestsPerSite);
    const series = await Promise.all(
      plan.reads.map((read) =>
        limit(() =>
          env.client.getSiteForecast(site.siteId, {
            start: read.start,
            end: read.end,
            ...(read.asOf === null ? {} : { asOf: read.asOf }),
          }),
        ),
      ),
    );
    return {
      data: series,
      rows: series.reduce((sum, read) => sum + read.valid_time.length, 0),
      mark: plan.mark,
      defaulted: [
        ...skippedUpdates('forecasts', updates),
        ...series.flatMap((read) => read.defaulted.map((field) => `forecasts.${field}`)),
      ],
    };
  },
  load: (env, site, fetched) =>
    loadForecasts(
      env.warehouse,
      site.siteId,
      fetched.data.map(forecastColumns),
      loadOptions(env, 'forecasts', fetched.mark),
    ),
};
