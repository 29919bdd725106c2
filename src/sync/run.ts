// The sync of a run: list the sites; load the site list, then the models of many sites per
// transaction (reference data: small, and a transaction per site cost more than its rows); then
// stream the sites through p-limit, each site's series resources fetched at once and each loaded
// with its sync state, group-committed across the sites in flight, in two passes: every site's
// actuals and newest vintages first, then the older vintages (a run cut short leaves every site
// its latest data; docs/sync.md, "Vintages one by one"). Only the sites in flight hold
// series data, so memory does not grow with the number of sites. A failing site and resource is
// recorded and skipped; every other site still syncs. One malformed item (a listed site, a model,
// a vintage) fails alone and is recorded with its field path; the documented variants the
// client filled in are counted per run (`defaulted`). The run measures where its time goes:
// fetching (service, parsing) and loading (warehouse, with waits for the group commit).
// Two things end a sync early without a failure per site: the client stopping (the service
// refused the API key or has not answered for service.unreachable_after: the client fails every
// call with one ClientStoppedError, which the sync throws: exit 4, one line), and the run's signal (a timeout, SIGTERM: the calls in flight abort, what landed stays
// committed, one line says how many sites did not finish, and the next run continues).
import { performance } from 'node:perf_hooks';
import type { RejectedItem, ServiceClient } from '../api/client.js';
import { pacingSince, type PacingStats } from '../api/pacing.js';
import { ClientStoppedError, ServiceError } from '../api/errors.js';
import type { ForecastUpdateList, SiteResponse } from '../api/schemas.js';
import { RESOURCES, type Config, type Resource } from '../config.js';
import { RequestError } from '../errors.js';
import { inShard, type Shard } from '../lake/shard.js';
import type { Logger } from '../log.js';
import type { Progress } from '../progress.js';
import type { Failure, JobOutcome } from '../outcome.js';
import { flagPending, type QualitySettings } from '../warehouse/flags.js';
import {
  addRows,
  forgetDigests,
  loadModels,
  saveIntervalLabels,
  saveSyncStates,
  type SyncStateUpdate,
} from '../warehouse/loader.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { actualsState, actualsSync, POWER } from './actuals.js';
import { forecastsSync } from './forecasts.js';
import { fetchModels, type KnownModels } from './models.js';
import { modelRows, type SiteModel } from './normalize.js';
import { outputsSync } from './outputs.js';
import {
  NOT_PENDING,
  PendingList,
  type PendingVintage,
  pendingCounts,
  type PendingCount,
  pendingRecorded,
  type VintageResource,
} from './vintages.js';
import { syncSites } from './sites.js';
import { knownModels, readMarks } from './state.js';
import {
  advancesMark,
  heldBy,
  syncStateOf,
  type Fetched,
  type ModelRef,
  type Pass,
  type ResourceSync,
  type RowCounts,
  type SiteTask,
  type SyncEnv,
} from './types.js';
import { RowBudget, type SiteRows } from './budget.js';
import { eachSite, type Landing, type SitePool } from './site-pool.js';
import { MAX_BATCH_LOADS } from '../warehouse/commit-queue.js';
import type { Backfill, SyncMark } from './windows.js';
import { MINUTE } from '../time.js';
import { syncStepSettings, withDuckDBSettings, withFlagsFlushing } from '../warehouse/settings.js';
import { withOldGenerationFloor } from '../resources/heap-floor.js';

/** Requests of one resource of one site in flight at once (model outputs: models × vintages). */
export const REQUESTS_PER_SITE = 4;

/**
 * Sites whose models load in one transaction: the statements cost about the same for 1 site or
 * 250 (~40 ms), and the models of 250 sites are a few MB at most.
 */
const MODEL_SITES_PER_LOAD = 250;

/** Resources streamed per site; `sites` and `models` are reference data, loaded in bulk first. */
export type SeriesResource = Exclude<Resource, 'sites' | 'models'>;

/** One series read per site: a resource (actuals: one step per configured series type), and its sync_state key. */
export interface SeriesStep {
  resource: SeriesResource;
  state: string;
  /** The actuals series type, for failures to name it; null for the other resources. */
  type: string | null;
  sync: ResourceSync<unknown>;
}

/** The steps of the series resources asked for; actuals once per type of sync.actual_types. */
export function seriesSteps(resources: SeriesResource[], actualTypes: readonly string[]): SeriesStep[] {
  return resources.flatMap((resource): SeriesStep[] => {
    if (resource === 'forecasts')
      return [{ resource, state: resource, type: null, sync: forecastsSync as ResourceSync<unknown> }];
    if (resource === 'outputs')
      return [{ resource, state: resource, type: null, sync: outputsSync as ResourceSync<unknown> }];
    return actualTypes.map((type) => ({
      resource,
      state: actualsState(type),
      type,
      sync: actualsSync(type) as ResourceSync<unknown>,
    }));
  });
}

