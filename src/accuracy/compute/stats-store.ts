// The warehouse's per-group statistics (migration 014): the statistics of the ledger's pairs per
// UTC day of valid time (accuracy_stats) and their histograms (accuracy_histograms), kept up to
// date as the ledger changes, so that a score reads the pairs of the days that changed and not
// the rest (docs/accuracy.md, "Incremental scoring").
//
// A day's statistics are computed again from the ledger whenever one of its pairs is removed or
// added: sums are never subtracted, so nothing cancels, and minima and maxima stay exact. The
// histograms count: the bins of the removed pairs are subtracted, those of the added ones added.
import { instantLiteral, quoteLiteral } from '../../warehouse/sql.js';
import { chunksOf, firstThatFits, handBackPool, runInHalves, runSplitting } from '../../warehouse/executor.js';
import type { Warehouse } from '../../warehouse/warehouse.js';
import { DAY } from '../../time.js';
import { Spool } from '../../warehouse/spool.js';
import { faultPoint } from '../../fault.js';
import type { LedgerListener } from '../input/incremental.js';
import type { MetricOptions } from './options.js';
import {
  BIN_SCALE,
  groupPartSql,
  histogramSql,
  mergedStatsSql,
  STATS_VERSION,
  type StatsEngine,
  statsEngine,
  statsSql,
} from './stats.js';

const STATS = 'accuracy_stats';
const PENDING = 'accuracy_stats_pending';
const HISTOGRAMS = 'accuracy_histograms';
const DAY_US = DAY * 1000;
/**
 * A slice of the statistics (computeDays) holds this many pairs per point of
 * accuracy.batch_points: a pair costs a statement of statistics far less memory than a point
 * costs one of alignment.
 */
const SLICE_PAIRS_PER_BATCH_POINT = 4;
/** The chunk of a pair: the UTC day of its valid time. */
const DAY_SQL = `epoch_us(valid_time) // ${DAY_US}`;
/** What the pairs a run removes take from the statistics, gathered batch by batch (statsKeeper). */
const REMOVED_BINS = 'acc_removed_bins';
const REMOVED_DAYS = 'acc_removed_days';
/** Spools (src/warehouse/spool.ts) of counted pairs' bins and of the days' statistics, a slice at a time. */
const COUNTED_BINS = 'counted-bins';
const DAY_STATS = 'day-stats';

/** What the statistics depend on besides the pairs: a change computes them again from the whole ledger. */
function fingerprintOf(options: MetricOptions): string {
  return JSON.stringify({
    v: STATS_VERSION,
    bins: BIN_SCALE,
    // the statistics of a group do not depend on the order groups are asked in
    groups: [...options.groups].sort(),
    tz: options.tz,
    leadBuckets: options.leadBuckets,
    deadbandPct: options.deadbandPct,
    mapeMinActualPct: options.mapeMinActualPct,
    events: options.events ?? [],
  });
}

/**
 * Days a ramp reaches back: a pair's event reads the pair `span` earlier, so a day's statistics
 * depend on the pairs of the days before it up to this many.
 */
function rampDays(options: MetricOptions): number {
  const spans = (options.events ?? []).filter((e) => e.kind === 'ramp').map((e) => e.span);
  return spans.length ? Math.ceil(Math.max(...spans) / DAY) : 0;
}

/** Whether a refresh updates the statistics or computes them anew, and how it went. */
export interface StatsRefresh {
  mode: 'incremental' | 'full';
  /** Days whose statistics were computed again from the ledger (every day for full), of `of` days. */
  days: number;
  of: number;
  /** Whether the native functions computed them, or SQL (statsEngine). */
  engine: StatsEngine;
}

