// The warehouse's per-group statistics (migration 014): the statistics of the ledger's pairs per
// UTC day of valid time (accuracy_stats) and their histograms (accuracy_histograms), kept up to
// date as the ledger changes, in its transaction, so that a score reads the pairs of the days
// that changed and not the rest (docs/accuracy.md, "Incremental scoring").
//
// A day's statistics are computed again from the ledger whenever one of its pairs is removed or
// added: sums are never subtracted, so nothing cancels, and minima and maxima stay exact. The
// histograms count: the bins of the removed pairs are subtracted, those of the added ones added.
import { instantLiteral } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { DAY } from '../time.js';
import type { LedgerListener } from './incremental.js';
import type { MetricOptions } from './options.js';
import { BIN_SCALE, histogramSql, STATS_VERSION, statsSql } from './stats.js';

const STATS = 'accuracy_stats';
const HISTOGRAMS = 'accuracy_histograms';
const DAY_US = DAY * 1000;
/** The chunk of a pair: the UTC day of its valid time. */
const DAY_SQL = `epoch_us(valid_time) // ${DAY_US}`;

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
}

/**
 * Keeps the statistics in step with the ledger: `listener` is given to refreshLedger, which calls
 * it inside its transaction; `refresh` says afterwards what it did.
 */
export function statsKeeper(
  wh: Warehouse,
  options: MetricOptions,
  meta: { runId: string; now: number; ledgerPairs: string; ledgerQuantiles: string },
): { listener: LedgerListener; result: () => StatsRefresh } {
  const fingerprint = fingerprintOf(options);
  let current: boolean | null = null;
  let result: StatsRefresh = { mode: 'full', days: 0, of: 0 };
  const isCurrent = async () => {
    if (current === null) {
      const [row] = await wh.all<{ fingerprint: string }>('SELECT fingerprint FROM accuracy_stats_state');
      current = row?.fingerprint === fingerprint;
      await wh.run('CREATE OR REPLACE TEMP TABLE acc_stats_days (chunk BIGINT)');
      await wh.run(`CREATE OR REPLACE TEMP TABLE acc_histogram_delta AS SELECT * FROM ${HISTOGRAMS} LIMIT 0`);
    }
    return current;
  };
  /** Notes the days of `pairs` and adds their bins to the delta, negated when they are removed. */
  const note = async (pairs: string, sign: 1 | -1) => {
    await wh.run(`INSERT INTO acc_stats_days SELECT DISTINCT ${DAY_SQL} FROM ${pairs}`);
    await wh.run(`INSERT INTO acc_histogram_delta SELECT subject, model, grp, key, key_order, bin,
      ${sign} * n_o, ${sign} * n_f FROM (${histogramSql(pairs, options)})`);
  };
  const listener: LedgerListener = {
    async removing() {
      if (await isCurrent()) {
        await note(`(SELECT * FROM ${meta.ledgerPairs} WHERE pid IN (SELECT pid FROM acc_stale))`, -1);
      }
    },
    async added(fromPid, rebuilt) {
      let days: number;
      const full = rebuilt || !(await isCurrent());
      if (full) {
        await rebuild(wh, options, meta);
      } else {
        await note(`(SELECT * FROM ${meta.ledgerPairs} WHERE pid >= ${fromPid})`, 1);
        await mergeHistograms(wh);
        days = await recomputeDays(wh, options, meta);
      }
      const [{ of }] = await wh.all<{ of: bigint }>(`SELECT count(DISTINCT chunk) AS of FROM ${STATS}`);
      result = { mode: full ? 'full' : 'incremental', days: full ? Number(of) : days!, of: Number(of) };
      await wh.run('DELETE FROM accuracy_stats_state');
      await wh.run(`INSERT INTO accuracy_stats_state VALUES ($1, $2, ${instantLiteral(meta.now)})`, [
        fingerprint,
        meta.runId,
      ]);
      for (const table of ['acc_stats_days', 'acc_histogram_delta']) await wh.run(`DROP TABLE IF EXISTS ${table}`);
    },
  };
  return { listener, result: () => result };
}

/** Every day's statistics and the histograms from the whole ledger. */
async function rebuild(
  wh: Warehouse,
  options: MetricOptions,
  meta: { ledgerPairs: string; ledgerQuantiles: string },
): Promise<void> {
  await wh.run(`DELETE FROM ${STATS}`);
  await wh.run(`INSERT INTO ${STATS} ${statsSql(meta.ledgerPairs, await quantilesOf(wh, meta), options, DAY_SQL)}`);
  await wh.run(`DELETE FROM ${HISTOGRAMS}`);
  await wh.run(`INSERT INTO ${HISTOGRAMS} ${histogramSql(meta.ledgerPairs, options)}`);
}

/** The ledger's quantile relation, or null when it holds no quantile sets. */
async function quantilesOf(wh: Warehouse, meta: { ledgerQuantiles: string }): Promise<string | null> {
  const [{ any }] = await wh.all<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${meta.ledgerQuantiles}) AS any`);
  return any ? meta.ledgerQuantiles : null;
}

/** The histograms plus the delta, bins left empty dropped. */
async function mergeHistograms(wh: Warehouse): Promise<void> {
  const keys = 'subject, model, grp, key, bin';
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_histogram_merged AS
    SELECT ${keys}, min(key_order) AS key_order, sum(n_o) AS n_o, sum(n_f) AS n_f
    FROM (SELECT * FROM ${HISTOGRAMS} UNION ALL SELECT * FROM acc_histogram_delta)
    GROUP BY ${keys} HAVING sum(n_o) <> 0 OR sum(n_f) <> 0`);
  await wh.run(`DELETE FROM ${HISTOGRAMS}`);
  await wh.run(
    `INSERT INTO ${HISTOGRAMS} SELECT subject, model, grp, key, key_order, bin, n_o, n_f FROM acc_histogram_merged`,
  );
  await wh.run('DROP TABLE acc_histogram_merged');
}

/**
 * The statistics of the days that lost or gained a pair computed again from the ledger (and of
 * the days after them a ramp reaches into), reading only those days' pairs and the days before
 * them a ramp reaches back to; returns how many days.
 */
async function recomputeDays(
  wh: Warehouse,
  options: MetricOptions,
  meta: { ledgerPairs: string; ledgerQuantiles: string },
): Promise<number> {
  const reach = rampDays(options);
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_stats_redo AS
    SELECT DISTINCT chunk + unnest(range(0, ${reach + 1})) AS chunk FROM acc_stats_days`);
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_stats_read AS
    SELECT DISTINCT chunk - unnest(range(0, ${reach + 1})) AS chunk FROM acc_stats_redo`);
  const pairs = `(SELECT * FROM ${meta.ledgerPairs} WHERE ${DAY_SQL} IN (SELECT chunk FROM acc_stats_read))`;
  const quantiles = (await quantilesOf(wh, meta))
    ? `(SELECT * FROM ${meta.ledgerQuantiles} WHERE pid IN (SELECT pid FROM ${pairs}))`
    : null;
  await wh.run(`DELETE FROM ${STATS} WHERE chunk IN (SELECT chunk FROM acc_stats_redo)`);
  await wh.run(`INSERT INTO ${STATS} SELECT * FROM (${statsSql(pairs, quantiles, options, DAY_SQL)})
    WHERE chunk IN (SELECT chunk FROM acc_stats_redo)`);
  const [{ days }] = await wh.all<{ days: bigint }>('SELECT count(*) AS days FROM acc_stats_redo');
  for (const table of ['acc_stats_redo', 'acc_stats_read']) await wh.run(`DROP TABLE ${table}`);
  return Number(days);
}