/** Resources read by window: their sync_state says how far each site got. */
const WINDOWED: readonly Resource[] = ['forecasts', 'outputs', 'actuals'];

/** How far each site got, per sync_state key (a step's `state`). */
type Marks = Map<string, Map<string, SyncMark>>;

interface Tally {
  rows: RowCounts;
  failures: Failure[];
  /** Documented variants filled in, per `resource.field`. */
  defaulted: Record<string, number>;
  succeeded: number;
  /**
   * Sites the run's signal stopped, each once: not started, or with requests aborted. A site
   * whose models were aborted is then not started either; counted apart, a stop line said
   * "before 5 of 3 sites".
   */
  stopped: Set<string>;
  /** sync_state rows advanced: bookkeeping, kept out of the data rows written. */
  marksAdvanced: number;
  /**
   * The sync states of the site resources that read nothing to write, written together once the
   * series are done: a transaction per batch of them was most of a no-change resync (one lost
   * to a crash only makes the next run read that window again).
   */
  quiet: { siteId: string; state: SyncStateUpdate }[];
  /** Milliseconds summed over the sites in flight (they overlap): fetching, and loading with its waits. */
  fetchMs: number;
  loadMs: number;
}

/** What a sync needs, and nothing else of the run: the service, the warehouse, the run's identity, clock and signal, and its settings. */
export interface SyncRequest {
  client: ServiceClient;
  warehouse: Warehouse;
  log: Logger;
  progress: Progress;
  /** Aborted: the sites in flight finish or roll back, no new site starts. */
  signal: AbortSignal;
  runId: string;
  /** The run's clock, read once at its start, so every site plans the same windows. */
  now: number;
  resources: readonly Resource[];
  /** Only these sites (ids or names) and this shard; all sites when absent. */
  sites?: string[] | undefined;
  shard?: Shard | undefined;
  /** A historical window instead of the incremental one (see backfillOf). */
  backfill?: Backfill | undefined;
  sync: Config['sync'];
  intervalLabels: Config['service']['interval_label'];
  /** Thresholds of the data-quality flags, computed once after the series for the (power) actuals that changed. */
  quality: QualitySettings;
  /** The V8 old generation is collected no sooner than at this size while the sync runs (heap-floor.ts); none when absent or 0. */
  heapFloorMb?: number | undefined;
}

/** Syncs `req.resources` (in the order of RESOURCES) for `req.sites`, or all. */
export async function syncAll(req: SyncRequest): Promise<JobOutcome> {
  // The memory limit and threads bound DuckDB, the WAL checkpoints rarely and what DuckDB frees
  // goes back to the OS (src/warehouse/settings.ts); steps after the sync get the defaults back.
  const sync = () => withDuckDBSettings(req.warehouse, syncStepSettings(req.sync), () => syncResources(req));
  return req.heapFloorMb ? withOldGenerationFloor(req.heapFloorMb, sync) : sync();
}

async function syncResources(req: SyncRequest): Promise<JobOutcome> {
  const ordered = RESOURCES.filter((r) => req.resources.includes(r));
  const series = ordered.filter((r): r is SeriesResource => r !== 'sites' && r !== 'models');
  // The sites with pending vintages before this run: only their newest reads can be pending.
  const pendingBefore = new Set(
    (await pendingCounts(req.warehouse, vintageResourcesOf(series), req.runId)).map((c) => c.siteId),
  );
  const env = syncEnv(req, pendingBefore);
  await saveIntervalLabels(req.warehouse, req.intervalLabels);
  const steps = seriesSteps(series, req.sync.actual_types);
  const marks: Marks = new Map();
  for (const step of steps) marks.set(step.state, await readMarks(req.warehouse, step.state));
  // A backfill rewrites actuals without moving their sync state: the next run compares with nothing.
  if (env.backfill)
    await forgetDigests(
      req.warehouse,
      steps.filter((step) => step.resource === 'actuals').map((step) => step.state),
    );
  const tally: Tally = {
    rows: {},
    failures: [],
    defaulted: {},
    succeeded: 0,
    stopped: new Set(),
    marksAdvanced: 0,
    quiet: [],
    fetchMs: 0,
    loadMs: 0,
  };
  const started = performance.now();
  // The client may serve a run's other steps too (the nightly chain): this sync's share of its pace.
  const paceAtStart = req.client.pacing();
  const pace = () => pacingSince(paceAtStart, req.client.pacing());
  const sites = await listAndLoadSites(req, env, ordered, tally);
  const crons = new Map<string, string>();
  const tasks = new Map(sites.map((siteId) => [siteId, siteTask(env, siteId, crons)]));
  if (ordered.includes('models')) await syncModels(req, env, [...tasks.values()], tally);
  const { firstPassMs, backlog } = await syncSeries(req, env, {
    sites,
    tasks,
    steps,
    marks,
    tally,
    started,
    pendingBefore,
  });
  tally.marksAdvanced += (await saveSyncStates(req.warehouse, tally.quiet, { now: req.now })).sync_state ?? 0;
  await flagChangedActuals(req, tally);
  const wallMs = performance.now() - started;

  // The client stopped (the key refused, the service gone): nothing more can be read, and one
  // line says so (not one per site).
  const stopped = req.client.stopped();
  if (stopped) throw stopped;
  const unfinished = tally.stopped.size;
  if (unfinished > 0) tally.failures.push({ reason: stopLine(req, unfinished, sites.length, pace()) });
  const status = tally.failures.length === 0 ? 'ok' : tally.succeeded > 0 ? 'partial' : 'failed';
  const timing = {
    wallMs: Math.round(wallMs),
    firstPassMs: Math.round(firstPassMs),
    fetchMs: Math.round(tally.fetchMs),
    loadMs: Math.round(tally.loadMs),
  };
  req.log.info(
    {
      status,
      rows: tally.rows,
      marksAdvanced: tally.marksAdvanced,
      failures: tally.failures.length,
      defaulted: tally.defaulted,
      ...timing,
    },
    'sync ended',
  );
  return {
    status,
    rows: tally.rows,
    failures: tally.failures,
    defaulted: tally.defaulted,
    summary: summaryLines(sites.length, ordered, tally, { wallMs, firstPassMs, backlog }, pace()),
  };
}