/**
 * Keeps the statistics in step with the ledger: `listener` is given to refreshLedger, which calls
 * it batch by batch, each in the batch's transaction; `refresh` says afterwards what it did.
 *
 * While the batches run, what the pairs they remove change is kept aside, a batch at a time (the
 * days leaving the window, retiring, before the first, in slices as the added pairs are): their
 * histogram bins, summed (acc_removed_bins, at most the histograms' size) and their days
 * (acc_removed_days), not the pairs themselves (a catch-up removes a whole window of them, which
 * kept whole would take memory that grows with the window). Once every batch is in (`done`, after
 * the ledger's state is written), one transaction gives the histograms the bins of the added
 * pairs less the removed ones, lists the days either touched as pending (accuracy_stats_pending)
 * and writes the statistics' state; then the pending days are computed again from the ledger, a
 * run of days at a time (computePending), each day taken off the list in the transaction that
 * stores its statistics. The transaction before the first batch removes the statistics' state, so
 * a run killed before `done`'s transaction leaves them to be computed anew; one killed after it
 * leaves the next run the days still pending, on top of its own.
 */
export function statsKeeper(
  wh: Warehouse,
  options: MetricOptions,
  meta: {
    runId: string;
    now: number;
    ledgerPairs: string;
    ledgerQuantiles: string;
    batchPoints?: number;
    signal?: AbortSignal;
  },
): { listener: LedgerListener; result: () => StatsRefresh; drop: () => Promise<void> } {
  const fingerprint = fingerprintOf(options);
  const sliced = {
    ...meta,
    slicePairs: meta.batchPoints === undefined ? undefined : meta.batchPoints * SLICE_PAIRS_PER_BATCH_POINT,
  };
  /** Whether this run updates them from what changed; else they are computed anew from the ledger. */
  let incremental = false;
  let result: StatsRefresh = { mode: 'full', days: 0, of: 0, engine: 'sql' };
  const writeState = async () => {
    await wh.run('DELETE FROM accuracy_stats_state');
    await wh.run(`INSERT INTO accuracy_stats_state VALUES ($1, $2, ${instantLiteral(meta.now)})`, [
      fingerprint,
      meta.runId,
    ]);
  };
  const listener: LedgerListener = {
    async starting(rebuilt) {
      const [row] = await wh.all<{ fingerprint: string }>('SELECT fingerprint FROM accuracy_stats_state');
      incremental = !rebuilt && row?.fingerprint === fingerprint;
      await wh.run('DELETE FROM accuracy_stats_state');
      if (!incremental) return;
      await wh.run(`CREATE OR REPLACE TEMP TABLE ${REMOVED_BINS} AS FROM ${HISTOGRAMS} LIMIT 0`);
      await wh.run(`CREATE OR REPLACE TEMP TABLE ${REMOVED_DAYS} (chunk BIGINT)`);
    },
    async removing() {
      if (!incremental) return;
      const engine = await statsEngine(wh);
      await wh.run(`INSERT INTO ${REMOVED_BINS} BY NAME ${binsSql(inHistogramsSql('acc_stale'), -1, options, engine)}`);
      await wh.run(`INSERT INTO ${REMOVED_DAYS} SELECT DISTINCT ${DAY_SQL} FROM acc_stale`);
    },
    async retiring(pairs) {
      if (!incremental) return;
      const bins = await binsInSlices(
        wh,
        options,
        { ...sliced, engine: await statsEngine(wh) },
        inHistogramsSql(pairs),
        -1,
      );
      try {
        await wh.run(`INSERT INTO ${REMOVED_BINS} BY NAME FROM ${bins.relation()}`);
      } finally {
        bins.drop();
      }
      await wh.run(`INSERT INTO ${REMOVED_DAYS} SELECT DISTINCT ${DAY_SQL} FROM ${pairs}`);
      // a month's catch-up retires the whole last window, a slice's bins for each slice of it
      await compactRemoved(wh);
    },
    async settled() {
      if (incremental) await compactRemoved(wh);
    },
    async done({ fromPid, coldFromMs }) {
      const engine = await statsEngine(wh);
      if (incremental) {
        // The hot table, and the cold days the run wrote (a catch-up's days before the hot
        // window): read through the ledger's view, each slice would open every cold file of the
        // window to find none there.
        const written =
          coldFromMs === null
            ? await wh.cold.hotTable(meta.ledgerPairs)
            : await wh.cold.between(meta.ledgerPairs, coldFromMs, null);
        const added = `(SELECT * FROM ${written} WHERE pid >= ${fromPid})`;
        await listChanges(wh, options, { ...sliced, engine }, added, writeState);
      } else {
        await wh.transaction(async () => {
          await wh.run(`DELETE FROM ${HISTOGRAMS}`);
          await wh.run(`DELETE FROM ${STATS}`);
          await wh.run(`DELETE FROM ${PENDING}`);
          await wh.run(`INSERT INTO ${PENDING} SELECT DISTINCT ${DAY_SQL}, true FROM ${meta.ledgerPairs}`);
          await writeState();
        });
      }
      const days = await computePending(wh, options, { ...sliced, engine });
      const [{ of }] = await wh.all<{ of: bigint }>(`SELECT count(DISTINCT chunk) AS of FROM ${STATS}`);
      result = { mode: incremental ? 'incremental' : 'full', days, of: Number(of), engine };
      await dropRemoved(wh);
    },
  };
  // drop: what a failed run set aside goes with it (score.ts calls it whatever the outcome)
  return { listener, result: () => result, drop: () => dropRemoved(wh) };
}

