// Sites: the site rows, their PV assets and capacity timelines, as the site list returned them.
// The list is read once per run and its sites load in transactions of many whole sites each (a
// reader never sees a site without its assets), instead of one small transaction per site.
import type { SiteResponse } from '../api/schemas.js';
import { addRows, loadSites } from '../warehouse/loader.js';
import { siteRows } from './normalize.js';
import type { RowCounts, SyncEnv } from './types.js';

/**
 * Sites a load stages and writes at once: few enough that a load fits the smallest budget's
 * DuckDB limit whatever the number of sites, many enough that its statements' cost is shared
 * (docs/benchmarks.md, session 38).
 */
const SITES_PER_LOAD = 1_000;

export async function syncSites(env: SyncEnv, sites: readonly SiteResponse[]): Promise<RowCounts> {
  const rows: RowCounts = {};
  for (let start = 0; start < sites.length; start += SITES_PER_LOAD) {
    const batch = sites.slice(start, start + SITES_PER_LOAD);
    addRows(rows, await loadSites(env.warehouse, batch.map(siteRows), { now: env.now }));
  }
  return rows;
}
