// Actuals: the newest value per site, series type and valid time; the loader keeps every
// revision. Power (the default type) goes to `actuals`, any other type configured in
// sync.actual_types to `actuals_by_type`, each type with its own sync state. A read that finds
// what the last one stored (its digest, src/sync/digest.ts) loads nothing: only its state moves.
import type { ActualsSeries } from '../api/schemas.js';
import { actualsDigest } from './digest.js';
import { loadActuals, loadTypedActuals } from '../warehouse/loader.js';
import { actualColumns, repeatedTimes } from './normalize.js';
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
      const defaulted = repeatedTimes(state, series.valid_time);
      if (!plan.mark) return { data: series, rows: series.valid_time.length, mark: null, defaulted };
      // The last read stored these same values from this same start, and nothing after them.
      const columns = actualColumns(series);
      const unchanged = mark?.digest != null && mark.digest === actualsDigest(plan.window.start, columns);
      // What the next run will re-read of it: its window starts where this mark says (at any clock).
      const next = planActuals(env.now, plan.mark, env.settings).window.start;
      return {
        data: series,
        rows: unchanged ? 0 : series.valid_time.length,
        mark: { ...plan.mark, digest: actualsDigest(next, columns) },
        defaulted,
      };
    },
    load: (env, site, fetched) =>
      type === POWER
        ? loadActuals(env.warehouse, site.siteId, actualColumns(fetched.data), loadOptions(env, state, fetched.mark))
        : loadTypedActuals(
            env.warehouse,
            site.siteId,
            type,
            actualColumns(fetched.data),
            loadOptions(env, state, fetched.mark),
          ),
  };
}
