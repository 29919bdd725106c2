// Every model's own output, keyed by as_of: past vintages one as_of per step, then the current one.
import pLimit from 'p-limit';
import type { ModelOutput } from '../api/schemas.js';
import { loadModelOutputs } from '../warehouse/loader.js';
import { loadOptions, type ResourceSync } from './types.js';
import { planVintages } from './windows.js';

export const outputsSync: ResourceSync<ModelOutput[]> = {
  async fetch(env, site, mark) {
    const plan = planVintages(env.now, mark, env.settings, env.backfill);
    const models = await site.models();
    const limit = pLimit(env.requestsPerSite);
    const outputs = await Promise.all(models.flatMap((model) => plan.reads.map((read) => limit(() =>
      env.client.getModelOutput(model.id, {
        start: read.start,
        end: read.end,
        ...(read.asOf === null ? {} : { asOf: read.asOf }),
      })))));
    return { data: outputs, mark: plan.mark };
  },
  load: (env, site, fetched) =>
    loadModelOutputs(env.warehouse, site.siteId, fetched.data, loadOptions(env, 'outputs', fetched.mark)),
};
