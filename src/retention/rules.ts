// What retention removes (docs/warehouse.md, "Retention"), and nothing of how: the tables it
// reaches, the instant before which each loses rows, and the SQL that tells the rows kept from
// those that go, written over any relation with the table's columns (the warehouse's tables now;
// Parquet files of closed months as well, so that both keep exactly the same rows). Every
// decision is per series and valid time, so a slice of days and sites is decided alone.
import { DAY, startOfUtcDay } from '../time.js';
import { quoteIdentifier } from '../warehouse/sql.js';

/** A vintage kept past `all_vintages`: the day-ahead one, the last one, or the last issued at least this many ms before. */
export type KeptVintage = 'day_ahead' | 'latest' | number;

export interface RetentionPolicy {
  /** Every vintage is kept this long after its valid time (whole UTC days), then only `keep`. */
  allVintagesMs: number;
  keep: readonly KeptVintage[];
  /** Revisions of actuals are kept this long after their valid time. */
  actualRevisionsMs: number;
}

/**
 * A table retention reaches, by its rule: `vintages` keeps the `keep` vintages (`issue` the issue
 * time, `series` what a valid time is forecast for), `revisions` drops whole days, `ledger` drops
 * the accuracy pairs (and their quantiles) before the ledger's window.
 */
export type RetainedTable =
  | { table: 'forecasts' | 'model_outputs'; rule: 'vintages'; series: readonly string[]; issue: string }
  | { table: 'actual_revisions' | 'actual_revisions_by_type'; rule: 'revisions' }
  | { table: 'accuracy_pairs'; rule: 'ledger' };

export const RETAINED_TABLES: readonly RetainedTable[] = [
  // partitioned as the views forecast_latest and forecast_day_ahead are
  { table: 'forecasts', rule: 'vintages', series: ['site_id'], issue: 'update_time' },
  // a model's outputs are per site (models are keyed by site and model, migration 020)
  { table: 'model_outputs', rule: 'vintages', series: ['site_id', 'model_id'], issue: 'as_of' },
  { table: 'actual_revisions', rule: 'revisions' },
  { table: 'actual_revisions_by_type', rule: 'revisions' },
  { table: 'accuracy_pairs', rule: 'ledger' },
];

/** The quantiles of the ledger's pairs: they go with their pair. */
export const LEDGER_QUANTILES = 'accuracy_pair_quantiles';

/**
 * The UTC midnight before which `table` loses rows, or null when it loses none. Vintages go no
 * later than the start of the accuracy ledger's window (`ledgerFrom`, the last score's): the next
 * incremental score re-aligns any vintage whose points in that window changed in number, so
 * removing one there would change its scores. The ledger's pairs before that window are read by
 * no score and no stored statistic; without a ledger state the next score aligns everything anew,
 * and `ledgerFrom` is -Infinity when the ledger's window is open at its start.
 */
export function cutoffOf(
  table: RetainedTable,
  policy: RetentionPolicy,
  now: number,
  ledgerFrom: number | null,
): number | null {
  const before = {
    vintages: Math.min(now - policy.allVintagesMs, ledgerFrom ?? Number.POSITIVE_INFINITY),
    revisions: now - policy.actualRevisionsMs,
    ledger: ledgerFrom ?? Number.NEGATIVE_INFINITY,
  }[table.rule];
  // A ledger whose window is open at its start reaches back to every valid time.
  return Number.isFinite(before) ? startOfUtcDay(before) : null;
}

/**
 * Per series and valid time of `source` (rows matching `where`), the issue times kept, as rows
 * (series, valid_time, kept_issue). The day-ahead vintage is the view forecast_day_ahead's: the
 * last issued on the UTC day before that of the value's interval (`ending`: the interval ends at
 * valid_time, so 00:00 belongs to the day before).
 */
export function keptVintagesSql(
  table: Extract<RetainedTable, { rule: 'vintages' }>,
  keep: readonly KeptVintage[],
  source: string,
  where: string,
  ending: boolean,
): string {
  const issue = quoteIdentifier(table.issue);
  const series = table.series.map((column) => quoteIdentifier(column)).join(', ');
  const picks = keep.map((kept) => {
    if (kept === 'latest') return `max(${issue})`;
    if (kept === 'day_ahead')
      return `max(${issue}) FILTER (WHERE epoch_ms(${issue}) // ${DAY} = (epoch_ms(valid_time) - ${ending ? 1 : 0}) // ${DAY} - 1)`;
    return `max(${issue}) FILTER (WHERE epoch_ms(valid_time) - epoch_ms(${issue}) >= ${Math.round(kept)})`;
  });
  return `SELECT DISTINCT ${series}, valid_time, kept_issue FROM (
      SELECT ${series}, valid_time, unnest(picks) AS kept_issue FROM (
        SELECT ${series}, valid_time, [${picks.join(', ')}] AS picks
        FROM ${source} WHERE ${where} GROUP BY ${series}, valid_time))
    WHERE kept_issue IS NOT NULL`;
}

/** Whether the row `alias` of a vintage table is one that goes: its vintage is not in `kept` (keptVintagesSql's rows). */
export function vintageGoesSql(
  table: Extract<RetainedTable, { rule: 'vintages' }>,
  alias: string,
  kept: string,
): string {
  const series = table.series.map((column) => `k.${quoteIdentifier(column)} = ${alias}.${quoteIdentifier(column)}`);
  return `NOT EXISTS (SELECT 1 FROM ${kept} k WHERE ${series.join(' AND ')}
    AND k.valid_time = ${alias}.valid_time AND k.kept_issue = ${alias}.${quoteIdentifier(table.issue)})`;
}
