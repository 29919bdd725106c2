// The commit queue of series loads: GROUP COMMIT. Loads of every kind that arrive while a merge
// runs wait and are merged together in the next transaction, with one sync_state write for all
// of them. A batch holds a site's load of a kind whole (a reader never sees half of it), and if
// it fails, its loads are retried one transaction each so that only the load at fault fails.
// Measured (bench/load.ts): merging 8 sites per transaction costs about half the CPU of one site
// per transaction; 32 about a third; and each COMMIT costs a WAL sync, so kinds share one.
import { faultPoint } from '../fault.js';
import { addRows, nonZero, type RowsWritten } from './rows.js';
import { type LoadOptions, SERIES, type Series, type SeriesKind } from './series.js';
import { freshStagingSql, stage, type StageBlock, type Staged } from './staging.js';
import { stateKey, writeSyncStates } from './sync-state.js';
import { FRESH_VINTAGE_KEYS_SQL, stageVintageReads, writeVintageReads } from './vintage-reads.js';
import { handBackPool, runInHalves } from './executor.js';
import type { Warehouse } from './warehouse.js';

/** Loads of a batch: 64 sites' forecasts, outputs and actuals (its rows: the budget's `rows.commitBatch`). */
export const MAX_BATCH_LOADS = 192;
/**
 * Batches merged between purges of DuckDB's buffer pool (handBackPool): often enough that glibc's
 * heap stays flat over a sync of any number of sites, rarely enough to cost it no time
 * (docs/sync.md, Memory).
 */
const PURGE_EVERY_BATCHES = 25;

interface Job {
  kind: SeriesKind;
  siteId: string;
  rows: number;
  blocks: StageBlock[];
  options: LoadOptions;
  resolve(rows: RowsWritten): void;
  reject(error: unknown): void;
}

/** One queue per warehouse, for every series kind: a batch commits all the kinds that are ready. */
const queues = new WeakMap<Warehouse, LoadQueue>();

/** Loads one site's rows of one series; resolves once they are committed, with the rows written. */
export function loadSeries(
  warehouse: Warehouse,
  kind: SeriesKind,
  siteId: string,
  blocks: StageBlock[],
  options: LoadOptions,
): Promise<RowsWritten> {
  let queue = queues.get(warehouse);
  if (!queue) {
    queue = new LoadQueue(warehouse);
    queues.set(warehouse, queue);
  }
  return queue.submit({ kind, siteId, rows: blocks.reduce((sum, b) => sum + b.rows, 0), blocks, options });
}

class LoadQueue {
  private waiting: Job[] = [];
  private draining = false;
  private merged = 0;

  constructor(private readonly warehouse: Warehouse) {}