/**
 * The data-quality flags of every site whose actuals changed, this run or a run killed before
 * its flags (actual_flags_pending), computed at once after the series: per batch of loads they
 * cost two statements of ~45 ms each, whatever the batch. A failure leaves them pending for the
 * next sync and fails the actuals.
 */
async function flagChangedActuals(req: SyncRequest, tally: Tally): Promise<void> {
  const loadStart = performance.now();
  try {
    await withFlagsFlushing(req.warehouse, () => flagPending(req.warehouse, req.quality, { now: req.now }));
  } catch (error) {
    const reason = `data-quality flags: ${error instanceof Error ? error.message : String(error)}`;
    tally.failures.push({ resource: 'actuals', reason });
    req.log.warn({ resource: 'actuals', err: reason }, 'the flags stay pending for the next sync');
  }
  tally.loadMs += performance.now() - loadStart;
}

/**
 * Lists the sites, records the malformed ones, loads the selected ones (the sites resource) and
 * returns their ids in site_id order: only the ids are kept for the run (a listed site is ~2 KB
 * of heap; 20 MB at 10,000 sites). Every shard lists all sites and syncs only its own; a
 * malformed site is recorded by the shard its id falls in (by the first shard when it has no
 * readable id).
 */
async function listAndLoadSites(
  req: SyncRequest,
  env: SyncEnv,
  resources: readonly Resource[],
  tally: Tally,
): Promise<string[]> {
  const listed = await env.client.listSites();
  const sites = inShard(selectSites(listed, req.sites), req.shard);
  const rejectedHere = listed.rejected.filter((item) =>
    item.id === null ? (req.shard?.index ?? 0) === 0 : inShard([{ site_id: item.id }], req.shard).length > 0,
  );
  rejectItems(req, tally, 'sites', null, rejectedHere);
  countDefaulted(
    tally,
    sites.flatMap((site) => site.defaulted.map((field) => `sites.${field}`)),
  );
  req.log.info({ sites: sites.length, resources, backfill: env.backfill }, 'sync started');
  if (resources.includes('sites')) await syncSiteList(req, env, sites, tally);
  return sites.map((site) => site.site_id);
}

/** The sites resource: every selected site as listed, in one load. */
async function syncSiteList(req: SyncRequest, env: SyncEnv, sites: SiteResponse[], tally: Tally): Promise<void> {
  try {
    const loadStart = performance.now();
    const rows = await syncSites(env, sites);
    tally.loadMs += performance.now() - loadStart;
    addRows(tally.rows, rows);
    tally.succeeded += 1;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    tally.failures.push({ resource: 'sites', reason });
    req.log.warn(
      { resource: 'sites', err: reason },
      'loading the site list failed; going on with the per-site resources',
    );
  }
}

/**
 * The models of every site, MODEL_SITES_PER_LOAD sites per transaction, each batch loaded while
 * the next is fetched. A site's listing is one request of a few KB (three for a site with a model
 * not classified yet), so a batch's requests go at once and the client's pacer bounds them
 * (service.connections, rate_limit, a quota): through the sites' `limit` only one request per
 * site would be in flight, far fewer than the client allows. They stay with each site's task for
 * its outputs. A site whose models fail to fetch fails alone; a load that fails is retried site by
 * site, so only the faulty site fails.
 */
