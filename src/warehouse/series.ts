// Series loads (forecasts, model outputs, actuals): columns → DuckDB data chunks → TEMP staging →
// anti-join merge, with GROUP COMMIT: loads of every kind that arrive while a merge runs wait and
// are merged together in the next transaction, with one sync_state write for all of them. A
// batch holds a site's load of a kind whole (a reader never sees half of it), and if it fails,
// its loads are retried one transaction each so that only the load at fault fails. Measured
// (bench/load.ts): merging 8 sites per transaction costs about half the CPU of one site per
// transaction; 32 about a third; and each COMMIT costs a WAL sync, so kinds share one.
import { DuckDBDataChunk, INTEGER, type DuckDBType, type DuckDBValue, type DuckDBVector } from '@duckdb/node-api';
import { faultPoint } from '../fault.js';
import {
  SYNC_STATE_ADVANCE,
  SYNC_STATE_INSERT,
  actualChangesSql,
  applyActualChangesSql,
  POWER_ACTUALS,
  TYPED_ACTUALS,
  type ActualsTarget,
  freshForecastsSql,
  freshOutputsSql,
} from './merge.js';
import { sqlList } from './sql.js';
import { flagPending, markFlagsPending, type QualitySettings } from './flags.js';
import { purgeBufferPool } from './settings.js';
import { isOutOfMemory, type Warehouse } from './warehouse.js';

export interface LoadOptions {
  /** The clock for synced_at, first_seen_at, replaced_at, observed_at; default Date.now(). */
  now?: number;
  /** Written in the same transaction as the data. */
  syncState?: SyncStateUpdate;
  /** Thresholds of the data-quality flags, to compute those of a load of (power) actuals in its transaction; without, they stay pending (flags.ts, flagPending). */
  quality?: QualitySettings;
}

export interface SyncStateUpdate {
  resource: 'forecasts' | 'outputs' | 'actuals' | (string & {});
  /** End of the window synced (valid time, epoch ms). */
  syncedTo: number;
  /** Newest as_of vintage read, for resources read by vintage. */
  lastAsOf?: number | null;
  runId: string;
  /** What the read found, for the next run to compare (actuals); replaces the stored one. */
  digest?: string | null;
}

/** Rows inserted plus rows updated, per table; tables with 0 are left out. */
export type RowsWritten = Record<string, number>;

/** DuckDB's vector size: a data chunk holds at most this many rows. */
const CHUNK_ROWS = 2048;
/** A batch stops growing at this many rows or loads (memory stays bounded by these). */
const MAX_BATCH_ROWS = 500_000;
/** Loads of a batch: 64 sites' forecasts, outputs and actuals. */
const MAX_BATCH_LOADS = 192;
/**
 * Batches merged between purges of DuckDB's buffer pool (purgeBufferPool): with 25, glibc's heap
 * stayed at 22-34 MB over a 10,000-site sync instead of growing to ~70 MB, which took the peak
 * RSS from 313 to 293 MB in the same time (195 s against 200 s; docs/sync.md, Memory).
 */
const PURGE_EVERY_BATCHES = 25;

/**
 * A staged column: instants travel as DOUBLE epoch ms (exact for whole milliseconds, and no BigInt
 * per value in JavaScript) and become TIMESTAMPTZ in the merge SQL.
 */
export interface StageColumn {
  type: DuckDBType;
  /** The values, or one value repeated for every row. */
  values: ArrayLike<string | number | null> | { constant: string | number };
}

/** One block of one site's rows for the staging table, its columns in the table's order after site_no. */
export interface StageBlock {
  rows: number;
  columns: StageColumn[];
  /**
   * What every row of the block shares (constants, in the order of the series' `shared` table):
   * staged once per block and joined back by block_no, instead of repeated on every row.
   */
  shared?: StageColumn[];
}

export type SeriesKind = 'forecasts' | 'outputs' | 'actuals' | 'typed_actuals';

interface Series {
  staging: string;
  /** The staging table's columns; with `shared`, block_no INTEGER follows site_no. */
  definition: string;
  /**
   * The table of what each block's rows share: block_no INTEGER and these columns. `key`: the
   * positions of those that name a vintage, as the merge SQL partitions them; with the site, the
   * key of the rows a block holds (a model listed under two sites has its output under each).
   */
  shared?: { table: string; definition: string; key: readonly number[] };
  /**
   * Merges what is staged for `sites`; rows written per site. `options`: those of the batch's
   * first load; `staged`: what stage found of the staged blocks.
   */
  merge(warehouse: Warehouse, sites: string[], options: LoadOptions, staged: Staged): Promise<Map<string, RowsWritten>>;
}

