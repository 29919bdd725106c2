// The one way to put a name, a text or an instant into SQL.
//
// Instants: every instant reaches DuckDB as epoch milliseconds UTC, a plain JS number, and
// becomes a TIMESTAMPTZ in SQL through instant(): bound as a parameter (`${instant('$3')}` with
// the number as $3), or, for bulk rows, as a DOUBLE column of a data chunk (the loader's
// staging) converted by instant() in the merge. A number has no zone and no format to get
// wrong; text (ISO strings cast with ::TIMESTAMPTZ) and make_timestamptz at call sites are not
// used. Reading back, epoch_ms(column) gives the number again (whole ms; epoch_us(column) / 1000
// keeps the microseconds, where they matter: a vintage's issue time).
import { DAY } from '../time.js';

/** `"name"`: an identifier, whatever characters it holds. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `'it''s'`: a string literal, for SQL built as text (parameters are better where they fit). */
export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** A SQL list of string literals: constant filters let DuckDB skip row groups by their min/max. */
export function sqlList(values: readonly string[]): string {
  return values.map(quoteLiteral).join(', ');
}

/**
 * SQL turning an epoch-ms expression (a parameter such as `$3`, a DOUBLE column, or a number
 * written by instantLiteral) into a TIMESTAMPTZ; NULL stays NULL. The fraction of a millisecond
 * is kept to the microsecond, TIMESTAMPTZ's precision: the service's issue times carry
 * microseconds, and a vintage stored a fraction early would not be the one read.
 */
export function instant(expression: string): string {
  return `make_timestamptz(CAST(CAST(${expression} AS DOUBLE) * 1000 AS BIGINT))`;
}

/** An instant (epoch ms) written into SQL text, where the statement is built as text anyway. */
export function instantLiteral(ms: number): string {
  return instant(String(Math.round(ms * 1000) / 1000));
}

/**
 * The UTC day (a DATE) of an epoch-day expression (days since 1970-01-01, as epochDayOf
 * gives): by arithmetic, so the session's TimeZone cannot move a day.
 */
export function dateOfEpochDay(epochDay: string): string {
  return `(DATE '1970-01-01' + CAST(${epochDay} AS INTEGER))`;
}

/** The UTC epoch day (days since 1970-01-01, a BIGINT) of a TIMESTAMPTZ expression. */
export function epochDayOf(expression: string): string {
  return `(epoch_ms(${expression}) // ${DAY})`;
}

/** Columns as one text for a digest (digestPerSiteSql): each cast to text, NULL as '-', joined by '/'. */
export function digestTextSql(...columns: string[]): string {
  return columns.map((c) => `coalesce(CAST(${c} AS VARCHAR), '-')`).join(` || '/' || `);
}

/**
 * Per site_id, the md5 of the texts `parts` give it (queries of site_id and x, a text, each x
 * prefixed by what it is), sorted: a digest of what rows made for a site depend on, compared with
 * the one recorded when they were made, so that a change to one site redoes that site alone.
 */
export function digestPerSiteSql(parts: readonly string[]): string {
  return `SELECT site_id, md5(string_agg(x, '|' ORDER BY x)) AS digest FROM (${parts.join('\n  UNION ALL ')}) GROUP BY site_id`;
}
