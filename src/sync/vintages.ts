// Vintages one by one (docs/sync.md, "Vintages one by one"): each site forecast as_of and each
// model-output vintage is an item of its own. A run reads every site's newest items first, then
// the older ones (deferred: kept pending in vintage_reads, with no attempt counted, until read),
// each site's newest first; one that still fails
// after the client's retries (an answer the service keeps refusing, a malformed one, a vintage
// other than the one asked for) is recorded with its issue time and kept in vintage_reads
// (018_vintage_reads.sql) as pending, read again on the next nights up to sync.vintage_retries
// more times, then given up. The others load, and the sync state moves past it, so one bad
// vintage never holds its site back. Errors that say nothing about the item (the key refused,
// quota, the service unreachable, an abort) still fail the whole resource, as before.
import pLimit from 'p-limit';
import { isServiceError } from '../api/errors.js';
import type { Failure } from '../outcome.js';
import { formatExactInstant } from '../time.js';
import { repeatedTimes } from './normalize.js';
import { sqlList } from '../warehouse/sql.js';
import type { AttemptedRead } from '../warehouse/vintage-reads.js';
import type { Warehouse } from '../warehouse/warehouse.js';

export type VintageResource = 'forecasts' | 'outputs';

/** A vintage to read: the site forecast's (modelId '') or a model's, named by its issue time (outputs: the cron fire). */
export interface VintageItem {
  modelId: string;
  issue: number;
}

/** A vintage whose earlier reads failed `attempts` times. */
export interface PendingVintage extends VintageItem {
  attempts: number;
}

/** An answer that is not the vintage asked for: a failure of that item, never stored under the wrong key. */
export class WrongVintage extends Error {}

/**
 * How an item ended: read (its value), failed (why), awaited (its vintage is not published yet:
 * outputs), or skipped (the run was stopped before it was read: kept pending, no attempt counted).
 */
export type ItemResult<T> =
  | { item: VintageItem; value: T }
  | { item: VintageItem; failed: string; fieldPath?: string }
  | { item: VintageItem; awaited: string }
  | { item: VintageItem; skipped: string };

/** Why a deferred vintage is pending, as `efsync status` shows it. */
export const DEFERRED = 'not read yet: older than the newest, read after every site has its newest';

/**
 * The pending items the older pass of run `$1` reads: those deferred (by it or an earlier run) and
 * those an earlier run left (failed, awaited, not reached); not those its newest pass read and
 * left pending (an item is read once a run).
 */
const OLDER_PASS = "status = 'pending' AND (run_id <> $1 OR reason = $2)";

/** A site's resource whose pending items the older pass reads. */
export interface PendingKey {
  siteId: string;
  resource: VintageResource;
}

/** How many pending items of a site's resource the older pass reads. */
export interface PendingCount extends PendingKey {
  items: number;
}

/**
 * Per site (in site_id order) and resource, how many pending items the older pass of `runId`
 * reads. The run holds every site's counts through its older pass: each names its resource by
 * the string of `resources`, not a copy of its own.
 */
export async function pendingCounts(
  warehouse: Warehouse,
  resources: readonly VintageResource[],
  runId: string,
): Promise<PendingCount[]> {
  if (resources.length === 0) return [];
  const rows = await warehouse.all<{ site_id: string; resource: VintageResource; items: bigint }>(
    `SELECT site_id, resource, count(*) AS items FROM vintage_reads
      WHERE ${OLDER_PASS} AND resource IN (${sqlList(resources)})
      GROUP BY site_id, resource ORDER BY site_id, resource`,
    [runId, DEFERRED],
  );
  const named = new Map(resources.map((resource) => [resource, resource]));
  return rows.map((row) => ({ siteId: row.site_id, resource: named.get(row.resource)!, items: Number(row.items) }));
}

/**
 * A site's pending items of one resource, newest first, held in typed arrays (16 bytes an item)
 * while its pieces are read: only the sites in flight hold a list, as every site's lists held as
 * objects grew the heap with sites × history (#54, docs/benchmarks.md, session 22).
 */