async function syncModels(req: SyncRequest, env: SyncEnv, tasks: SiteTask[], tally: Tally): Promise<void> {
  const batches: SiteTask[][] = [];
  for (let start = 0; start < tasks.length; start += MODEL_SITES_PER_LOAD)
    batches.push(tasks.slice(start, start + MODEL_SITES_PER_LOAD));
  let loading: Promise<void> = Promise.resolve();
  // Read before the previous batch's load takes the connection, so that the fetch overlaps it.
  let known = batches.length > 0 ? await knownModels(req.warehouse, siteIds(batches[0])) : new Map();
  for (let index = 0; index < batches.length && !req.signal.aborted; index++) {
    const fetched = await fetchModelBatch(req, batches[index], known, tally);
    await loading;
    if (index + 1 < batches.length) known = await knownModels(req.warehouse, siteIds(batches[index + 1]));
    loading = timedLoad(tally, () => loadModelBatch(req, env, fetched, tally));
  }
  await loading;
}

const siteIds = (tasks: readonly SiteTask[]) => tasks.map((task) => task.siteId);

/** A batch's model listings, fetched at once; a site whose listing fails is recorded and left out. */
async function fetchModelBatch(
  req: SyncRequest,
  batch: SiteTask[],
  known: Map<string, KnownModels>,
  tally: Tally,
): Promise<{ siteId: string; models: SiteModel[] }[]> {
  const fetchStart = performance.now();
  const fetched = await Promise.all(
    batch.map(async (task) => {
      try {
        const listing = await task.modelListing(known.get(task.siteId));
        rejectItems(req, tally, 'models', task.siteId, listing.rejected);
        countDefaulted(
          tally,
          listing.flatMap((model) => model.defaulted.map((field) => `models.${field}`)),
        );
        return { siteId: task.siteId, models: [...listing] };
      } catch (error) {
        failSite(req, tally, task.siteId, 'models', error);
        return null;
      }
    }),
  );
  tally.fetchMs += performance.now() - fetchStart;
  return fetched.filter((site) => site !== null);
}

async function timedLoad(tally: Tally, load: () => Promise<void>): Promise<void> {
  const loadStart = performance.now();
  await load();
  tally.loadMs += performance.now() - loadStart;
}

async function loadModelBatch(
  req: SyncRequest,
  env: SyncEnv,
  sites: { siteId: string; models: SiteModel[] }[],
  tally: Tally,
): Promise<void> {
  try {
    const rows = sites.flatMap(({ siteId, models }) => models.map((model) => modelRows(siteId, model)));
    addRows(tally.rows, await loadModels(env.warehouse, rows, { now: env.now }));
    tally.succeeded += sites.length;
  } catch (error) {
    if (sites.length === 1) return failSite(req, tally, sites[0].siteId, 'models', error);
    for (const site of sites) await loadModelBatch(req, env, [site], tally);
  }
}

/**
 * The series of every site in two passes: the first loads each site's actuals and newest vintages
 * and defers the older ones, the second reads them (and the pending ones of earlier runs), so a
 * run cut short leaves every site its latest data. The second reads a site's pending vintages
 * from vintage_reads when its turn comes, a piece at a time (olderPieces), each loaded before its
 * rows are counted free: what the run holds grows neither with the sites' history nor, beyond the
 * sites in flight, with their number. Returns when the first pass ended (ms since `started`) and
 * how many sites the second read.
 */
async function syncSeries(
  req: SyncRequest,
  env: SyncEnv,
  run: {
    sites: string[];
    tasks: Map<string, SiteTask>;
    steps: SeriesStep[];
    marks: Marks;
    tally: Tally;
    started: number;
    /** The sites with pending vintages when the run started. */
    pendingBefore: ReadonlySet<string>;
  },
): Promise<{ firstPassMs: number; backlog: number }> {
  const { sites, tasks, steps, marks, tally, pendingBefore } = run;
  // None in a backfill: it reads its window in the first pass.
  const older = env.backfill ? [] : steps.filter((step) => step.resource !== 'actuals');
  const resources = older.map((step) => step.resource as VintageResource);
  req.progress.start(sites.length, 'sync');
  await eachSite(sitePool(req, tally, steps.length), sites, async (siteId, held) => {
    const task = tasks.get(siteId)!;
    const { landed } = await syncOneSite(req, env, task, steps, marks, tally, held, 'newest');
    // What a site holds goes with it once it is done; the second pass reads its models only.
    return {
      landed: landed.then((deferred) => {
        if (resources.length > 0 && (deferred || pendingBefore.has(siteId))) task.release();
        else tasks.delete(siteId);
      }),
    };
  });
  req.progress.stop();
  const firstPassMs = performance.now() - run.started;
  // Each count names its site by its task's id string, held by the run anyway, not a copy of its own.
  const counts = (await pendingCounts(req.warehouse, resources, req.runId)).flatMap((c) => {
    const task = tasks.get(c.siteId);
    return task ? [{ ...c, siteId: task.siteId }] : [];
  });
  const size = olderPieceSize(req.sync, env.settings.horizon);
  req.progress.start(
    counts.reduce((sum, c) => sum + Math.ceil(c.items / size), 0),
    'older vintages',
  );
  await eachSite(
    sitePool(req, tally, 1),
    olderPieces(req, env, counts, size, pendingPerRead(req.sync), tally),
    ({ siteId, resource, items }, held) => {
      const step = older.filter((s) => s.resource === resource);
      return syncOneSite(req, env, tasks.get(siteId)!, step, marks, tally, held, 'older', items);
    },
  );
  tasks.clear();
  req.progress.stop();
  return { firstPassMs, backlog: new Set(counts.map((c) => c.siteId)).size };
}