/**
 * The pairs of `pairs` (a relation) whose bins are in the histograms: those of days still listed
 * to have theirs counted (a full computation stopped part way) are not, and neither leave nor
 * join them until computePending counts their day whole.
 */
function inHistogramsSql(pairs: string): string {
  return `(SELECT * FROM ${pairs} WHERE ${DAY_SQL} NOT IN (SELECT chunk FROM ${PENDING} WHERE count_bins))`;
}

/**
 * In one transaction, with `writeState`: the histograms plus the bins of the `added` pairs less
 * those of the removed ones (acc_removed_bins), and the days either falls in listed as pending,
 * their statistics deleted.
 */
async function listChanges(
  wh: Warehouse,
  options: MetricOptions,
  meta: { ledgerPairs: string; slicePairs?: number; engine: StatsEngine },
  added: string,
  writeState: () => Promise<void>,
): Promise<void> {
  const reach = rampDays(options);
  // The added pairs' bins first, in statements of their own, as a full score counts the ledger's:
  // counted inside the sum below, every group's hash table would stand beside the sum's.
  await sumWithBinsOf(wh, options, meta, inHistogramsSql(added), [HISTOGRAMS, REMOVED_BINS]);
  // the days that lost or gained a pair, and the days after them a ramp reaches into
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_stats_redo AS
    SELECT DISTINCT day + unnest(range(0, ${reach + 1})) AS chunk
    FROM (SELECT chunk AS day FROM ${REMOVED_DAYS} UNION ALL SELECT ${DAY_SQL} FROM ${added})`);
  const emptied = await emptiedDays(wh, meta.ledgerPairs);
  const days = `SELECT chunk FROM acc_stats_redo${emptied.length ? ` WHERE chunk NOT IN (${emptied.join(', ')})` : ''}`;
  await wh.transaction(async () => {
    await replaceWithSummed(wh, HISTOGRAMS);
    await wh.run(`DELETE FROM ${STATS} WHERE chunk IN (SELECT chunk FROM acc_stats_redo)`);
    await wh.run(
      `INSERT INTO ${PENDING} SELECT chunk, false FROM (${days}) WHERE chunk NOT IN (SELECT chunk FROM ${PENDING})`,
    );
    await writeState();
  });
  await wh.run('DROP TABLE acc_stats_redo');
}

/** What computing days' statistics reads and how: the ledger, a slice's pairs, the engine, the run's signal. */
interface DaysMeta {
  ledgerPairs: string;
  ledgerQuantiles: string;
  slicePairs?: number;
  engine: StatsEngine;
  signal?: AbortSignal;
}

/**
 * Slices' worth of pairs a run of pending days (computePending) holds: a score stopped part way
 * (its timeout, a kill) loses the run it was computing, at most this many slices.
 */
const SLICES_PER_RUN = 16;

/**
 * The statistics of the pending days computed from the ledger, consecutive days up to
 * SLICES_PER_RUN slices' pairs at a time (a day with more alone; every day at once without a
 * bound): the bins of those still to be counted added to the histograms and taken off in one
 * transaction, then their statistics (computeDays), each day taken off the list as its statistics
 * are stored. Returns how many days were pending.
 */
async function computePending(wh: Warehouse, options: MetricOptions, meta: DaysMeta): Promise<number> {
  const pending = await wh.all<{ chunk: bigint; count_bins: boolean }>(
    `SELECT chunk, count_bins FROM ${PENDING} ORDER BY chunk`,
  );
  if (pending.length === 0) return 0;
  const list = (keys: readonly bigint[]) => keys.join(', ');
  const counts = new Map(
    (
      await wh.all<{ chunk: bigint; n: bigint }>(
        `SELECT ${DAY_SQL} AS chunk, count(*) AS n FROM ${meta.ledgerPairs}
         WHERE ${await daysSpanSql(wh, `SELECT chunk FROM ${PENDING}`)} GROUP BY ALL`,
      )
    ).map((row) => [row.chunk, Number(row.n)]),
  );
  const days = pending.map((day) => ({ key: day.chunk, rows: counts.get(day.chunk) ?? 0 }));
  const runs =
    meta.slicePairs === undefined
      ? [days.map((day) => day.key)]
      : chunksOf(days, meta.slicePairs * SLICES_PER_RUN).map((run) => run.keys);
  const toCount = new Set(pending.filter((day) => day.count_bins).map((day) => day.chunk));
  for (const run of runs) {
    meta.signal?.throwIfAborted();
    const counting = run.filter((chunk) => toCount.has(chunk));
    if (counting.length) {
      const pairs = `(SELECT * FROM ${await wh.cold.between(meta.ledgerPairs, Number(counting[0]) * DAY, (Number(counting.at(-1)) + 1) * DAY)}
        WHERE ${DAY_SQL} IN (${list(counting)}))`;
      await sumWithBinsOf(wh, options, meta, pairs, [HISTOGRAMS]);
      await wh.transaction(async () => {
        await replaceWithSummed(wh, HISTOGRAMS);
        await wh.run(`UPDATE ${PENDING} SET count_bins = false WHERE chunk IN (${list(counting)})`);
      });
    }
    await computeDays(wh, options, meta, `SELECT chunk FROM ${PENDING} WHERE chunk IN (${list(run)})`);
    // the run's days without a pair have no statistics to store
    await wh.run(`DELETE FROM ${PENDING} WHERE chunk IN (${list(run)})`);
  }
  return pending.length;
}

/**
 * The days of acc_stats_redo with no pair in the ledger: a day's statistics are those of its own
 * pairs (a ramp reads earlier days' pairs, for a day that has pairs), so such a day has none to
 * compute, its rows deleted. Each night the day leaving the window is one: computed again, it
 * stretched the statistics' span of days (planSlices, computeDays) from the newest day back over
 * the whole window, read once more each night.
 */
async function emptiedDays(wh: Warehouse, ledgerPairs: string): Promise<bigint[]> {
  const chunks = await wh.all<{ chunk: bigint }>('SELECT chunk FROM acc_stats_redo ORDER BY chunk');
  const emptied: bigint[] = [];
  for (const { chunk } of chunks) {
    // one day's valid times as constants: DuckDB answers from that day's file and zone maps
    const [{ any }] = await wh.all<{ any: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${ledgerPairs} WHERE valid_time >= ${instantLiteral(Number(chunk) * DAY)}
        AND valid_time < ${instantLiteral((Number(chunk) + 1) * DAY)}) AS any`,
    );
    if (!any) emptied.push(chunk);
  }
  return emptied;
}

