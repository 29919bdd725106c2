// Models: each site's models with serving settings (serving_active via extra), state and schedule.
import type { ServiceClient } from '../api/client.js';
import { loadModels, type SiteModel } from '../warehouse/loader.js';
import type { RowCounts, SiteTask, SyncEnv } from './types.js';

/** Quantile level of a model named `quantile_p<percent>` (`quantile_p10` → 0.1); null for point forecasts. */
export function quantileLevel(name: string): number | null {
  const match = /^quantile_p(\d+(?:\.\d+)?)$/.exec(name);
  if (!match) return null;
  const level = Number(match[1]) / 100;
  return level > 0 && level < 1 ? level : null;
}

/**
 * The site's models with serving_active, each classified ai or physical by listing the site's
 * models with the service's own model_type filter (null when neither list holds it).
 */
export async function fetchModels(client: ServiceClient, siteId: string): Promise<SiteModel[]> {
  const [all, ai, physical] = await Promise.all([
    client.listSiteModels(siteId, { extra: ['serving_active'] }),
    client.listSiteModels(siteId, { modelType: 'ai' }),
    client.listSiteModels(siteId, { modelType: 'physical' }),
  ]);
  const aiIds = new Set(ai.map((m) => m.id));
  const physicalIds = new Set(physical.map((m) => m.id));
  return all.map((item) => ({
    ...item,
    model_type: aiIds.has(item.id) ? 'ai' : physicalIds.has(item.id) ? 'physical' : null,
  }));
}

export async function syncModels(env: SyncEnv, site: SiteTask): Promise<RowCounts> {
  return loadModels(env.warehouse, site.siteId, await site.models(), { now: env.now });
}
