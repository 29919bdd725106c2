// Series loads (forecasts, model outputs, actuals): columns → DuckDB data chunks → TEMP staging →
// anti-join merge, with GROUP COMMIT: loads that arrive while a merge runs wait and are merged
// together in the next transaction. A batch holds whole sites only (a reader never sees half a
// site), and if it fails, its sites are retried one transaction each so that only the site at
// fault fails. Measured (bench/load.ts): merging 8 sites per transaction costs about half the CPU
// of one site per transaction; 32 about a third.
import { DuckDBDataChunk, INTEGER, type DuckDBType, type DuckDBValue, type DuckDBVector } from '@duckdb/node-api';
import { faultPoint } from '../fault.js';
import {
  SYNC_STATE_UPSERT,
  syncStateUpsertSql,
  actualChangesSql,
  applyActualChangesSql,
  POWER_ACTUALS,
  TYPED_ACTUALS,
  type ActualsTarget,
  freshForecastsSql,
  freshOutputsSql,
  sqlList,
} from './merge.js';
import { flagActuals, type QualitySettings } from './flags.js';
import type { Warehouse } from './warehouse.js';

export interface LoadOptions {
  /** The clock for synced_at, first_seen_at, replaced_at, observed_at; default Date.now(). */
  now?: number;
  /** Written in the same transaction as the data. */
  syncState?: SyncStateUpdate;
  /** Thresholds of the data-quality flags computed after a load of (power) actuals; loadActuals requires them. */
  quality?: QualitySettings;
}

export interface SyncStateUpdate {
  resource: 'forecasts' | 'outputs' | 'actuals' | (string & {});
  /** End of the window synced (valid time, epoch ms). */
  syncedTo: number;
  /** Newest as_of vintage read, for resources read by vintage. */
  lastAsOf?: number | null;
  runId: string;
}

/** Rows inserted plus rows updated, per table; tables with 0 are left out. */
export type RowsWritten = Record<string, number>;

/** DuckDB's vector size: a data chunk holds at most this many rows. */
const CHUNK_ROWS = 2048;
/** A batch stops growing at this many rows or sites (memory stays bounded by these). */
const MAX_BATCH_ROWS = 250_000;
const MAX_BATCH_SITES = 64;

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
}

export type SeriesKind = 'forecasts' | 'outputs' | 'actuals' | 'typed_actuals';

interface Series {
  staging: string;
  definition: string;
  /** Merges what is staged for `sites`; rows written per site. `options`: those of the batch's first load. */
  merge(warehouse: Warehouse, sites: string[], options: LoadOptions): Promise<Map<string, RowsWritten>>;
}