/**
 * The removed bins are appended batch by batch and summed once they outnumber twice the
 * histograms: every batch has the groups every pair is in (total, lead, hour), so appended alone
 * they grow to batches times the histograms, and their sum with them; summed after every batch,
 * a night would sum them again at every batch. The sum runs between batches, outside their
 * transactions, so that it never stands beside a batch's uncommitted rows.
 */
async function compactRemoved(wh: Warehouse): Promise<void> {
  const [{ removed, kept }] = await wh.all<{ removed: bigint; kept: bigint }>(
    `SELECT (SELECT count(*) FROM ${REMOVED_BINS}) AS removed, (SELECT count(*) FROM ${HISTOGRAMS}) AS kept`,
  );
  if (Number(removed) > 2 * Math.max(Number(kept), 1)) {
    await sumBins(wh, `(FROM ${REMOVED_BINS})`);
    // swapped, not deleted from: a temp table's deletes hold their versions until it is dropped
    await wh.transaction(async () => {
      await wh.run(`DROP TABLE ${REMOVED_BINS}`);
      await wh.run(`ALTER TABLE ${SUMMED} RENAME TO ${REMOVED_BINS}`);
    });
    // the sum's reads and hash table leave the pool, so the next batch does not start on them
    await handBackPool(wh);
  }
}

