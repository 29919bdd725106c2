// Models: each site's models with serving settings (serving_active via extra), state and schedule.
// The normalize stage derives the quantile level from `quantile_p<percent>` names; the run loads
// the models of many sites per transaction.
import type { Listing, ServiceClient } from '../api/client.js';
import type { SiteModel } from './normalize.js';

/**
 * The site's models with serving_active, each classified ai or physical by listing the site's
 * models with the service's own model_type filter (null when neither list holds it). A malformed
 * model is rejected alone, from the full list (the filtered lists would repeat it).
 */
export async function fetchModels(client: ServiceClient, siteId: string): Promise<Listing<SiteModel>> {
  const [all, ai, physical] = await Promise.all([
    client.listSiteModels(siteId, { extra: ['serving_active'] }),
    client.listSiteModels(siteId, { modelType: 'ai' }),
    client.listSiteModels(siteId, { modelType: 'physical' }),
  ]);
  const aiIds = new Set(ai.map((m) => m.id));
  const physicalIds = new Set(physical.map((m) => m.id));
  const models = all.map(
    (item): SiteModel => ({
      ...item,
      model_type: aiIds.has(item.id) ? 'ai' : physicalIds.has(item.id) ? 'physical' : null,
    }),
  );
  return Object.assign(models, { rejected: all.rejected });
}