const SERIES: Record<SeriesKind, Series> = {
  forecasts: {
    // A vintage (model_name, model_version, update_time) is a block, as for outputs below.
    staging: 'stage_forecasts',
    definition: 'site_no INTEGER, block_no INTEGER, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE',
    shared: {
      table: 'stage_forecast_vintages',
      definition: 'model_name VARCHAR, model_version INTEGER, update_time DOUBLE',
      key: [0, 1, 2],
    },
    merge: (warehouse, sites, _options, staged) =>
      insertFresh(warehouse, sites, freshForecastsSql(sqlList(sites), staged.alone), 'forecasts', staged),
  },
  outputs: {
    // A model's vintage is a block: its model_id and model_name once, not on each of its rows
    // (copying the two strings into every row was ~12% of the sync's main thread).
    staging: 'stage_outputs',
    definition: 'site_no INTEGER, block_no INTEGER, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE',
    shared: {
      table: 'stage_output_vintages',
      definition: 'model_id VARCHAR, model_name VARCHAR, model_version INTEGER, as_of DOUBLE',
      key: [0, 3],
    },
    merge: (warehouse, sites, _options, staged) =>
      insertFresh(warehouse, sites, freshOutputsSql(sqlList(sites), staged.alone), 'model_outputs', staged),
  },
  actuals: {
    staging: 'stage_actuals',
    definition: 'site_no INTEGER, valid_time DOUBLE, value DOUBLE, seen_at DOUBLE',
    merge: async (warehouse, sites, options) => {
      const written = await mergeActuals(warehouse, sites, POWER_ACTUALS);
      // The flags of the sites whose actuals changed are pending from the earliest changed valid
      // time on (flags.ts reaches back far enough for runs that began earlier): computed here
      // when the load was given thresholds, else by the sync once after its series.
      if (written.size > 0) {
        await markFlagsPending(warehouse, `temp.${POWER_ACTUALS.changes}`);
        if (options.quality) {
          await flagPending(warehouse, options.quality, { sites: [...written.keys()], now: options.now ?? Date.now() });
        }
      }
      return written;
    },
  },
  typed_actuals: {
    staging: 'stage_typed_actuals',
    definition: 'site_no INTEGER, type VARCHAR, valid_time DOUBLE, value DOUBLE, seen_at DOUBLE',
    merge: (warehouse, sites) => mergeActuals(warehouse, sites, TYPED_ACTUALS),
  },
};

/**
 * A block with its site as the first staging column: the site's 1-based position in the batch's
 * sorted site list (the merge SQL maps it back to the id). An integer per row instead of the
 * 36-character id: writing a string into a data chunk cost ~1.7 s per 6 million rows.
 */
function numbered(block: StageBlock, siteNo: number): StageBlock {
  return { rows: block.rows, columns: [{ type: INTEGER, values: { constant: siteNo } }, ...block.columns] };
}

/** What was staged of a series: blocks 1..alone need no collapsing (see stage); rows per site_no (index 0: site_no 1). */
interface Staged {
  alone: number;
  blocks: number;
  rowsBySite: number[];
}

/**
 * Stages a batch's blocks of one series: with a `shared` table, each block's shared values as one
 * row of it, numbered, and that block_no on each of the block's rows. Returns how many blocks
 * are alone: numbered first, 1..alone, they are the blocks of vintages (shared key, and site)
 * whose valid times (first column) do not repeat within the batch, so none of their rows can
 * repeat a key of the batch and the merge takes them as they are. Collapsing repeated keys
 * (a hash aggregate over every staged row) was about half of a first sync's merge statements;
 * only the other blocks (the same vintage read twice) still go through it.
 */