/** The histogram bins of `pairs`, their counts times `sign` (-1: bins that pairs leaving take away). */
function binsSql(pairs: string, sign: number, options: MetricOptions, engine: StatsEngine): string {
  return `SELECT subject, model, grp, key, key_order, bin, ${sign} * n_o AS n_o, ${sign} * n_f AS n_f
    FROM (${histogramSql(pairs, options, engine)})`;
}

/**
 * The histogram bins of `pairs` (a relation of ledger pairs), their counts times `sign`, into the
 * spool COUNTED_BINS, a slice of sites to a statement as computeDays plans them: counted in one
 * statement, every group's hash table is held at once over the whole ledger, so its memory would
 * grow with the sites and the window.
 */
async function binsInSlices(
  wh: Warehouse,
  options: MetricOptions,
  meta: { slicePairs?: number; engine: StatsEngine },
  pairs: string,
  sign = 1,
): Promise<Spool> {
  const bins = await Spool.create(wh, COUNTED_BINS, binsSql(pairs, sign, options, meta.engine));
  try {
    const countSlice = (slice: Slice) => bins.add(binsSql(slicePairsSql(pairs, slice, 0), sign, options, meta.engine));
    for (const slice of await planSlices(wh, { ledgerPairs: pairs, slicePairs: meta.slicePairs }, null)) {
      await computeOrHalve(wh, pairs, slice, countSlice);
      await handBackPool(wh);
    }
    return bins;
  } catch (error) {
    bins.drop();
    throw error;
  }
}

/** sumBins of the histogram `tables` and the bins of `pairs`, counted first (binsInSlices). */
async function sumWithBinsOf(
  wh: Warehouse,
  options: MetricOptions,
  meta: { slicePairs?: number; engine: StatsEngine },
  pairs: string,
  tables: string[],
): Promise<void> {
  const bins = await binsInSlices(wh, options, meta, pairs);
  try {
    await sumBins(wh, `(${[...tables, bins.relation()].map((from) => `FROM ${from}`).join(' UNION ALL BY NAME ')})`);
  } finally {
    bins.drop();
  }
  // The sum and what it read leave the pool before the histograms are replaced by it, so that
  // transaction does not start on them.
  await handBackPool(wh);
}

/** The pairs of `pairs` of the slice's sites and days, and of the `reach` days before its first. */
function slicePairsSql(pairs: string, { lo, hi, first, last }: Slice, reach: number): string {
  return `(SELECT * FROM ${pairs} WHERE site_id BETWEEN ${quoteLiteral(lo)} AND ${quoteLiteral(hi)}
    AND valid_time >= ${instantLiteral((Number(first) - reach) * DAY)} AND valid_time < ${instantLiteral((Number(last) + 1) * DAY)})`;
}

async function dropRemoved(wh: Warehouse): Promise<void> {
  for (const table of [REMOVED_BINS, REMOVED_DAYS]) await wh.run(`DROP TABLE IF EXISTS ${table}`);
}