  submit(load: Omit<Job, 'resolve' | 'reject'>): Promise<RowsWritten> {
    return new Promise((resolve, reject) => {
      const job: Job = { ...load, resolve, reject };
      // A caller already holding the connection would deadlock waiting for a batch: merge it now.
      if (this.warehouse.holdsConnection()) {
        this.merge([job]).then((results) => resolve(results.get(job)!), reject);
        return;
      }
      this.waiting.push(job);
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.waiting.length > 0) {
        await this.mergeOrSplit(this.take());
        // A purge that fails leaves the next batch to fail and say why.
        if (++this.merged % PURGE_EVERY_BATCHES === 0) await handBackPool(this.warehouse).catch(() => undefined);
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * The next batch: every waiting load in arrival order, of any kind, within the row and load
   * caps, so a batch grows with what is ready. One load per site and kind (a second waits).
   */
  private take(): Job[] {
    const batch: Job[] = [];
    const keys = new Set<string>();
    let rows = 0;
    for (const job of this.waiting) {
      if (batch.length > 0 && (rows + job.rows > this.warehouse.rows.commitBatch || batch.length >= MAX_BATCH_LOADS))
        break;
      const key = `${job.kind}\0${job.siteId}`;
      if (keys.has(key)) continue;
      batch.push(job);
      keys.add(key);
      rows += job.rows;
    }
    this.waiting = this.waiting.filter((job) => !batch.includes(job));
    return batch;
  }

  /**
   * Merges a batch, split by the executor while it runs out of DuckDB's memory: after a
   * checkpoint (which frees the pool of the table data written since the last one) into halves,
   * and a load alone gets one more try. A part that fails otherwise is merged a load at a time,
   * so only the load at fault fails.
   */
  private async mergeOrSplit(batch: Job[]): Promise<void> {
    await runInHalves(batch, (part) => this.mergeAndResolve(part), {
      // A checkpoint that fails (a full disk) leaves the retry to fail and say why.
      handBack: () => this.warehouse.checkpoint().catch(() => undefined),
      warehouse: this.warehouse,
      failed: (part, error) => this.eachAlone(part, error),
    });
  }

  private async mergeAndResolve(batch: readonly Job[]): Promise<void> {
    const results = await this.merge(batch);
    for (const job of batch) job.resolve(results.get(job)!);
  }

  /** A part that failed: a load alone fails with `error`, the loads of a larger part are merged one at a time. */
  private async eachAlone(part: readonly Job[], error: unknown): Promise<void> {
    if (part.length === 1) return part[0].reject(error);
    for (const job of part) {
      try {
        job.resolve((await this.merge([job])).get(job)!);
      } catch (alone) {
        job.reject(alone);
      }
    }
  }

  /**
   * Stages the batch, each kind into its own (fresh) staging table, and merges every kind with
   * every load's sync state and vintage bookkeeping in ONE transaction: one COMMIT, one sync_state
   * write and at most two vintage_reads statements per batch.
   */
  private async merge(batch: readonly Job[]): Promise<Map<Job, RowsWritten>> {
    const { warehouse } = this;
    return warehouse.exclusive(async () => {
      const kinds = [...new Set(batch.map((job) => job.kind))].map((kind) => {
        const jobs = batch.filter((job) => job.kind === kind);
        const sites = jobs
          .filter((job) => job.rows > 0)
          .map((job) => job.siteId)
          .sort();
        return { series: SERIES[kind], jobs, sites };
      });
      const vintageReads = batch.flatMap((job) => {
        const { vintageReads, now = Date.now() } = job.options;
        return vintageReads ? [{ siteId: job.siteId, reads: vintageReads, now }] : [];
      });
      // Every staging table of the batch in one call: each call waits for the event loop and
      // DuckDB's thread, whatever the statement.
      const fresh = kinds.flatMap(({ series }) => freshStagingSql(series));
      if (vintageReads.length > 0) fresh.push(FRESH_VINTAGE_KEYS_SQL);
      await warehouse.run(fresh.join(';\n'));
      const staged = new Map<Series, Staged>();
      for (const { series, jobs, sites } of kinds) {
        const siteNo = (job: Job) => sites.indexOf(job.siteId) + 1;
        const blocks = jobs.flatMap((job) => job.blocks.map((block) => ({ block, siteNo: siteNo(job) })));
        staged.set(series, await stage(warehouse, series, blocks));
      }
      await stageVintageReads(warehouse, vintageReads);
      faultPoint('staging');
      return warehouse.transaction(async () => {
        const results = new Map<Job, RowsWritten>();
        for (const { series, jobs, sites } of kinds) {
          const perSite =
            sites.length > 0 ? await series.merge(warehouse, sites, jobs[0].options, staged.get(series)!) : new Map();
          for (const job of jobs) results.set(job, { ...perSite.get(job.siteId) });
        }
        const marked = batch.flatMap((job) => {
          const { syncState, now = Date.now() } = job.options;
          return syncState ? [{ job, siteId: job.siteId, state: syncState, now }] : [];
        });
        writeVintageReads(warehouse, vintageReads);
        const advanced = await writeSyncStates(warehouse, marked);
        for (const { job, siteId, state } of marked) {
          if (advanced.has(stateKey(siteId, state.resource))) addRows(results.get(job)!, { sync_state: 1 });
        }
        for (const [job, rows] of results) results.set(job, nonZero(rows));
        return results;
      });
    });
  }
}