export class PendingList {
  private constructor(
    private readonly models: string[],
    private readonly model: Uint32Array,
    private readonly issue: Float64Array,
    private readonly attempts: Uint32Array,
  ) {}

  /** The pending items of `siteId`'s `resource` that the older pass of `runId` reads. */
  static async read(
    warehouse: Warehouse,
    siteId: string,
    resource: VintageResource,
    runId: string,
  ): Promise<PendingList> {
    const [list] = await PendingList.readMany(warehouse, [{ siteId, resource }], runId);
    return list;
  }

  /**
   * The lists of several sites' resources, in the order of `keys`, in one statement: a statement
   * waits for the batch the loader is merging, so one per site held the older pass behind the
   * loader (docs/benchmarks.md, session 23). Each row is read as numbers and its model id, not as
   * an object; the caller bounds the items a call reads (pendingCounts says how many).
   */
  static async readMany(warehouse: Warehouse, keys: readonly PendingKey[], runId: string): Promise<PendingList[]> {
    if (keys.length === 0) return [];
    const sites = [...new Set(keys.map((key) => key.siteId))];
    const resources = [...new Set(keys.map((key) => key.resource))];
    const [siteNo, resourceNo, modelIds, issues, attempts] = await warehouse.columns<
      [number, number, string, number, number]
    >(
      `SELECT list_position([${sqlList(sites)}], site_id)::INTEGER AS site_no,
              list_position([${sqlList(resources)}], resource)::INTEGER AS resource_no,
              model_id, epoch_us(issue)::DOUBLE / 1000 AS issue, attempts::INTEGER AS attempts
         FROM vintage_reads
        WHERE ${OLDER_PASS} AND site_id IN (${sqlList(sites)}) AND resource IN (${sqlList(resources)})
        ORDER BY site_no, resource_no, issue DESC, model_id`,
      [runId, DEFERRED],
    );
    // Positions are 1-based, as list_position's.
    const listNo = (site: number, resource: number) => (site - 1) * resources.length + (resource - 1);
    const lists = new Map<number, PendingList>();
    for (let start = 0, end = 0; start < issues.length; start = end) {
      while (end < issues.length && siteNo[end] === siteNo[start] && resourceNo[end] === resourceNo[start]) end++;
      lists.set(listNo(siteNo[start], resourceNo[start]), PendingList.of(modelIds, issues, attempts, start, end));
    }
    const siteNos = new Map(sites.map((site, i) => [site, i + 1]));
    return keys.map(
      ({ siteId, resource }) =>
        lists.get(listNo(siteNos.get(siteId)!, resources.indexOf(resource) + 1)) ?? PendingList.of([], [], [], 0, 0),
    );
  }

  /** The rows from `start` to `end` (excluded) of the read's columns, as a list. */
  private static of(
    modelIds: readonly string[],
    issues: readonly number[],
    attempts: readonly number[],
    start: number,
    end: number,
  ): PendingList {
    const models: string[] = [];
    const index = new Map<string, number>();
    const list = new PendingList(
      models,
      new Uint32Array(end - start),
      new Float64Array(end - start),
      new Uint32Array(end - start),
    );
    for (let i = start; i < end; i++) {
      let m = index.get(modelIds[i]);
      if (m === undefined) {
        m = models.push(modelIds[i]) - 1;
        index.set(modelIds[i], m);
      }
      list.model[i - start] = m;
      list.issue[i - start] = issues[i];
      list.attempts[i - start] = attempts[i];
    }
    return list;
  }

  get length(): number {
    return this.issue.length;
  }

  /** The items from `start` to `end` (excluded), as objects. */
  slice(start: number, end: number): PendingVintage[] {
    const items: PendingVintage[] = [];
    for (let i = start; i < Math.min(end, this.length); i++)
      items.push({ modelId: this.models[this.model[i]], issue: this.issue[i], attempts: this.attempts[i] });
    return items;
  }
}

