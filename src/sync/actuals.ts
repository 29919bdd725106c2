// Actuals: the newest value per site and valid time; the loader keeps every revision.
import { loadActuals } from '../warehouse/loader.js';
import type { RowCounts, SiteTask, SyncEnv } from './types.js';
import { planActuals, type SyncMark } from './windows.js';

export async function syncActuals(env: SyncEnv, site: SiteTask, mark: SyncMark | null): Promise<RowCounts> {
  const plan = planActuals(env.now, mark, env.settings, env.backfill);
  const [read] = plan.reads;
  const series = await env.client.getSiteActuals(site.siteId, { start: read.start, end: read.end });
  return loadActuals(env.warehouse, site.siteId, series, {
    now: env.now,
    ...(plan.mark ? { syncState: { resource: 'actuals', ...plan.mark, runId: env.runId } } : {}),
  });
}