/**
 * A pass's pool of sites in flight, each fetching and loading `steps` resources
 * (src/sync/site-pool.ts): as many wait for the loader as the loader's batch takes.
 */
function sitePool(req: SyncRequest, tally: Tally, steps: number): SitePool {
  return {
    concurrency: req.sync.concurrency,
    budget: new RowBudget(req.sync.rows_in_memory, steps),
    landingAtMost: Math.max(1, Math.floor(MAX_BATCH_LOADS / steps)),
    signal: req.signal,
    stopped: tally.stopped,
    onLanded: () => req.progress.tick(),
  };
}

/**
 * Pending items the older pass reads from vintage_reads in one statement: a quarter of
 * sync.rows_in_memory, as a read's columns hold a few JS values an item, about what a fetched row
 * costs, and the pass holds two reads at once (one ahead).
 */
function pendingPerRead(sync: SyncRequest['sync']): number {
  return Math.max(1, Math.floor(sync.rows_in_memory / 4));
}

/** A run of a site's pending vintages of one resource that the older pass reads and loads together. */
interface OlderPiece {
  siteId: string;
  resource: VintageResource;
  /** Its vintages: the row budget counts a piece not read yet by their number. */
  items: readonly PendingVintage[];
}

/** Rows a vintage is taken to hold when sizing pieces: its window of the horizon at 15-minute points. */
function rowsPerVintage(horizonMs: number): number {
  return Math.ceil(horizonMs / (15 * MINUTE)) + 1;
}

/**
 * Vintages a piece holds: as many as let the sites in flight (sync.concurrency) hold a piece each
 * within sync.rows_in_memory, at least one. The row budget still admits pieces by the rows they
 * fetched, so a longer window or a finer resolution than assumed only lets fewer pieces run at once.
 */
function olderPieceSize(sync: SyncRequest['sync'], horizonMs: number): number {
  return Math.max(1, Math.floor(sync.rows_in_memory / sync.concurrency / rowsPerVintage(horizonMs)));
}

/**
 * The pending vintages of each site and resource of `counts` (site_id order), newest first, in
 * pieces of `size`, a piece of each list of a group in turn. The lists are read a group of sites
 * at a time, the next group while the pieces of this one are handed out (a read waits for the
 * batch the loader is merging), and held compactly until their last piece is: a group holds at
 * most `perRead` items (one list above it alone), so what the pass holds grows with neither the
 * sites nor their history. Once the run's signal is aborted the sites whose pieces are not all
 * started are counted as stopped.
 */
async function* olderPieces(
  req: SyncRequest,
  env: SyncEnv,
  counts: readonly PendingCount[],
  size: number,
  perRead: number,
  tally: Tally,
): AsyncGenerator<OlderPiece> {
  const stopAt = (index: number) => {
    for (const rest of counts.slice(index)) tally.stopped.add(rest.siteId);
  };
  const groups = inGroups(counts, perRead);
  const read = (group: readonly PendingCount[]) => {
    const lists = PendingList.readMany(env.warehouse, group, env.runId);
    // A read ahead that the run, stopped, never awaits must not fail the process.
    lists.catch(() => undefined);
    return lists;
  };
  let next = groups.length > 0 ? read(groups[0]) : null;
  let index = 0;
  for (const [g, group] of groups.entries()) {
    if (req.signal.aborted) return stopAt(index);
    const lists = await next!;
    next = g + 1 < groups.length ? read(groups[g + 1]) : null;
    // A piece of each list in turn: consecutive pieces are of other sites or resources, so that
    // the loader, which merges one load per site and resource at a time, takes many together.
    let left = group.flatMap((count, i) => (lists[i].length > 0 ? [{ count, list: lists[i], at: 0 }] : []));
    while (left.length > 0) {
      for (const cursor of left) {
        if (req.signal.aborted) {
          for (const { count, list, at } of left) if (at < list.length) tally.stopped.add(count.siteId);
          return stopAt(index + group.length);
        }
        const { siteId, resource } = cursor.count;
        yield { siteId, resource, items: cursor.list.slice(cursor.at, cursor.at + size) };
        cursor.at += size;
      }
      left = left.filter((cursor) => cursor.at < cursor.list.length);
    }
    index += group.length;
  }
}