async function stage(
  warehouse: Warehouse,
  series: Series,
  blocks: { block: StageBlock; siteNo: number }[],
): Promise<Staged> {
  const rowsBySite: number[] = [];
  for (const { block, siteNo } of blocks) {
    if (block.rows > 0) rowsBySite[siteNo - 1] = (rowsBySite[siteNo - 1] ?? 0) + block.rows;
  }
  // Replacing the tables is cheaper than deleting their rows (2 s of a 1,000-site sync).
  await warehouse.run(`CREATE OR REPLACE TEMP TABLE ${series.staging} (${series.definition})`);
  if (!series.shared) {
    await appendBlocks(
      warehouse,
      series.staging,
      blocks.map(({ block, siteNo }) => numbered(block, siteNo)),
    );
    return { alone: 0, blocks: blocks.length, rowsBySite };
  }
  await warehouse.run(
    `CREATE OR REPLACE TEMP TABLE ${series.shared.table} (block_no INTEGER, ${series.shared.definition})`,
  );
  const { alone, filled } = aloneFirst(
    blocks.filter(({ block }) => block.rows > 0),
    series.shared.key,
  );
  const blockNo = (index: number): StageColumn => ({ type: INTEGER, values: { constant: index + 1 } });
  await appendBlocks(
    warehouse,
    series.shared.table,
    filled.map(({ block }, index) => ({ rows: 1, columns: [blockNo(index), ...(block.shared ?? [])] })),
  );
  await appendBlocks(
    warehouse,
    series.staging,
    filled.map(({ block, siteNo }, index) =>
      numbered({ rows: block.rows, columns: [blockNo(index), ...block.columns] }, siteNo),
    ),
  );
  return { alone, blocks: filled.length, rowsBySite };
}

/** The blocks alone (see stage) first, then the others; and how many are alone. */
function aloneFirst(
  blocks: { block: StageBlock; siteNo: number }[],
  key: readonly number[],
): { alone: number; filled: { block: StageBlock; siteNo: number }[] } {
  const keyOf = ({ block, siteNo }: { block: StageBlock; siteNo: number }) =>
    [siteNo, ...key.map((index) => constantOf(block.shared?.[index]))].join('\0');
  const groups = new Map<string, StageBlock[]>();
  for (const entry of blocks) {
    const group = groups.get(keyOf(entry));
    if (group) group.push(entry.block);
    else groups.set(keyOf(entry), [entry.block]);
  }
  const aloneGroups = new Set([...groups].filter(([, group]) => distinctTimes(group)).map(([name]) => name));
  const first = blocks.filter((entry) => aloneGroups.has(keyOf(entry)));
  return { alone: first.length, filled: [...first, ...blocks.filter((entry) => !aloneGroups.has(keyOf(entry)))] };
}

/**
 * Whether no valid time (first column) repeats within the blocks of one vintage: each block's
 * rise strictly, and those of several blocks (a vintage some reads returned in part) differ.
 */
function distinctTimes(group: readonly StageBlock[]): boolean {
  if (!group.every((block) => rising(block.columns[0]))) return false;
  if (group.length === 1) return true;
  const times = new Set<unknown>();
  let rows = 0;
  for (const block of group) {
    const values = block.columns[0].values as ArrayLike<unknown>;
    for (let i = 0; i < values.length; i++) times.add(values[i]);
    rows += values.length;
  }
  return times.size === rows;
}

function constantOf(column: StageColumn | undefined): string | number {
  return column && 'constant' in column.values ? column.values.constant : '';
}

/** Whether a column's values rise strictly (so no value repeats); a constant column does not. */
function rising(column: StageColumn | undefined): boolean {
  if (!column || 'constant' in column.values) return false;
  const values = column.values;
  for (let i = 1; i < values.length; i++) {
    if (!((values[i] as number) > (values[i - 1] as number))) return false;
  }
  return true;
}

/**
 * Writes the fresh rows into `table` and counts them per site. When no key repeats in what was
 * staged (every block alone) and `table` holds no row of the batch's sites yet (their first
 * sync), every staged row is fresh: the counts are the staged rows. Else, several sites: the
 * INSERT returns each written row's site as its 1-based position in `sites` (a small integer,
 * cheap to read back) and the counts are taken here; DuckDB cannot aggregate over RETURNING in
 * SQL, and materialising the fresh rows in a TEMP table to count them cost ~6 s of a 1,000-site
 * sync. (Returning and reading back a first sync's millions of positions was ~10% of its merges.)
 */