/**
 * Reads every item, newest issue first, `concurrency` at once. An item whose read fails for a
 * reason of its own is returned as failed; any other error fails the whole call, and no more
 * items start (the call's answer is that error: their reads would be requests for nothing).
 * Once `signal` is aborted no more items start either, and the ones not read are skipped: a run
 * cut short loads the newest vintages it read, and the next run reads the rest.
 */
export async function readEach<T>(
  items: readonly VintageItem[],
  concurrency: number,
  signal: AbortSignal,
  read: (item: VintageItem) => Promise<ItemResult<T>>,
): Promise<ItemResult<T>[]> {
  if (items.length === 0) return []; // a quiet site: no limiter to build
  const limit = pLimit(concurrency);
  const newestFirst = [...items].sort((a, b) => b.issue - a.issue);
  const skipped = (item: VintageItem) => ({ item, skipped: 'not read: the run stopped first' });
  let failed = false;
  return Promise.all(
    newestFirst.map((item) =>
      limit(async (): Promise<ItemResult<T>> => {
        if (signal.aborted || failed) return skipped(item);
        try {
          return await read(item);
        } catch (error) {
          if (signal.aborted) return skipped(item);
          if (!failsAlone(error)) {
            failed = true;
            throw error;
          }
          const fieldPath = isServiceError(error) ? error.fieldPath : undefined;
          return { item, failed: (error as Error).message, ...(fieldPath !== undefined ? { fieldPath } : {}) };
        }
      }),
    ),
  );
}

/**
 * Errors that are the item's own: the service refuses this read (4xx but the key's 401/403 and
 * the quota's 429; a 500 that persisted through the client's retries), a malformed answer, or the
 * wrong vintage. Timeouts, connection trouble, 502-504 and aborts are the service's or the run's.
 */
function failsAlone(error: unknown): boolean {
  if (error instanceof WrongVintage) return true;
  if (!isServiceError(error)) return false;
  if (error.kind === 'malformed') return true;
  const status = error.status ?? 0;
  return (
    error.kind === 'http' && ((status >= 400 && status < 500 && ![401, 403, 429].includes(status)) || status === 500)
  );
}

/**
 * A site's pending items once a load has recorded its vintages, as vintage_reads then holds them:
 * the deferred ones join with no attempt counted, the stored ones leave, each once. Each joins as
 * an object literal, not a spread copy: V8 gives every spread copy of an item a hidden class of its own.
 */
export function pendingAfter(
  pending: readonly PendingVintage[],
  vintages: { deferred: readonly VintageItem[]; stored: readonly VintageItem[] } | undefined,
): PendingVintage[] {
  if (!vintages) return [...pending];
  const gone = new Set(vintages.stored.map(itemKey));
  const kept = pending.filter((item) => !gone.has(itemKey(item)));
  const keys = new Set(kept.map(itemKey));
  return [
    ...kept,
    ...vintages.deferred
      .filter((item) => !keys.has(itemKey(item)))
      .map((item) => ({ modelId: item.modelId, issue: item.issue, attempts: 0 })),
  ];
}

/**
 * The first pass of a site's resource: of each model (the site forecast: one), its newest item,
 * and the one before when the newest is not published yet (awaited), so that a run cut short
 * leaves the newest vintage published; every other item is deferred to the backfill pass.
 */