/** `counts` in consecutive groups of at most `perRead` items, a larger one alone. */
function inGroups(counts: readonly PendingCount[], perRead: number): PendingCount[][] {
  const groups: PendingCount[][] = [];
  let items = perRead;
  for (const count of counts) {
    if (items + count.items > perRead) {
      groups.push([]);
      items = 0;
    }
    groups[groups.length - 1].push(count);
    items += count.items;
  }
  return groups;
}

/**
 * One site's series resources of one pass, fetched at once, each loaded as soon as it is fetched;
 * a failure of one is recorded and the others still run. Returns once every resource is fetched;
 * `landed` says, once every load is committed, whether a load deferred vintages (they join the
 * site's pending ones, for the second pass).
 */
async function syncOneSite(
  req: SyncRequest,
  env: SyncEnv,
  task: SiteTask,
  steps: SeriesStep[],
  marks: Marks,
  tally: Tally,
  held: SiteRows,
  pass: Pass,
  piece?: readonly PendingVintage[],
): Promise<Landing<boolean>> {
  const siteRows: RowCounts = {};
  let deferred = false;
  const flights = steps.map((step) => {
    const mark = marks.get(step.state)?.get(task.siteId) ?? null;
    const fetching = fetchStep(req, env, tally, step, { task, mark, held, pass, piece });
    const landed = fetching.then(async (fetched) => {
      if (!fetched) return;
      try {
        // Not inside warehouse.exclusive: the loader group-commits the loads of concurrent sites.
        const loadStart = performance.now();
        const { sync_state: advanced = 0, ...data } = await step.sync.load(env, task, fetched);
        tally.loadMs += performance.now() - loadStart;
        tally.marksAdvanced += advanced;
        addRows(siteRows, data);
        if ((fetched.vintages?.deferred.length ?? 0) > 0) deferred = true;
        tally.succeeded += 1;
      } catch (error) {
        failStep(req, tally, task.siteId, step, error);
      } finally {
        held.released(heldBy(fetched));
      }
    });
    return { fetching, landed };
  });
  await Promise.all(flights.map((flight) => flight.fetching));
  const landed = Promise.all(flights.map((flight) => flight.landed)).then(() => {
    addRows(tally.rows, siteRows);
    req.log.debug({ siteId: task.siteId, rows: siteRows }, 'site synced');
    return deferred;
  });
  return { landed };
}

/**
 * Fetches one resource of a site; returns what is to be loaded, or null when there is nothing (the
 * run stopped, the fetch failed and is recorded, or nothing new: the site's quiet sync state is
 * kept for the end of the run). Rows it does not return are released from `held`.
 */
async function fetchStep(
  req: SyncRequest,
  env: SyncEnv,
  tally: Tally,
  step: SeriesStep,
  read: { task: SiteTask; mark: SyncMark | null; held: SiteRows; pass: Pass; piece?: readonly PendingVintage[] },
): Promise<Fetched<unknown> | null> {
  const { task, held } = read;
  let fetched: Fetched<unknown> | null = null;
  try {
    if (req.signal.aborted) return null;
    const fetchStart = performance.now();
    try {
      fetched = await step.sync.fetch(env, task, read.mark, read.pass, read.piece);
    } finally {
      held.fetched(heldBy(fetched));
    }
    tally.fetchMs += performance.now() - fetchStart;
    for (const failure of fetched.rejected ?? []) recordFailure(req, tally, failure);
    countDefaulted(tally, fetched.defaulted ?? []);
    if (heldBy(fetched) > 0) return fetched;
    if (fetched.mark && advancesMark(fetched.mark, read.mark)) {
      tally.quiet.push({ siteId: task.siteId, state: syncStateOf(env, step.state, fetched.mark) });
    }
    tally.succeeded += 1;
  } catch (error) {
    failStep(req, tally, task.siteId, step, error);
  }
  held.released(heldBy(fetched));
  return null;
}

/** Records a site's series resource as failed, naming the actuals series when it is not power. */
function failStep(req: SyncRequest, tally: Tally, siteId: string, step: SeriesStep, error: unknown): void {
  const what = step.type !== null && step.type !== POWER ? `${step.type} series` : undefined;
  failSite(req, tally, siteId, step.resource, error, what);
}

