// Actuals: the newest value per site and valid time; the loader keeps every revision.
import type { ActualsSeries } from '../api/schemas.js';
import { loadActuals } from '../warehouse/loader.js';
import { loadOptions, type ResourceSync } from './types.js';
import { planActuals } from './windows.js';

export const actualsSync: ResourceSync<ActualsSeries> = {
  async fetch(env, site, mark) {
    const plan = planActuals(env.now, mark, env.settings, env.backfill);
    const series = await env.client.getSiteActuals(site.siteId, { start: plan.window.start, end: plan.window.end });
    return { data: series, mark: plan.mark };
  },
  load: (env, site, fetched) =>
    loadActuals(env.warehouse, site.siteId, fetched.data, loadOptions(env, 'actuals', fetched.mark)),
};
