// What the next sync will cost the service, before the night (`efsync sync --plan`): the requests
// it will make per resource, and how long they take at the configured rate limit.
//
// One code path with the sync: the plan runs the sync's own site tasks and resource fetches
// (run.ts, forecasts.ts, outputs.ts, actuals.ts, the windows of windows.ts) on the warehouse's
// sync state, with a client that sends the listings (sites, each site's models and forecast
// updates: what the windows are planned from) and counts the data reads without sending them,
// answering each with an empty series. So the plan costs one request for the sites and two per
// site (four on a site whose models are new: the model-type lists), and counts what a run without
// faults sends; retries (429, 5xx) come on top.
import { existsSync } from 'node:fs';
import pLimit from 'p-limit';
import type { ServiceClient } from '../api/client.js';
import type { RateLimit } from '../api/pacing.js';
import { ActualsSeries, ForecastSeries, ModelOutput } from '../api/schemas.js';
import type { Resource } from '../config.js';
import { inShard } from '../lake/shard.js';
import { Warehouse } from '../warehouse/warehouse.js';
import type { KnownModels } from './models.js';
import { REQUESTS_PER_SITE, type SeriesResource, type SyncRequest, selectSites, seriesSteps, siteTask } from './run.js';
import { knownModels, readMarks } from './state.js';
import { PASSES, type SyncEnv } from './types.js';
import { PendingList, type PendingVintage, pendingAfter, pendingPiece, type VintageResource } from './vintages.js';
import type { SyncMark } from './windows.js';
import { HOUR } from '../time.js';

/** What the requests of a run read, in the order a run makes them. */
export const PLAN_ITEMS = ['sites', 'models', 'forecast updates', 'forecasts', 'outputs', 'actuals'] as const;
export type PlanItem = (typeof PLAN_ITEMS)[number];

export interface SyncPlan {
  sites: number;
  resources: Resource[];
  /** Requests the next run makes (without retries), per what they read. */
  requests: Record<PlanItem, number>;
  total: number;
  /** Requests the plan itself sent (the listings). */
  sent: number;
}

/** What a plan needs of the sync's request for the same run: the published file instead of the open warehouse. */
export type PlanRequest = Pick<
  SyncRequest,
  'client' | 'log' | 'now' | 'resources' | 'sites' | 'shard' | 'backfill' | 'sync'
> & {
  /** The published warehouse (read-only): its sync state; a missing file plans a first sync. */
  warehousePath: string;
};

/** Which client methods a run calls, what each reads, and whether the plan sends it. */
const LISTINGS: Record<string, PlanItem> = {
  listSites: 'sites',
  listSiteModels: 'models',
  getSiteForecastUpdates: 'forecast updates',
};
const READS: Record<string, { item: PlanItem; empty: () => unknown }> = {
  getSiteForecast: {
    item: 'forecasts',
    empty: () =>
      ForecastSeries.parse({
        valid_time: [],
        forecast: [],
        capacity: [],
        model_name: [],
        model_version: [],
        update_time: [],
      }),
  },
  getModelOutput: {
    item: 'outputs',
    empty: () =>
      ModelOutput.parse({
        model_id: '',
        model_version: 0,
        model_name: '',
        model_label: '',
        priority: 0,
        as_of: null,
        forecast: [],
        valid_time: [],
      }),
  },
  getSiteActuals: { item: 'actuals', empty: () => ActualsSeries.parse({ valid_time: [], value: [] }) },
};