/**
 * One line for a sync the run's signal stopped: why, how much did not finish, that what landed
 * is committed, and the quota when the service throttled the run.
 */
function stopLine(req: SyncRequest, unfinished: number, total: number, pacing: PacingStats): string {
  const reason = req.signal.reason instanceof Error ? req.signal.reason.message : 'stopped';
  const { throttled, pausedMs } = pacing;
  const quota =
    throttled > 0
      ? `; the service answered 429 to ${throttled} requests (its quota) and the client paused ${seconds(pausedMs)} for it`
      : '';
  return `stopped (${reason}) before ${unfinished} of ${total} sites finished: what landed is committed and the next run continues from there${quota}`;
}

/**
 * Records a site's resource as failed; `what` names the part of it (another actuals series) when
 * there are several. The client's stop (thrown once by the sync) and a call aborted by the run's
 * signal (counted in the stop line) are no failure of the site.
 */
function failSite(
  req: SyncRequest,
  tally: Tally,
  siteId: string,
  resource: Resource,
  error: unknown,
  what?: string,
): void {
  if (error instanceof ClientStoppedError) return;
  if (req.signal.aborted && error instanceof ServiceError && error.kind === 'aborted') {
    tally.stopped.add(siteId);
    return;
  }
  const message = error instanceof Error ? error.message : String(error);
  const reason = what ? `${what}: ${message}` : message;
  tally.failures.push({ siteId, resource, reason });
  req.log.warn({ siteId, resource, err: reason }, 'site resource failed; going on with the others');
}

/** Malformed items of a list answer (sites, or a site's models): each fails alone. */
function rejectItems(
  req: SyncRequest,
  tally: Tally,
  resource: Resource,
  siteId: string | null,
  rejected: RejectedItem[],
): void {
  for (const item of rejected) {
    const site = resource === 'sites' ? item.id : siteId;
    recordFailure(req, tally, {
      ...(site !== null ? { siteId: site } : {}),
      resource,
      item: `${resource === 'sites' ? 'site' : 'model'} [${item.index}]${item.id !== null && resource !== 'sites' ? ` ${item.id}` : ''}`,
      fieldPath: item.fieldPath,
      reason: `malformed: ${item.fieldPath}: ${item.reason}`,
    });
  }
}

function recordFailure(req: SyncRequest, tally: Tally, failure: Failure): void {
  tally.failures.push(failure);
  req.log.warn(
    {
      siteId: failure.siteId,
      resource: failure.resource,
      item: failure.item,
      fieldPath: failure.fieldPath,
      err: failure.reason,
    },
    'item failed; going on with the others',
  );
}

function countDefaulted(tally: Tally, fields: readonly string[]): void {
  for (const field of fields) tally.defaulted[field] = (tally.defaulted[field] ?? 0) + 1;
}

/** The vintage resources among `series`. */
function vintageResourcesOf(series: readonly SeriesResource[]): VintageResource[] {
  return series.filter((resource): resource is VintageResource => resource !== 'actuals');
}

function syncEnv(req: SyncRequest, pendingBefore: ReadonlySet<string>): SyncEnv {
  const sync = req.sync;
  const env: SyncEnv = {
    client: req.client,
    warehouse: req.warehouse,
    now: req.now,
    runId: req.runId,
    settings: { lookback: sync.lookback, initialHistory: sync.initial_history, horizon: sync.horizon },
    ...(req.backfill ? { backfill: req.backfill } : {}),
    requestsPerSite: REQUESTS_PER_SITE,
    log: req.log,
    pending: (siteId, resource) => (pendingBefore.has(siteId) ? pendingRecorded(env, siteId, resource) : NOT_PENDING),
    vintageRetries: sync.vintage_retries,
    signal: req.signal,
  };
  return env;
}

/** The window of a backfill (`--from` and `--to`, both or neither), checked before anything is read. */
export function backfillOf(options: { from?: number; to?: number }): Backfill | undefined {
  const { from, to } = options;
  if ((from === undefined) !== (to === undefined)) throw new RequestError('--from and --to go together');
  if (from === undefined || to === undefined) return undefined;
  if (from >= to) throw new RequestError('--from must be before --to');
  return { from, to };
}

/**
 * The sites asked for by id or name (all when none are named), in site_id order: rows then land
 * clustered by site, so the loader's merges skip other sites' row groups. An unknown one is a
 * usage error.
 */
export function selectSites(sites: SiteResponse[], wanted: string[] | undefined): SiteResponse[] {
  const unknown = (wanted ?? []).filter((w) => !sites.some((s) => s.site_id === w || s.name === w));
  if (unknown.length > 0)
    throw new RequestError(`unknown site: ${unknown.join(', ')} (not among the account's ${sites.length} sites)`);
  const selected =
    wanted && wanted.length > 0
      ? sites.filter((s) => wanted.includes(s.site_id) || wanted.includes(s.name))
      : [...sites];
  return selected.sort((a, b) => (a.site_id < b.site_id ? -1 : a.site_id > b.site_id ? 1 : 0));
}

