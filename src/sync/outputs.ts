// Every model's own output, keyed by as_of: past vintages one as_of per step, then the current one.
import pLimit from 'p-limit';
import { loadModelOutputs } from '../warehouse/loader.js';
import type { RowCounts, SiteTask, SyncEnv } from './types.js';
import { planVintages, type SyncMark } from './windows.js';

export async function syncOutputs(env: SyncEnv, site: SiteTask, mark: SyncMark | null): Promise<RowCounts> {
  const plan = planVintages(env.now, mark, env.settings, env.backfill);
  const models = await site.models();
  const limit = pLimit(env.requestsPerSite);
  const outputs = await Promise.all(models.flatMap((model) => plan.reads.map((read) => limit(() =>
    env.client.getModelOutput(model.id, {
      start: read.start,
      end: read.end,
      ...(read.asOf === null ? {} : { asOf: read.asOf }),
    })))));
  return loadModelOutputs(env.warehouse, site.siteId, outputs, {
    now: env.now,
    ...(plan.mark ? { syncState: { resource: 'outputs', ...plan.mark, runId: env.runId } } : {}),
  });
}