export async function readNewest<T>(
  items: readonly VintageItem[],
  concurrency: number,
  signal: AbortSignal,
  read: (item: VintageItem) => Promise<ItemResult<T>>,
): Promise<{ results: ItemResult<T>[]; deferred: VintageItem[] }> {
  const byModel = new Map<string, VintageItem[]>();
  for (const item of [...items].sort((a, b) => b.issue - a.issue)) {
    const model = byModel.get(item.modelId);
    if (model) model.push(item);
    else byModel.set(item.modelId, [item]);
  }
  const newest = [...byModel.values()].map((model) => model[0]);
  const results = await readEach(newest, concurrency, signal, read);
  const unpublished = results.filter((result) => !signal.aborted && ('awaited' in result || 'skipped' in result));
  const before = unpublished.flatMap((result) => byModel.get(result.item.modelId)?.slice(1, 2) ?? []);
  results.push(...(await readEach(before, concurrency, signal, read)));
  const taken = new Set(results.map((result) => itemKey(result.item)));
  return { results, deferred: items.filter((item) => !taken.has(itemKey(item))) };
}

function itemKey(item: VintageItem): string {
  return `${item.modelId}@${Math.round(item.issue * 1000)}`;
}

/** What a site's vintage reads leave to record, all by the load, in its transaction. */
interface Settlement {
  /** The failures of this run, as run_failures rows. */
  failures: Failure[];
  /** Pending items read successfully: deleted from vintage_reads by the load that stores them. */
  read: VintageItem[];
  /** Items failed, awaited or stopped: their rows of vintage_reads. */
  attempted: AttemptedRead[];
}

/** What recording needs of the run (its SyncEnv). */
export interface SettleContext {
  warehouse: Warehouse;
  runId: string;
  now: number;
  /** Reads after the first failed one before an item is given up (sync.vintage_retries). */
  vintageRetries: number;
}

/** A site's vintage reads settled, in the fields of the fetch's answer (sync/types.ts Fetched). */
export interface SettledReads<T> {
  data: T[];
  /** Rows of the vintages read. */
  rows: number;
  /** The run's failure rows (attemptsOf). */
  rejected: Failure[];
  /** Documented variants filled in, as `resource.field`, once per vintage read. */
  defaulted: string[];
  /** For the load to record (types.ts loadVintages): the items deferred, the pending ones read, and the attempted ones. */
  vintages: ReadVintages;
}

/** What a load records of a site's vintage reads in vintage_reads (src/warehouse/vintage-reads.ts). */
export interface ReadVintages {
  deferred: VintageItem[];
  stored: VintageItem[];
  attempted: AttemptedRead[];
}

/**
 * What a site's reads know of its pending items: the reads each failed before (undefined: not
 * pending), and whether the items read are forgotten by their load (deleting one that is not
 * pending deletes nothing).
 */
export interface PendingSource {
  attempts(item: VintageItem): Promise<number | undefined>;
  forgetsRead: boolean;
}

/** The older pass: the items of its piece, each pending with its attempts. */
export function pendingPiece(piece: readonly PendingVintage[]): PendingSource {
  const attempts = new Map(piece.map((item) => [itemKey(item), item.attempts]));
  return { attempts: async (item) => attempts.get(itemKey(item)), forgetsRead: true };
}

/**
 * The newest pass of a site that had pending items when the run started: an item's attempts as
 * vintage_reads holds them. The site's list of the resource is read once, when its reads first
 * ask for an item read without rows or not read, in one statement, and held only while its reads
 * settle: a night that finds the newest output of every model not out yet asks for each.
 */
export function pendingRecorded(ctx: SettleContext, siteId: string, resource: VintageResource): PendingSource {
  let recorded: Promise<PendingSource> | undefined;
  return {
    attempts: async (item) => {
      recorded ??= PendingList.read(ctx.warehouse, siteId, resource, ctx.runId).then((list) =>
        pendingPiece(list.slice(0, list.length)),
      );
      return (await recorded).attempts(item);
    },
    forgetsRead: true,
  };
}

/**
 * No pending item: a site with none when the run started, or a backfill (which leaves the pending
 * items to the nightly syncs, and counts its failed reads from none).
 */
export const NOT_PENDING: PendingSource = { attempts: async () => undefined, forgetsRead: false };