/**
 * A site's task. Every site's task lives for the whole run, so what it holds is paid by the
 * thousands: the models step gets the full listing, the task keeps only what the outputs step
 * reads of each model (its id and cron, each schedule one string for the run), and it is a class,
 * as methods on a prototype cost a site nothing where closures cost each site their own
 * (docs/benchmarks.md, session 38).
 */
class SiteWork implements SiteTask {
  private refs: Promise<ModelRef[]> | undefined;
  private issueTimes: Promise<ForecastUpdateList> | undefined;

  constructor(
    private readonly env: SyncEnv,
    readonly siteId: string,
    private readonly crons: Map<string, string>,
  ) {}

  modelListing(known?: KnownModels): ReturnType<SiteTask['modelListing']> {
    const listing = fetchModels(this.env.client, this.siteId, known);
    if (!this.refs) {
      this.refs = listing.then((all) => all.map(({ id, schedule }) => ({ id, cron: this.interned(schedule?.value) })));
      // Only the outputs step reads it; unread (a run without outputs), its failure is the models
      // step's, recorded there, and must not end the process as an unhandled rejection.
      this.refs.catch(() => undefined);
    }
    return listing;
  }

  models(): Promise<ModelRef[]> {
    if (!this.refs) void this.modelListing(); // it sets `refs`, through which a failure reaches the caller
    return this.refs!;
  }

  updates(): Promise<ForecastUpdateList> {
    this.issueTimes ??= this.env.client.getSiteForecastUpdates(this.siteId);
    return this.issueTimes;
  }

  release(): void {
    this.issueTimes = undefined;
  }

  /** One string for each schedule, shared by every model of the run that has it: a fleet has a few. */
  private interned(cron: string | undefined): string | undefined {
    if (cron === undefined) return undefined;
    const known = this.crons.get(cron);
    if (known !== undefined) return known;
    this.crons.set(cron, cron);
    return cron;
  }
}

/** A site's task; `crons`, the run's schedules, shared by the tasks of one run. */
export function siteTask(env: SyncEnv, siteId: string, crons: Map<string, string>): SiteTask {
  return new SiteWork(env, siteId, crons);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** What the service's quota cost the run, when it throttled it. */
function quotaLines(pacing: PacingStats): string[] {
  if (pacing.throttled === 0) return [];
  return [
    `quota: the service answered 429 to ${pacing.throttled} of ${pacing.requests} requests; the client paused ${pacing.pauses} times (${seconds(pacing.pausedMs)}) and ended with ${pacing.inFlightLimit} in flight`,
  ];
}

function summaryLines(
  siteCount: number,
  resources: Resource[],
  tally: Tally,
  time: { wallMs: number; firstPassMs: number; backlog: number },
  pacing: PacingStats,
): string[] {
  const { wallMs, firstPassMs, backlog } = time;
  const failedSites = new Set(tally.failures.map((f) => f.siteId).filter(Boolean));
  const tables = Object.entries(tally.rows)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => a.localeCompare(b));
  return [
    `synced ${resources.join(', ')} of ${siteCount} site(s); ${failedSites.size} with failures`,
    tables.length === 0
      ? 'rows written: none (nothing new)'
      : `rows written: ${tables.map(([t, n]) => `${t} ${n}`).join(', ')}`,
    ...(resources.some((r) => WINDOWED.includes(r))
      ? [`sync state advanced for ${tally.marksAdvanced} site resource(s)`]
      : []),
    `time: ${seconds(wallMs)}; summed over the sites in flight: fetching ${seconds(tally.fetchMs)}, loading ${seconds(tally.loadMs)} (with waits for the warehouse)`,
    `requests: ${pacing.requests} sent to the service, ${(pacing.requests / Math.max(1, siteCount)).toFixed(1)} a site (every attempt, the listings included)`,
    ...(backlog > 0
      ? [
          `newest first: every site's newest vintages and actuals in ${seconds(firstPassMs)}, then the older vintages of ${backlog} site(s)`,
        ]
      : []),
    ...quotaLines(pacing),
    ...(Object.keys(tally.defaulted).length > 0
      ? [
          `documented variants filled in: ${Object.entries(tally.defaulted)
            .map(([field, n]) => `${field} ${n}`)
            .join(', ')}`,
        ]
      : []),
    ...tally.failures.map(
      (f) => `failed: ${[f.siteId, f.resource, f.item].filter(Boolean).join(' ') || 'run'}: ${f.reason}`,
    ),
  ];
}
