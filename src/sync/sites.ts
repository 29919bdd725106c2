// Sites: the site rows, their PV assets and capacity timelines, as the site list returned them.
// The list is read once per run, so all selected sites load in one transaction (a reader never
// sees a site without its assets), instead of one small transaction per site.
import type { SiteResponse } from '../api/schemas.js';
import { loadSites } from '../warehouse/loader.js';
import { siteRows } from './normalize.js';
import type { RowCounts, SyncEnv } from './types.js';

export function syncSites(env: SyncEnv, sites: readonly SiteResponse[]): Promise<RowCounts> {
  return loadSites(env.warehouse, sites.map(siteRows), { now: env.now });
}
