// Sites: the site row, its PV assets and its capacity timeline, as the site list returned them.
import type { SiteResponse } from '../api/schemas.js';
import { loadSites } from '../warehouse/loader.js';
import type { RowCounts, SyncEnv } from './types.js';

/** The sites step of one site: the site list already read it, so only the load remains. */
export async function syncSite(env: SyncEnv, site: SiteResponse): Promise<RowCounts> {
  return loadSites(env.warehouse, [site], { now: env.now });
}
