// Actuals: the newest value per site, series type and valid time; the loader keeps every
// revision. Power (the default type) goes to `actuals`, any other type configured in
// sync.actual_types to `actuals_by_type`, each type with its own sync state.
import type { ActualsSeries } from '../api/schemas.js';
import { loadActuals, loadTypedActuals } from '../warehouse/loader.js';
import { actualColumns } from './normalize.js';
import { loadOptions, type ResourceSync } from './types.js';
import { planActuals } from './windows.js';

export const POWER = 'power';

/** The sync_state resource of an actuals series: `actuals` for power, `actuals:<type>` for another. */
export function actualsState(type: string): string {
  return type === POWER ? 'actuals' : `actuals:${type}`;
}

/** The sync of one actuals series type. */
export function actualsSync(type: string): ResourceSync<ActualsSeries> {
  const state = actualsState(type);
  return {
    async fetch(env, site, mark) {
      const plan = planActuals(env.now, mark, env.settings, env.backfill);
      const series = await env.client.getSiteActuals(site.siteId, {
        start: plan.window.start,
        end: plan.window.end,
        ...(type === POWER ? {} : { type }),
      });
      return { data: series, rows: series.valid_time.length, mark: plan.mark };
    },
    load: (env, site, fetched) =>
      type === POWER
        ? loadActuals(env.warehouse, site.siteId, actualColumns(fetched.data), {
            ...loadOptions(env, state, fetched.mark),
            quality: env.quality,
          })
        : loadTypedActuals(
            env.warehouse,
            site.siteId,
            type,
            actualColumns(fetched.data),
            loadOptions(env, state, fetched.mark),
          ),
  };
}