/**
 * Settles a site's reads of `resource`: counts an attempt for the failed and awaited items
 * (attemptsOf) and keeps the vintages read (a null value: a model that has produced nothing yet,
 * nothing to store). The load records them all in its transaction: it forgets the pending items
 * read, records the deferred ones, and updates the attempted ones.
 */
export async function settleReads<T extends { valid_time: readonly number[]; defaulted: readonly string[] }>(
  ctx: SettleContext,
  siteId: string,
  resource: VintageResource,
  results: readonly ItemResult<T | null>[],
  pending: PendingSource,
  deferred: VintageItem[],
): Promise<SettledReads<T>> {
  const settlement = await attemptsOf(ctx, siteId, resource, results, pending);
  const values = results.flatMap((result) => ('value' in result && result.value ? [result.value] : []));
  return {
    data: values,
    rows: values.reduce((sum, value) => sum + value.valid_time.length, 0),
    rejected: settlement.failures,
    defaulted: values.flatMap((value) => [
      ...value.defaulted.map((field) => `${resource}.${field}`),
      ...repeatedTimes(resource, value.valid_time),
    ]),
    vintages: { deferred, stored: settlement.read, attempted: settlement.attempted },
  };
}

/**
 * The rows of vintage_reads that a site's reads of a resource leave for its load to write: a
 * failed or awaited item with one more attempt (given up past sync.vintage_retries), a stopped one
 * pending; and the run's failure rows: every failed item, and an awaited one only when it is given
 * up. Written with the data, in one transaction: a crash before it reads the items again.
 */
async function attemptsOf<T extends { valid_time: readonly number[] }>(
  ctx: SettleContext,
  siteId: string,
  resource: VintageResource,
  results: readonly ItemResult<T | null>[],
  pending: PendingSource,
): Promise<Settlement> {
  const failures: Failure[] = [];
  const read: VintageItem[] = [];
  const attempted: AttemptedRead[] = [];
  for (const result of results) {
    if ('value' in result) {
      // Rows read go to a load anyway, which forgets the item (one not pending deletes nothing);
      // a read of no rows (a model with nothing yet) costs a load only when its item was pending.
      const rows = result.value?.valid_time.length ?? 0;
      if (pending.forgetsRead && (rows > 0 || (await pending.attempts(result.item)) !== undefined))
        read.push(result.item);
      continue;
    }
    const before = await pending.attempts(result.item);
    if ('skipped' in result) {
      // A pending item is recorded already, with its attempts: a stopped backfill writes nothing.
      if (before === undefined) attempted.push(attemptOf(result.item, 0, false, result.skipped));
      continue;
    }
    const attempt = (before ?? 0) + 1;
    const givenUp = attempt > ctx.vintageRetries;
    const reason = 'failed' in result ? result.failed : result.awaited;
    attempted.push(attemptOf(result.item, attempt, givenUp, reason));
    if ('awaited' in result && !givenUp) continue;
    failures.push({
      siteId,
      resource,
      item: itemName(result.item, resource),
      ...('fieldPath' in result && result.fieldPath !== undefined ? { fieldPath: result.fieldPath } : {}),
      reason: `${reason} (${givenUp ? `given up after ${attempt} reads` : `read ${attempt} of ${ctx.vintageRetries + 1}; read again next sync`})`,
    });
  }
  return { failures, read, attempted };
}

/** The row of vintage_reads a read leaves: pending (read again later) or given up. */
function attemptOf(key: VintageItem, attempts: number, givenUp: boolean, reason: string): AttemptedRead {
  return {
    key: { modelId: key.modelId, issue: key.issue },
    status: givenUp ? 'given_up' : 'pending',
    attempts,
    reason,
  };
}

/** `as_of 2026-11-18T06:15:03.448761Z`, or `model <id> fire 2026-11-18T06:00:00Z` for an output vintage. */
export function itemName(item: VintageItem, resource: VintageResource): string {
  const at = formatExactInstant(item.issue);
  return resource === 'forecasts' ? `as_of ${at}` : `model ${item.modelId} fire ${at}`;
}