async function insertFresh(
  warehouse: Warehouse,
  sites: string[],
  freshSql: string,
  table: string,
  staged: Staged,
): Promise<Map<string, RowsWritten>> {
  if (staged.alone === staged.blocks && !(await holdsAny(warehouse, table, sites))) {
    await warehouse.run(`INSERT INTO main.${table} ${freshSql}`);
    return new Map(sites.map((site, index) => [site, { [table]: staged.rowsBySite[index] ?? 0 }]));
  }
  if (sites.length === 1) {
    const inserted = await warehouse.changed(`INSERT INTO main.${table} ${freshSql}`);
    return new Map([[sites[0], { [table]: inserted }]]);
  }
  const counts = new Array<number>(sites.length).fill(0);
  await warehouse.exclusive(async () => {
    const result = await warehouse.connection.run(
      `INSERT INTO main.${table} ${freshSql} RETURNING list_position([${sqlList(sites)}], site_id)::INTEGER`,
    );
    for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) {
      for (const position of chunk.getColumnValues(0)) counts[(position as number) - 1] += 1;
    }
  });
  return new Map(sites.flatMap((site, index) => (counts[index] > 0 ? [[site, { [table]: counts[index] }]] : [])));
}

/** Whether `table` holds any row of `sites` (a lookup DuckDB answers from the row groups' min/max). */
async function holdsAny(warehouse: Warehouse, table: string, sites: string[]): Promise<boolean> {
  const [row] = await warehouse.all<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM main.${table} WHERE site_id IN (${sqlList(sites)})) AS found`,
  );
  return row.found;
}

/** Merges the staged actuals (what changed stays in temp.<target.changes>); rows written per site. */
async function mergeActuals(
  warehouse: Warehouse,
  sites: string[],
  target: ActualsTarget,
): Promise<Map<string, RowsWritten>> {
  const list = sqlList(sites);
  await warehouse.run(actualChangesSql(list, target));
  const counts = await warehouse.all<{ site_id: string; revised: number; inserted: number }>(`
    SELECT site_id, count(*) FILTER (WHERE existed)::INTEGER AS revised, count(*) FILTER (WHERE NOT existed)::INTEGER AS inserted
    FROM temp.${target.changes} GROUP BY site_id`);
  const apply = applyActualChangesSql(list, target);
  if (counts.some((c) => c.revised > 0)) {
    await warehouse.run(apply.revisions);
    await warehouse.run(apply.update);
  }
  if (counts.some((c) => c.inserted > 0)) await warehouse.run(apply.insert);
  return new Map(
    counts.map((c) => [c.site_id, nonZero({ [target.table]: c.revised + c.inserted, [target.revisions]: c.revised })]),
  );
}

// ---------------------------------------------------------------- the queue

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
        if (++this.merged % PURGE_EVERY_BATCHES === 0) await purgeBufferPool(this.warehouse).catch(() => undefined);
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
      if (batch.length > 0 && (rows + job.rows > MAX_BATCH_ROWS || batch.length >= MAX_BATCH_LOADS)) break;
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
   * Merges a batch; when it fails, each load alone, so only the load at fault fails. A batch that
   * ran out of DuckDB's memory goes again in halves after a checkpoint (which frees the pool of
   * the table data written since the last one), and a load alone gets that one more try.
   */
  private async mergeOrSplit(batch: Job[], checkpointed = false): Promise<void> {
    try {
      const results = await this.merge(batch);
      for (const job of batch) job.resolve(results.get(job)!);
    } catch (error) {
      if (isOutOfMemory(error) && !checkpointed) {
        // A checkpoint that fails (a full disk) leaves the retry to fail and say why.
        await this.warehouse.checkpoint().catch(() => undefined);
        if (batch.length === 1) return this.mergeOrSplit(batch, true);
        const half = Math.ceil(batch.length / 2);
        await this.mergeOrSplit(batch.slice(0, half));
        return this.mergeOrSplit(batch.slice(half));
      }
      if (batch.length === 1) return batch[0].reject(error);
      for (const job of batch) {
        try {
          job.resolve((await this.merge([job])).get(job)!);
        } catch (alone) {
          job.reject(alone);
        }
      }
    }
  }

  /**
   * Stages the batch, each kind into its own (fresh) staging table, and merges every kind with
   * every load's sync state in ONE transaction: one COMMIT and one sync_state write per batch.
   */
  private async merge(batch: Job[]): Promise<Map<Job, RowsWritten>> {
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
      const staged = new Map<Series, Staged>();
      for (const { series, jobs, sites } of kinds) {
        const siteNo = (job: Job) => sites.indexOf(job.siteId) + 1;
        const blocks = jobs.flatMap((job) => job.blocks.map((block) => ({ block, siteNo: siteNo(job) })));
        staged.set(series, await stage(warehouse, series, blocks));
      }
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
        const advanced = await writeSyncStates(warehouse, marked);
        for (const { job, siteId, state } of marked) {
          if (advanced.has(stateKey(siteId, state.resource))) addInto(results.get(job)!, { sync_state: 1 });
        }
        for (const [job, rows] of results) results.set(job, nonZero(rows));
        return results;
      });
    });
  }
}

// ---------------------------------------------------------------- staging

/**
 * Appends every block of a batch through ONE appender, packing the rows into full data chunks:
 * an appender and a flush per block (a model output read is a few hundred rows) cost about 1 ms
 * each on the event loop, more than the rows themselves.
 */
async function appendBlocks(warehouse: Warehouse, table: string, blocks: readonly StageBlock[]): Promise<void> {
  const filled = blocks.filter((block) => block.rows > 0);
  const total = filled.reduce((sum, block) => sum + block.rows, 0);
  if (total === 0) return;
  const types = filled[0].columns.map((c) => c.type);
  const appender = await warehouse.connection.createAppender(table, 'main', 'temp');
  try {
    let blockIndex = 0;
    let offset = 0; // within filled[blockIndex]
    for (let done = 0; done < total; done += CHUNK_ROWS) {
      const size = Math.min(CHUNK_ROWS, total - done);
      const chunk = DuckDBDataChunk.create(types, size);
      const vectors = types.map((_, index) => chunk.getColumnVector(index));
      for (let row = 0; row < size; ) {
        const block = filled[blockIndex];
        const count = Math.min(size - row, block.rows - offset);
        block.columns.forEach((column, index) => {
          setItems(vectors[index], row, column, offset, count);
        });
        row += count;
        offset += count;
        if (offset === block.rows) {
          blockIndex += 1;
          offset = 0;
        }
      }
      for (const vector of vectors) vector.flush();
      appender.appendDataChunk(chunk);
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

/** Copies `count` values of `column` from `offset` into `vector` from row `row`. */
function setItems(vector: DuckDBVector, row: number, column: StageColumn, offset: number, count: number): void {
  const values = column.values;
  if ('constant' in values) {
    for (let i = 0; i < count; i++) vector.setItem(row + i, values.constant as DuckDBValue);
  } else {
    for (let i = 0; i < count; i++) vector.setItem(row + i, values[offset + i] as DuckDBValue);
  }
}

// ---------------------------------------------------------------- sync state and counts

function stateKey(siteId: string, resource: string): string {
  return `${siteId}\0${resource}`;
}

/**
 * The sync states of a batch (one per site and resource) in two statements whatever their
 * number: a statement per site cost ~7 ms each, more than merging the site's rows. Returns the
 * stateKeys of those that advanced.
 */
export async function writeSyncStates(
  warehouse: Warehouse,
  entries: { siteId: string; state: SyncStateUpdate; now: number }[],
): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const rows = JSON.stringify(
    entries.map(({ siteId, state, now }) => [
      siteId,
      state.resource,
      state.syncedTo,
      state.lastAsOf ?? null,
      now,
      state.runId,
      state.digest ?? null,
    ]),
  );
  const written = [
    ...(await warehouse.all<{ site_id: string; resource: string }>(SYNC_STATE_ADVANCE, [rows])),
    ...(await warehouse.all<{ site_id: string; resource: string }>(SYNC_STATE_INSERT, [rows])),
  ];
  return new Set(written.map((row) => stateKey(row.site_id, row.resource)));
}

function addInto(total: RowsWritten, part: RowsWritten): void {
  for (const [table, rows] of Object.entries(part)) total[table] = (total[table] ?? 0) + rows;
}

export function nonZero(rows: RowsWritten): RowsWritten {
  return Object.fromEntries(Object.entries(rows).filter(([, n]) => n > 0));
}
