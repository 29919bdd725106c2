// The sync of a run: list the sites, then stream them through p-limit, each site's resources in
// order, each resource fetched then loaded in its own transaction. Only the sites in flight hold
// data, so memory does not grow with the number of sites. A failing site and resource is recorded
// and skipped; every other site still syncs.
import pLimit from 'p-limit';
import type { SiteResponse } from '../api/schemas.js';
import { RESOURCES, type Resource } from '../config.js';
import { JobUsageError, type Failure, type JobContext, type JobOutcome } from '../runner/job.js';
import type { SiteModel } from '../warehouse/loader.js';
import { syncActuals } from './actuals.js';
import { syncForecasts } from './forecasts.js';
import { fetchModels, syncModels } from './models.js';
import { syncOutputs } from './outputs.js';
import { syncSite } from './sites.js';
import { readMarks } from './state.js';
import type { RowCounts, SiteTask, SyncEnv } from './types.js';
import type { SyncMark } from './windows.js';

/** Requests of one resource of one site in flight at once (model outputs: models × vintages). */
const REQUESTS_PER_SITE = 4;

type Marks = Partial<Record<Resource, Map<string, SyncMark>>>;

/** Syncs `resources` (in the order of RESOURCES) for the sites of `ctx.options.sites`, or all. */
export async function syncAll(ctx: JobContext, resources: readonly Resource[]): Promise<JobOutcome> {
  const ordered = RESOURCES.filter((r) => resources.includes(r));
  const env = await syncEnv(ctx);
  const sites = selectSites(await env.client.listSites(), ctx.options.sites);
  const marks = await readAllMarks(ctx, ordered);
  const rows: RowCounts = {};
  const failures: Failure[] = [];
  let succeeded = 0;
  let notStarted = 0;

  ctx.log.info({ sites: sites.length, resources: ordered, backfill: env.backfill }, 'sync started');
  ctx.progress.start(sites.length, 'sync');
  const limit = pLimit(ctx.config.sync.concurrency);
  await Promise.all(sites.map((site) => limit(async () => {
    if (ctx.signal.aborted) {
      notStarted += 1;
      return;
    }
    const task = siteTask(env, site);
    const siteRows: RowCounts = {};
    for (const resource of ordered) {
      if (ctx.signal.aborted) break;
      try {
        addRows(siteRows, await syncResource(env, resource, site, task, marks[resource]?.get(site.site_id) ?? null));
        succeeded += 1;
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        failures.push({ siteId: site.site_id, resource, reason });
        ctx.log.warn({ siteId: site.site_id, resource, err: reason }, 'site resource failed; going on with the others');
      }
    }
    addRows(rows, siteRows);
    ctx.log.debug({ siteId: site.site_id, rows: siteRows }, 'site synced');
    ctx.progress.tick();
  })));
  ctx.progress.stop();

  if (notStarted > 0) failures.push({ reason: `stopped before ${notStarted} of ${sites.length} sites started` });
  const status = failures.length === 0 ? 'ok' : succeeded > 0 ? 'partial' : 'failed';
  ctx.log.info({ status, rows, failures: failures.length }, 'sync ended');
  return { status, rows, failures, summary: summaryLines(sites.length, ordered, rows, failures) };
}

async function syncEnv(ctx: JobContext): Promise<SyncEnv> {
  const { from, to } = ctx.options;
  if ((from === undefined) !== (to === undefined)) throw new JobUsageError('--from and --to go together');
  if (from !== undefined && to !== undefined && from >= to) throw new JobUsageError('--from must be before --to');
  const sync = ctx.config.sync;
  return {
    client: await ctx.service(),
    warehouse: ctx.warehouse,
    now: ctx.now(),
    runId: ctx.runId,
    settings: { lookback: sync.lookback, initialHistory: sync.initial_history, horizon: sync.horizon, vintageStep: sync.vintage_step },
    ...(from !== undefined && to !== undefined ? { backfill: { from, to } } : {}),
    requestsPerSite: REQUESTS_PER_SITE,
    log: ctx.log,
  };
}

/** The sites asked for by id or name (all when none are named); an unknown one is a usage error. */
export function selectSites(sites: SiteResponse[], wanted: string[] | undefined): SiteResponse[] {
  if (!wanted || wanted.length === 0) return sites;
  const unknown = wanted.filter((w) => !sites.some((s) => s.site_id === w || s.name === w));
  if (unknown.length > 0) throw new JobUsageError(`unknown site: ${unknown.join(', ')} (not among the account's ${sites.length} sites)`);
  return sites.filter((s) => wanted.includes(s.site_id) || wanted.includes(s.name));
}

async function readAllMarks(ctx: JobContext, resources: Resource[]): Promise<Marks> {
  const marks: Marks = {};
  for (const resource of resources) {
    if (resource === 'forecasts' || resource === 'outputs' || resource === 'actuals') {
      marks[resource] = await readMarks(ctx.warehouse, resource);
    }
  }
  return marks;
}

function siteTask(env: SyncEnv, site: SiteResponse): SiteTask {
  let models: Promise<SiteModel[]> | undefined;
  return {
    siteId: site.site_id,
    name: site.name,
    models: () => (models ??= fetchModels(env.client, site.site_id)),
  };
}

function syncResource(env: SyncEnv, resource: Resource, site: SiteResponse, task: SiteTask, mark: SyncMark | null): Promise<RowCounts> {
  switch (resource) {
    case 'sites':
      return syncSite(env, site);
    case 'models':
      return syncModels(env, task);
    case 'forecasts':
      return syncForecasts(env, task, mark);
    case 'outputs':
      return syncOutputs(env, task, mark);
    case 'actuals':
      return syncActuals(env, task, mark);
  }
}

function addRows(total: RowCounts, part: RowCounts): void {
  for (const [table, count] of Object.entries(part)) total[table] = (total[table] ?? 0) + count;
}

function summaryLines(siteCount: number, resources: Resource[], rows: RowCounts, failures: Failure[]): string[] {
  const failedSites = new Set(failures.map((f) => f.siteId).filter(Boolean));
  const tables = Object.entries(rows).filter(([, n]) => n > 0).sort(([a], [b]) => a.localeCompare(b));
  return [
    `synced ${resources.join(', ')} of ${siteCount} site(s); ${failedSites.size} with failures`,
    tables.length === 0 ? 'rows written: none (nothing new)' : `rows written: ${tables.map(([t, n]) => `${t} ${n}`).join(', ')}`,
    ...failures.map((f) => `failed: ${[f.siteId, f.resource].filter(Boolean).join(' ') || 'run'}: ${f.reason}`),
  ];
}