export async function planSync(req: PlanRequest): Promise<SyncPlan> {
  const requests = Object.fromEntries(PLAN_ITEMS.map((item) => [item, 0])) as Record<PlanItem, number>;
  let sent = 0;
  const client = countingClient(req.client, (item, sends) => {
    requests[item] += 1;
    if (sends) sent += 1;
  });
  const resources = (['sites', 'models', 'forecasts', 'outputs', 'actuals'] as const).filter((r) =>
    req.resources.includes(r),
  );
  const steps = seriesSteps(
    resources.filter((r): r is SeriesResource => r !== 'sites' && r !== 'models'),
    req.sync.actual_types,
  );
  const sites = inShard(selectSites(await client.listSites(), req.sites), req.shard).map((site) => site.site_id);
  const warehouse = existsSync(req.warehousePath)
    ? await Warehouse.open({ path: req.warehousePath, readOnly: true })
    : null;
  try {
    const marks = new Map<string, Map<string, SyncMark>>();
    for (const step of steps) marks.set(step.state, warehouse ? await readMarks(warehouse, step.state) : new Map());
    const known = warehouse ? await knownModels(warehouse, sites) : new Map<string, KnownModels>();
    // The vintages the next run reads again cost requests too: each site's pending ones (of the
    // sites being planned), to which its newest pass adds those it defers.
    const pending = new Map<string, Record<VintageResource, PendingVintage[]>>();
    const env: SyncEnv = {
      client,
      // Before a first sync there is no warehouse: the fetches read none (only loads write it).
      warehouse: warehouse ?? (undefined as unknown as Warehouse),
      now: req.now,
      runId: 'plan',
      settings: { lookback: req.sync.lookback, initialHistory: req.sync.initial_history, horizon: req.sync.horizon },
      ...(req.backfill ? { backfill: req.backfill } : {}),
      requestsPerSite: REQUESTS_PER_SITE,
      log: req.log,
      pending: (siteId, resource) => pendingPiece(pending.get(siteId)?.[resource] ?? []),
      vintageRetries: req.sync.vintage_retries,
      signal: new AbortController().signal,
    };
    const limit = pLimit(req.sync.concurrency);
    const crons = new Map<string, string>();
    await Promise.all(
      sites.map((siteId) =>
        limit(async () => {
          const task = siteTask(env, siteId, crons);
          if (resources.includes('models')) await task.modelListing(known.get(siteId));
          const lists: Record<VintageResource, PendingVintage[]> = { forecasts: [], outputs: [] };
          for (const resource of ['forecasts', 'outputs'] as const)
            if (warehouse && !env.backfill) {
              const list = await PendingList.read(warehouse, siteId, resource, env.runId);
              lists[resource] = list.slice(0, list.length);
            }
          pending.set(siteId, lists);
          for (const pass of PASSES)
            for (const step of steps.filter((step) => pass === 'newest' || step.resource !== 'actuals')) {
              const mark = marks.get(step.state)?.get(siteId) ?? null;
              // the older pass reads every pending vintage, in pieces whose number costs no request
              const piece = step.resource === 'actuals' ? [] : lists[step.resource];
              const fetched = await step.sync.fetch(env, task, mark, pass, piece);
              if (step.resource !== 'actuals') lists[step.resource] = pendingAfter(piece, fetched.vintages);
            }
          pending.delete(siteId);
        }),
      ),
    );
  } finally {
    await warehouse?.close();
  }
  const total = Object.values(requests).reduce((sum, n) => sum + n, 0);
  return { sites: sites.length, resources: [...resources], requests, total, sent };
}

/** The client as the sync sees it: listings sent, data reads counted and answered empty. */
function countingClient(client: ServiceClient, count: (item: PlanItem, sends: boolean) => void): ServiceClient {
  return new Proxy(client, {
    get(target, property, receiver) {
      const name = String(property);
      const listing = LISTINGS[name];
      if (listing) {
        const method = Reflect.get(target, property, receiver) as (...args: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => {
          count(listing, true);
          return method.apply(target, args);
        };
      }
      const read = READS[name];
      if (read)
        return async () => {
          count(read.item, false);
          return read.empty();
        };
      return Reflect.get(target, property, receiver);
    },
  });
}

/** The plan in lines: requests per resource, the total, and its time at the rate limit. */
export function formatPlan(plan: SyncPlan, rateLimit: RateLimit | null): string[] {
  const width = Math.max(...PLAN_ITEMS.map((item) => item.length));
  return [
    `the next sync of ${plan.sites} site(s) (${plan.resources.join(', ')}) makes ${plan.total} requests, without retries:`,
    ...PLAN_ITEMS.filter((item) => plan.requests[item] > 0).map(
      (item) => `  ${item.padEnd(width)}  ${plan.requests[item]}`,
    ),
    rateLimit
      ? `at service.rate_limit (${rateLimit.requests} per ${duration(rateLimit.perMs)}): ${duration(timeAt(plan.total, rateLimit))} at least`
      : `no service.rate_limit: as fast as the service answers; at 100 requests a minute (the quota Rebase documents for its other API) ${duration(timeAt(plan.total, { requests: 100, perMs: 60_000 }))}`,
    `(planning it sent ${plan.sent} requests: the site list, and each site's models and forecast updates)`,
  ];
}

/** The time `total` evenly spaced requests take at `rate`: the first goes at once. */
function timeAt(total: number, rate: RateLimit): number {
  return Math.max(0, total - 1) * (rate.perMs / rate.requests);
}

function duration(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < HOUR) return `${Math.round(ms / 6_000) / 10} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}