const SERIES: Record<SeriesKind, Series> = {
  forecasts: {
    staging: 'stage_forecasts',
    definition:
      'site_no INTEGER, model_name VARCHAR, model_version INTEGER, update_time DOUBLE, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE',
    merge: (warehouse, sites) => insertFresh(warehouse, sites, freshForecastsSql(sqlList(sites)), 'forecasts'),
  },
  outputs: {
    staging: 'stage_outputs',
    definition:
      'site_no INTEGER, model_id VARCHAR, model_name VARCHAR, model_version INTEGER, as_of DOUBLE, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE',
    merge: (warehouse, sites) => insertFresh(warehouse, sites, freshOutputsSql(sqlList(sites)), 'model_outputs'),
  },
  actuals: {
    staging: 'stage_actuals',
    definition: 'site_no INTEGER, valid_time DOUBLE, value DOUBLE, seen_at DOUBLE',
    merge: async (warehouse, sites, options) => {
      const written = await mergeActuals(warehouse, sites, POWER_ACTUALS);
      if (written.size > 0 && options.quality) await flagChangedActuals(warehouse, options.quality, options.now);
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

/**
 * Writes the fresh rows into `table` and counts them per site. Several sites: the INSERT returns
 * each written row's site as its 1-based position in `sites` (a small integer, cheap to read
 * back) and the counts are taken here; DuckDB cannot aggregate over RETURNING in SQL, and
 * materialising the fresh rows in a TEMP table to count them cost ~6 s of a 1,000-site sync.
 */
async function insertFresh(
  warehouse: Warehouse,
  sites: string[],
  freshSql: string,
  table: string,
): Promise<Map<string, RowsWritten>> {
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

/**
 * The data-quality flags of the sites whose power actuals changed, from the earliest changed
 * valid time on (flags.ts reaches back far enough for runs that began earlier).
 */
async function flagChangedActuals(warehouse: Warehouse, quality: QualitySettings, now = Date.now()): Promise<void> {
  const [{ sites, from }] = await warehouse.all<{ sites: string[]; from: number }>(
    `SELECT list(DISTINCT site_id) AS sites, epoch_ms(min(valid_time)) AS from FROM temp.${POWER_ACTUALS.changes}`,
  );
  await flagActuals(warehouse, quality, { sites, fromMs: Number(from), now });
}

// ---------------------------------------------------------------- the queue

interface Job {
  siteId: string;
  rows: number;
  blocks: StageBlock[];
  options: LoadOptions;
  resolve(rows: RowsWritten): void;
  reject(error: unknown): void;
}

const queues = new WeakMap<Warehouse, Map<SeriesKind, SeriesQueue>>();

/** Loads one site's rows of one series; resolves once they are committed, with the rows written. */
export function loadSeries(
  warehouse: Warehouse,
  kind: SeriesKind,
  siteId: string,
  blocks: StageBlock[],
  options: LoadOptions,
): Promise<RowsWritten> {
  let byKind = queues.get(warehouse);
  if (!byKind) {
    byKind = new Map();
    queues.set(warehouse, byKind);
  }
  let queue = byKind.get(kind);
  if (!queue) {
    queue = new SeriesQueue(warehouse, SERIES[kind]);
    byKind.set(kind, queue);
  }
  return queue.submit(siteId, blocks, options);
}

class SeriesQueue {
  private waiting: Job[] = [];
  private draining = false;

  constructor(
    private readonly warehouse: Warehouse,
    private readonly series: Series,
  ) {}

  submit(siteId: string, blocks: StageBlock[], options: LoadOptions): Promise<RowsWritten> {
    return new Promise((resolve, reject) => {
      const job: Job = { siteId, rows: blocks.reduce((sum, b) => sum + b.rows, 0), blocks, options, resolve, reject };
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
      while (this.waiting.length > 0) await this.mergeOrSplit(this.take());
    } finally {
      this.draining = false;
    }
  }

  /** The next batch: waiting jobs in arrival order, one per site, within the row and site caps. */
  private take(): Job[] {
    const batch: Job[] = [];
    const sites = new Set<string>();
    let rows = 0;
    for (const job of [...this.waiting]) {
      if (batch.length > 0 && (rows + job.rows > MAX_BATCH_ROWS || batch.length >= MAX_BATCH_SITES)) break;
      if (sites.has(job.siteId)) continue; // the same site twice waits for the next batch
      batch.push(job);
      sites.add(job.siteId);
      rows += job.rows;
    }
    this.waiting = this.waiting.filter((job) => !batch.includes(job));
    return batch;
  }

  private async mergeOrSplit(batch: Job[]): Promise<void> {
    try {
      const results = await this.merge(batch);
      for (const job of batch) job.resolve(results.get(job)!);
    } catch (error) {
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

  /** A fresh, empty staging table (replacing it is cheaper than deleting its rows: 2 s of a 1,000-site sync). */
  private async prepareStaging(): Promise<void> {
    const { warehouse, series } = this;
    await warehouse.run(`CREATE OR REPLACE TEMP TABLE ${series.staging} (${series.definition})`);
  }

  /** Stages the batch and merges it, with each job's sync state, in one transaction. */
  private async merge(batch: Job[]): Promise<Map<Job, RowsWritten>> {
    const { warehouse, series } = this;
    return warehouse.exclusive(async () => {
      const sites = batch
        .filter((job) => job.rows > 0)
        .map((job) => job.siteId)
        .sort();
      await this.prepareStaging();
      await appendBlocks(
        warehouse,
        series.staging,
        batch.flatMap((job) => job.blocks.map((block) => numbered(block, sites.indexOf(job.siteId) + 1))),
      );
      faultPoint('staging');
      return warehouse.transaction(async () => {
        const perSite =
          sites.length > 0 ? await series.merge(warehouse, sites, batch[0].options) : new Map<string, RowsWritten>();
        const advanced = await writeSyncStates(
          warehouse,
          batch.flatMap((job) => {
            const { syncState, now = Date.now() } = job.options;
            return syncState ? [{ siteId: job.siteId, state: syncState, now }] : [];
          }),
        );
        const results = new Map<Job, RowsWritten>();
        for (const job of batch) {
          const rows = { ...perSite.get(job.siteId) };
          if (advanced.has(job.siteId)) addInto(rows, { sync_state: 1 });
          results.set(job, nonZero(rows));
        }
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

export async function writeSyncState(
  warehouse: Warehouse,
  siteId: string,
  state: SyncStateUpdate,
  now: number,
): Promise<RowsWritten> {
  const written = await warehouse.changed(SYNC_STATE_UPSERT, [
    siteId,
    state.resource,
    state.syncedTo,
    state.lastAsOf ?? null,
    now,
    state.runId,
  ]);
  return written > 0 ? { sync_state: written } : {};
}

/**
 * The sync states of a batch (one per site) in one statement: a statement per site cost ~7 ms
 * each, more than merging the site's rows. Returns the sites whose state advanced.
 */
async function writeSyncStates(
  warehouse: Warehouse,
  entries: { siteId: string; state: SyncStateUpdate; now: number }[],
): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const params = entries.flatMap(({ siteId, state, now }) => [
    siteId,
    state.resource,
    state.syncedTo,
    state.lastAsOf ?? null,
    now,
    state.runId,
  ]);
  const rows = await warehouse.all<{ site_id: string }>(syncStateUpsertSql(entries.length), params);
  return new Set(rows.map((row) => row.site_id));
}

function addInto(total: RowsWritten, part: RowsWritten): void {
  for (const [table, rows] of Object.entries(part)) total[table] = (total[table] ?? 0) + rows;
}

export function nonZero(rows: RowsWritten): RowsWritten {
  return Object.fromEntries(Object.entries(rows).filter(([, n]) => n > 0));
}
