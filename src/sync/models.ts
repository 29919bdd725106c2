// Models: each site's models with serving settings (serving_active via extra), state and schedule.
// The normalize stage derives the quantile level from `quantile_p<percent>` names; the run loads
// the models of many sites per transaction.
import type { Listing, ServiceClient } from '../api/client.js';
import type { ModelItem } from '../api/schemas.js';
import type { SiteModel } from './normalize.js';

/** What the warehouse holds of a model: its label and type. */
export interface KnownModel {
  label: string;
  modelType: 'ai' | 'physical' | null;
}

/** What the warehouse holds of a site's models, by model id. */
export type KnownModels = ReadonlyMap<string, KnownModel>;

/**
 * The site's models with serving_active, each classified ai or physical by listing the site's
 * models with the service's own model_type filter (null when neither list holds it). A malformed
 * model is rejected alone, from the full list (the filtered lists would repeat it). The filtered
 * lists are asked only when a listed model is not classified yet in `known` (new, in neither
 * list, or its label changed): a model keeps its type (docs/interface-assumptions.md), and they
 * were two of a no-change resync's five requests a site.
 */
export async function fetchModels(
  client: ServiceClient,
  siteId: string,
  known: KnownModels = new Map(),
): Promise<Listing<SiteModel>> {
  const listAll = () => client.listSiteModels(siteId, { extra: ['serving_active'] });
  // A site with no model known yet asks all three at once.
  if (known.size === 0) {
    const [all, types] = await Promise.all([listAll(), typeLists(client, siteId)]);
    return classified(all, types);
  }
  const all = await listAll();
  const stored = (item: ModelItem) => {
    const model = known.get(item.id);
    return model && model.label === item.label ? model.modelType : null;
  };
  return classified(
    all,
    all.every((item) => stored(item) !== null)
      ? new Map(all.map((item) => [item.id, stored(item)]))
      : await typeLists(client, siteId),
  );
}

function classified(all: Listing<ModelItem>, types: ReadonlyMap<string, 'ai' | 'physical' | null>): Listing<SiteModel> {
  const models = all.map((item): SiteModel => ({ ...item, model_type: types.get(item.id) ?? null }));
  return Object.assign(models, { rejected: all.rejected });
}

/** Each model's type, as the service's model_type filter lists them. */
async function typeLists(client: ServiceClient, siteId: string): Promise<Map<string, 'ai' | 'physical'>> {
  const [ai, physical] = await Promise.all([
    client.listSiteModels(siteId, { modelType: 'ai' }),
    client.listSiteModels(siteId, { modelType: 'physical' }),
  ]);
  return new Map([...physical.map((m) => [m.id, 'physical'] as const), ...ai.map((m) => [m.id, 'ai'] as const)]);
}