/** The ledger's quantile relation, or null when it holds no quantile sets. */
async function quantilesOf(wh: Warehouse, meta: { ledgerQuantiles: string }): Promise<string | null> {
  const [{ any }] = await wh.all<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${meta.ledgerQuantiles}) AS any`);
  return any ? meta.ledgerQuantiles : null;
}

/**
 * Hash partitions of the histograms' groups that sumBins sums one at a time, tried in turn while
 * a partition runs out of memory: its hash table holds a row per bin of every group, which grows
 * with the histograms past what one statement fits.
 */
const SUM_PARTITIONS = [1, 4, 16, 64];

/**
 * The partition counts sumBins tries in turn, for histograms of `rows` rows: from the first whose
 * partitions hold at most `perPartition` of them (the budget's `rows.sumPerPartition`), the last
 * count whatever the rows.
 */
export function sumPartitionsFor(rows: number, perPartition: number): number[] {
  return SUM_PARTITIONS.filter((parts, i) => parts * perPartition >= rows || i === SUM_PARTITIONS.length - 1);
}

/**
 * The histogram rows of `from` summed per bin, bins left empty dropped, into the TEMP table
 * SUMMED, one hash partition of the groups to a statement, each committed alone so the table
 * spills (outside any transaction: a statement that runs out of memory ends only itself). It
 * starts from an empty pool and from as many partitions as the histograms' rows plan.
 */
async function sumBins(wh: Warehouse, from: string): Promise<void> {
  // from an empty pool, not on the blocks a retired day's bins left cached
  await handBackPool(wh);
  const [{ rows }] = await wh.all<{ rows: bigint }>(`SELECT count(*) AS rows FROM ${HISTOGRAMS}`);
  const keys = 'subject, model, grp, key, bin';
  const sum = `SELECT ${keys}, min(key_order) AS key_order, sum(n_o) AS n_o, sum(n_f) AS n_f FROM ${from}`;
  await firstThatFits(sumPartitionsFor(Number(rows), wh.rows.sumPerPartition), async (parts) => {
    await wh.run(`CREATE OR REPLACE TEMP TABLE ${SUMMED} AS ${sum} WHERE FALSE GROUP BY ${keys}`);
    for (let part = 0; part < parts; part++) {
      await wh.run(`INSERT INTO ${SUMMED} BY NAME ${sum} WHERE ${groupPartSql(part, parts)}
        GROUP BY ${keys} HAVING sum(n_o) <> 0 OR sum(n_f) <> 0`);
    }
  });
}

/** `to` (histogram rows) replaced by SUMMED (sumBins), which goes. */
async function replaceWithSummed(wh: Warehouse, to: string): Promise<void> {
  await wh.run(`DELETE FROM ${to}`);
  await wh.run(`INSERT INTO ${to} SELECT subject, model, grp, key, key_order, bin, n_o, n_f FROM ${SUMMED}`);
  await wh.run(`DROP TABLE ${SUMMED}`);
}

const SUMMED = 'acc_histogram_summed';

/**
 * The statistics of every day in `days` (a query of chunks; null: every day of the ledger)
 * computed from the ledger a slice of sites at a time: a slice holds about `slicePairs` of the
 * pairs of those days, whole sites in site order (all sites without it), and its statement reads
 * those sites' pairs of those days and of the days before them a ramp reaches back to (those days
 * only: the day leaving the window and the newest are a month apart, and the days between them
 * stay as stored), so no
 * statement holds more than a slice whatever the window and the number of sites. Each slice's rows
 * go to a spool, a file each (kept in DuckDB, in one transaction or in a temp table, they would
 * hold memory that grows with the slices: src/warehouse/spool.ts), and are merged
 * per day (mergedStatsSql) into one row per statistic.
 */
async function computeDays(wh: Warehouse, options: MetricOptions, meta: DaysMeta, days: string | null): Promise<void> {
  const reach = rampDays(options);
  const quantiles = await quantilesOf(wh, meta);
  const sliced = await Spool.create(wh, DAY_STATS, `FROM ${STATS}`);
  const slices = await planSlices(wh, meta, days);
  const ledger = await daysOfSlices(wh, meta.ledgerPairs, slices, reach);
  const computeSlice = (slice: Slice) => {
    const { first, last } = slice;
    const pairs = `(SELECT * FROM ${slicePairsSql(ledger, slice, reach)}
      ${days === null ? '' : `WHERE ${DAY_SQL} IN (SELECT DISTINCT chunk - unnest(range(0, ${reach + 1})) FROM (${days}))`})`;
    return sliced.add(`SELECT * FROM (${statsSql(pairs, quantiles, options, DAY_SQL, meta.engine)})
      WHERE chunk BETWEEN ${first} AND ${last} ${days === null ? '' : `AND chunk IN (${days})`}`);
  };
  try {
    for (const slice of slices) {
      meta.signal?.throwIfAborted();
      await computeOrHalve(wh, meta.ledgerPairs, slice, computeSlice);
      await handBackPool(wh); // as between alignment batches (incremental.ts)
    }
    await mergeDays(wh, sliced.relation(), meta.slicePairs);
  } finally {
    sliced.drop();
  }
}

/**
 * Spooled statistic rows a statement of mergeDays takes, per pair of a statement of statistics
 * (accuracy.batch_points × SLICE_PAIRS_PER_BATCH_POINT): the merge holds a row per day, group key
 * and statistic, its strings included, where a slice holds a pair's few numbers.
 */
const MERGED_ROWS_PER_SLICE_PAIR = 0.25;

/**
 * The days' spooled statistics (`spooled`, computeDays) merged into the stored ones, a run of
 * consecutive days to a statement of about `slicePairs` × MERGED_ROWS_PER_SLICE_PAIR spooled rows
 * (a day with more alone; every day at once without a bound), split by the executor into halves
 * of its days while it runs out of memory, each in a transaction that takes its days off the
 * pending list. In one statement, the merge's hash table grows with the days, the sites and the
 * groups (docs/accuracy.md).
 */
async function mergeDays(wh: Warehouse, spooled: string, slicePairs: number | undefined): Promise<void> {
  const days = await wh.all<{ chunk: bigint; n: bigint }>(
    `SELECT chunk, count(*) AS n FROM ${spooled} GROUP BY chunk ORDER BY chunk`,
  );
  const counted = days.map((day) => ({ key: day.chunk, rows: Number(day.n) }));
  const runs =
    slicePairs === undefined
      ? [counted.map((day) => day.key)]
      : chunksOf(counted, slicePairs * MERGED_ROWS_PER_SLICE_PAIR).map((run) => run.keys);
  for (const run of runs) {
    await runInHalves(
      run,
      async (part) => {
        const days = `chunk BETWEEN ${part[0]} AND ${part.at(-1)}`;
        await wh.transaction(async () => {
          await wh.run(
            `INSERT INTO ${STATS} BY NAME ${mergedStatsSql(`(SELECT * FROM ${spooled} WHERE ${days})`, ['chunk'])}`,
          );
          await wh.run(`DELETE FROM ${PENDING} WHERE ${days}`);
        });
        faultPoint('accuracy-stats');
      },
      // a checkpoint that fails leaves the halves to fail and say why
      { handBack: () => wh.checkpoint().catch(() => undefined), warehouse: wh },
    );
  }
}

/** The ledger's pairs (`ledgerPairs`, a table name) of the days the slices read, their ramp's `reach` days before them included. */
async function daysOfSlices(
  wh: Warehouse,
  ledgerPairs: string,
  slices: readonly Slice[],
  reach: number,
): Promise<string> {
  if (slices.length === 0) return ledgerPairs;
  const first = Math.min(...slices.map((slice) => Number(slice.first))) - reach;
  const last = Math.max(...slices.map((slice) => Number(slice.last)));
  return wh.cold.between(ledgerPairs, first * DAY, (last + 1) * DAY);
}

/** Consecutive sites by id, lo to hi, and the first and last day they have pairs in. */
interface Slice {
  lo: string;
  hi: string;
  first: bigint;
  last: bigint;
}

/**
 * Runs `compute` (one statement, committed alone) on the slice, split by the executor while it
 * runs out of DuckDB's memory: after a checkpoint, into halves of the slice's sites, and a site
 * alone into halves of its days, down to a day of a site, whose one more try failing fails the
 * step. A slice's size is planned from its pairs; what a statement of them needs can still
 * exceed the memory limit (many groups, quantiles, a site with a month of one-minute pairs), and
 * the step goes on in smaller statements.
 */
async function computeOrHalve(
  wh: Warehouse,
  ledgerPairs: string,
  slice: Slice,
  compute: (slice: Slice) => Promise<void>,
): Promise<void> {
  await runSplitting(slice, compute, {
    halves: (piece) => sliceHalves(wh, ledgerPairs, piece),
    // a checkpoint that fails leaves the halves to fail and say why
    handBack: () => wh.checkpoint().catch(() => undefined),
    warehouse: wh,
  });
}

/** Halves of the slice's sites, or of a site's days; null for a day of a site. */
async function sliceHalves(wh: Warehouse, ledgerPairs: string, slice: Slice): Promise<[Slice, Slice] | null> {
  if (slice.lo !== slice.hi) {
    const sites = await wh.all<{ site_id: string }>(
      `SELECT DISTINCT site_id FROM ${ledgerPairs} WHERE site_id BETWEEN ${quoteLiteral(slice.lo)} AND ${quoteLiteral(slice.hi)} ORDER BY site_id`,
    );
    if (sites.length > 1) {
      const half = Math.ceil(sites.length / 2);
      return [
        { ...slice, hi: sites[half - 1].site_id },
        { ...slice, lo: sites[half].site_id },
      ];
    }
  }
  if (slice.first >= slice.last) return null;
  const middle = (slice.first + slice.last) / 2n;
  return [
    { ...slice, last: middle },
    { ...slice, first: middle + 1n },
  ];
}

/**
 * The slices of sites for the statistics of `days` (null: every day): consecutive sites (by id)
 * that hold about `slicePairs` pairs of those days together (a site with more is a slice of its
 * own), each as its first and last site id and the first and last day they have pairs in; from one
 * pass over the ledger.
 */
async function planSlices(
  wh: Warehouse,
  meta: { ledgerPairs: string; slicePairs?: number },
  days: string | null,
): Promise<Slice[]> {
  const slice = meta.slicePairs === undefined ? '0' : `(sum(n) OVER (ORDER BY site_id) - n) // ${meta.slicePairs}`;
  // The plan's pass over the ledger starts from an empty pool, not on what the histograms' phase
  // left cached, and leaves one, so the first slice does not start on what the pass read.
  await handBackPool(wh);
  const plan = `SELECT min(site_id) AS lo, max(site_id) AS hi, min(first) AS first, max(last) AS last FROM (
      SELECT *, ${slice} AS slice FROM (
        SELECT site_id, count(*) AS n, min(${DAY_SQL}) AS first, max(${DAY_SQL}) AS last FROM ${meta.ledgerPairs}
        ${days === null ? '' : `WHERE ${await daysSpanSql(wh, days)} AND ${DAY_SQL} IN (${days})`} GROUP BY site_id))
    GROUP BY slice ORDER BY lo`;
  const slices = await wh.all<Slice>(plan);
  await handBackPool(wh);
  return slices;
}

/**
 * The valid times from the first of `days` (a query of chunks) to the end of the last, as
 * constants: DuckDB skips the ledger's other days by them (its Parquet files, its zone maps),
 * where the IN of the days reads every pair of the window.
 */
async function daysSpanSql(wh: Warehouse, days: string): Promise<string> {
  const [{ first, last }] = await wh.all<{ first: bigint | null; last: bigint | null }>(
    `SELECT min(chunk) AS first, max(chunk) AS last FROM (${days})`,
  );
  if (first === null || last === null) return 'FALSE';
  return `valid_time >= ${instantLiteral(Number(first) * DAY)} AND valid_time < ${instantLiteral((Number(last) + 1) * DAY)}`;
}
