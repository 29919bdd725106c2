// The aligned-pairs relation: what the warehouse alignment writes into its temp table (acc_pairs)
// and the ledger keeps (accuracy_pairs, migration 012), one row per forecast point, scored or
// dropped. A pairs file (pairs.ts flatPairsSql) gives the same columns but reference_time, which
// only the warehouse's alignment and ledger need. Quantile forecasts live beside it as
// (pid, level DOUBLE in (0,1), q DOUBLE), complete for every scored pid (an incomplete set is
// dropped with reason 'quantiles').

/** The relation's columns in order, with their types as DuckDB names them (DESCRIBE). */
export const PAIR_COLUMNS = [
  /** Unique per row; quantiles refer to it. */
  { name: 'pid', type: 'BIGINT' },
  /** 'forecast' (site forecast), 'model' (one model's output), 'quantiles', 'pairs' (a pairs file). */
  { name: 'subject', type: 'VARCHAR' },
  /** The model scored (NULL for the site forecast, quantile sets and plain pairs). */
  { name: 'model', type: 'VARCHAR' },
  /** The site (NULL when unknown). */
  { name: 'site_id', type: 'VARCHAR' },
  /** The model that served a site-forecast value (group `model`), else NULL. */
  { name: 'served_model', type: 'VARCHAR' },
  { name: 'issue_time', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'valid_time', type: 'TIMESTAMP WITH TIME ZONE' },
  /** The instant the time groups read (see groupTimeSql). */
  { name: 'group_time', type: 'TIMESTAMP WITH TIME ZONE' },
  /** The valid time whose actual is the reference. */
  { name: 'reference_time', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'forecast', type: 'DOUBLE' },
  { name: 'actual', type: 'DOUBLE' },
  { name: 'reference', type: 'DOUBLE' },
  { name: 'capacity', type: 'DOUBLE' },
  /**
   * NULL when scored, else 'actual' | 'flagged' (its actual failed a data-quality check) |
   * 'forecast' | 'reference' | 'quantiles'.
   */
  { name: 'drop_reason', type: 'VARCHAR' },
] as const;

export type PairColumn = (typeof PAIR_COLUMNS)[number]['name'];

/** The columns as a SELECT list, each by its name unless `as` gives it an expression. */
export function pairColumnsSql(as: Partial<Record<PairColumn, string>> = {}): string {
  return PAIR_COLUMNS.map(({ name }) => as[name] ?? name).join(', ');
}

/** The columns with their types, for a CREATE TABLE. */
export function pairColumnsDdl(): string {
  return PAIR_COLUMNS.map(({ name, type }) => `${name} ${type}`).join(', ');
}
