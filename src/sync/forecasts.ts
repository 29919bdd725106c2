// The site forecast, every issued vintage kept: the service lists its issue times (Get Site
// Forecast Updates), and each one not read yet is read as of that time, intraday ones included.
// Each vintage is an item of its own (src/sync/vintages.ts): the newest read in the run's first
// pass, the others in its second, checked to be the vintage asked for; one that fails is recorded
// and read again on the next syncs.
import type { ForecastSeries } from '../api/schemas.js';
import { formatExactInstant, sameInstant } from '../time.js';
import { loadForecasts } from '../warehouse/loader.js';
import { forecastColumns } from './normalize.js';
import { loadVintages, skippedUpdates, type ResourceSync } from './types.js';
import {
  type ItemResult,
  NOT_PENDING,
  pendingPiece,
  readEach,
  readNewest,
  settleReads,
  type VintageItem,
  WrongVintage,
} from './vintages.js';
import { planForecastUpdates } from './windows.js';

/**
 * The `newest` pass reads the newest issue time not read yet and defers the others to the
 * `older` pass, which reads them with the site's pending ones (a backfill reads its window's
 * all at once). Every read goes to the loader as it came (the loader drops repeated keys).
 */
export const forecastsSync: ResourceSync<ForecastSeries[]> = {
  async fetch(env, site, mark, pass, piece = []) {
    const read = async (item: VintageItem): Promise<ItemResult<ForecastSeries>> => {
      const series = await env.client.getSiteForecast(site.siteId, {
        start: item.issue,
        end: item.issue + env.settings.horizon,
        asOf: item.issue,
      });
      checkVintage(series, item.issue);
      return { item, value: series };
    };
    if (pass === 'older') {
      const results = await readEach(piece, env.requestsPerSite, env.signal, read);
      return { ...(await settleReads(env, site.siteId, 'forecasts', results, pendingPiece(piece), [])), mark: null };
    }
    const updates = await site.updates();
    const plan = planForecastUpdates(env.now, mark, env.settings, updates, env.backfill);
    const items = plan.reads.map((planned) => ({ modelId: '', issue: planned.asOf as number }));
    const { results, deferred } = env.backfill
      ? { results: await readEach(items, env.requestsPerSite, env.signal, read), deferred: [] }
      : await readNewest(items, env.requestsPerSite, env.signal, read);
    const pending = env.backfill ? NOT_PENDING : env.pending(site.siteId, 'forecasts');
    const settled = await settleReads(env, site.siteId, 'forecasts', results, pending, deferred);
    return { ...settled, mark: plan.mark, defaulted: [...skippedUpdates('forecasts', updates), ...settled.defaulted] };
  },
  load: (env, site, fetched) =>
    loadVintages(env, 'forecasts', fetched, (values, options) =>
      loadForecasts(env.warehouse, site.siteId, values.map(forecastColumns), options),
    ),
};

/**
 * The answer to a read as of `asOf` holds no vintage issued after it (to the microsecond): one
 * that did would be a service ignoring the as_of. Each row is stored under its own update_time, so
 * an answer cannot put rows under the wrong issue time; its newest vintage may be older than
 * `asOf`, as the site forecast stitches its models by priority and the issue time listed may be a
 * lower-priority model's.
 */
function checkVintage(series: ForecastSeries, asOf: number): void {
  const newest = series.update_time.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
  if (newest > asOf && !sameInstant(newest, asOf))
    throw new WrongVintage(
      `asked as_of ${formatExactInstant(asOf)}, the answer holds a vintage issued later, ${formatExactInstant(newest)}`,
    );
}
