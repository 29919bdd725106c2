// What every resource module of the sync gets and gives: the run's environment in, a fetch
// phase (the service) and a load phase (the warehouse) out, so a run can say where time goes.
import type { Listing, ServiceClient } from '../api/client.js';
import type { ForecastUpdateList } from '../api/schemas.js';
import type { Logger } from '../log.js';
import type { Failure } from '../outcome.js';
import type { LoadOptions, SyncStateUpdate } from '../warehouse/loader.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { KnownModels } from './models.js';
import type { SiteModel } from './normalize.js';
import {
  DEFERRED,
  type PendingSource,
  type PendingVintage,
  type ReadVintages,
  type VintageResource,
} from './vintages.js';
import type { Backfill, SyncMark, WindowSettings } from './windows.js';

/** Rows inserted or changed, per table. */
export type RowCounts = Record<string, number>;

export interface SyncEnv {
  client: ServiceClient;
  /** Loads on it are serialised by the warehouse itself, one transaction per site and resource. */
  warehouse: Warehouse;
  /** The run's clock, read once at its start, so every site plans the same windows. */
  now: number;
  runId: string;
  settings: WindowSettings;
  backfill?: Backfill;
  /** Requests of one resource of one site that may run at once. */
  requestsPerSite: number;
  log: Logger;
  /**
   * What the newest pass knows of a site's pending vintages of a resource, for the items it reads
   * (the older pass gets its piece): the sync asks vintage_reads, the plan its own lists.
   */
  pending(siteId: string, resource: VintageResource): PendingSource;
  /** Reads of a failed vintage after its first before it is given up (config sync.vintage_retries). */
  vintageRetries: number;
  /** The run's: once aborted, a site in flight starts no more vintage reads and loads what it read. */
  signal: AbortSignal;
}

/** A model as the outputs step reads it: its id and its cron schedule, when it has a readable one. */
export interface ModelRef {
  id: string;
  cron: string | undefined;
}

/** One site being synced; its models are listed once and shared by the models and outputs steps. */
export interface SiteTask {
  siteId: string;
  /** The site's models that parsed; the malformed ones in `rejected`. `known`: what the warehouse holds of them. */
  modelListing(known?: KnownModels): Promise<Listing<SiteModel>>;
  /** What the outputs step reads of each model (the same listing, fetched once). */
  models(): Promise<ModelRef[]>;
  /** The issue times of the site's forecast (Get Site Forecast Updates), read once per run and shared by forecasts and outputs. */
  updates(): Promise<ForecastUpdateList>;
  /** Drops the issue times read once the first pass is done: the second reads the models only. */
  release(): void;
}

/**
 * The two passes of a run (docs/sync.md, "Vintages one by one"): `newest` brings every site's
 * actuals and the newest vintage of its forecast and of each model, `older` the vintages the first
 * pass deferred and the pending ones. A run cut short at any point leaves every site its latest data.
 */
export const PASSES = ['newest', 'older'] as const;
export type Pass = (typeof PASSES)[number];

/** What a fetch read, and the sync state to record with it (null: leave it, as a backfill does). */
export interface Fetched<T> {
  data: T;
  /**
   * Rows in `data` to load: what the site holds in memory until they are (src/sync/budget.ts).
   * 0: nothing to load (none read, or what was read is stored already): only the sync state is
   * written, with the other quiet ones once the run's series are done.
   */
  rows: number;
  mark: SyncMark | null;
  /** Items that failed alone (a malformed vintage): recorded as failures, the rest is loaded. */
  rejected?: Failure[];
  /** Documented variants filled in, as `resource.field`, once per item read. */
  defaulted?: string[];
  /**
   * Vintage resources: the items deferred to the backfill pass, the pending items read and the
   * items whose read failed, all recorded in vintage_reads by the load, in its transaction (a
   * load of no rows when nothing else).
   */
  vintages?: ReadVintages;
}

/**
 * Rows a vintage key counts for in sync.rows_in_memory: on its way to vintage_reads a key is
 * staged and inserted with five strings, where a row of a series is a few numbers (the
 * measurements: docs/benchmarks.md, session 39).
 */
const ROWS_PER_VINTAGE_KEY = 3;

/**
 * What a fetch holds in memory until its load is committed, in rows (sync.rows_in_memory): its
 * rows, and the vintages its load records. A first sync of months defers thousands of vintages a
 * site, more than the rows it reads.
 */
export function heldBy(fetched: Fetched<unknown> | null): number {
  if (fetched === null) return 0;
  const { deferred = [], stored = [], attempted = [] } = fetched.vintages ?? {};
  return fetched.rows + ROWS_PER_VINTAGE_KEY * (deferred.length + stored.length + attempted.length);
}

/** One pulled resource: read a site's data from the service, then write it in one transaction. */
export interface ResourceSync<T> {
  /**
   * Actuals have one read and take no part in the `older` pass, which reads `piece`: a run of the
   * site's pending vintages of the resource (olderPieces, src/sync/run.ts).
   */
  fetch(
    env: SyncEnv,
    site: SiteTask,
    mark: SyncMark | null,
    pass: Pass,
    piece?: readonly PendingVintage[],
  ): Promise<Fetched<T>>;
  load(env: SyncEnv, site: SiteTask, fetched: Fetched<T>): Promise<RowCounts>;
}

/** The null entries of the site's Forecast Updates that `resource` skipped, as `defaulted` fields. */
export function skippedUpdates(resource: string, updates: ForecastUpdateList): string[] {
  return new Array<string>(updates.nulls).fill(`${resource}.updates[]`);
}

/** The loader's options: the run's clock, and the new sync state written with the data. */
export function loadOptions(env: SyncEnv, resource: string, mark: SyncMark | null): LoadOptions {
  return { now: env.now, ...(mark ? { syncState: syncStateOf(env, resource, mark) } : {}) };
}

/**
 * A vintage resource's load: the site's vintages read this run, stored by `load` with the
 * resource's sync state, the vintages deferred to the backfill pass recorded as pending and the
 * pending ones read forgotten, all in one transaction: the sync state never moves past a vintage
 * neither stored nor pending.
 */
export function loadVintages<T>(
  env: SyncEnv,
  resource: VintageResource,
  fetched: Fetched<T[]>,
  load: (values: T[], options: LoadOptions) => Promise<RowCounts>,
): Promise<RowCounts> {
  const { deferred = [], stored = [], attempted = [] } = fetched.vintages ?? {};
  return load(fetched.data, {
    ...loadOptions(env, resource, fetched.mark),
    vintageReads: { resource, deferred, stored, attempted, reason: DEFERRED, runId: env.runId },
  });
}

/** The sync state of `resource` (a sync_state key) to record for `mark`. */
export function syncStateOf(env: SyncEnv, resource: string, mark: SyncMark): SyncStateUpdate {
  return { resource, syncedTo: mark.syncedTo, lastAsOf: mark.lastAsOf, runId: env.runId, digest: mark.digest ?? null };
}

/**
 * Whether `next` moves `stored` (the mark read at the run's start) forward by the rule of
 * syncStateAdvanceSql (src/warehouse/merge.ts): a later end, a newer vintage, another digest. The
 * stored state only moves forward during a run, so a quiet state that does not advance the mark
 * read at its start writes nothing, and is not sent.
 */
export function advancesMark(next: SyncMark, stored: SyncMark | null): boolean {
  if (stored === null) return true;
  const newerVintage = next.lastAsOf !== null && (stored.lastAsOf === null || next.lastAsOf > stored.lastAsOf);
  return next.syncedTo > stored.syncedTo || newerVintage || (next.digest ?? null) !== (stored.digest ?? null);
}
