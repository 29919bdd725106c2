// The SQL that reads a table's committed rows out of Parquet files, resolved as the single-file
// warehouse holds them: the newest row per key, each site's newest snapshot, or every row of a
// ledger. Used by the views file (live, replaying the Delta log), the seed of a shard's scratch
// warehouse and the compactor (both from the snapshot they read at their start).
import { quoteIdentifier, quoteLiteral } from '../warehouse/sql.js';
import type { TableSchema } from './schema.js';
import type { LakeFile } from './layout.js';

/** The table's columns, each cast to the warehouse's type (files written by older versions may lack some). */
export function castColumns(table: TableSchema, alias: string): string {
  return table.columns
    .map((c) => `CAST(${alias}.${quoteIdentifier(c.name)} AS ${c.type}) AS ${quoteIdentifier(c.name)}`)
    .join(', ');
}

/**
 * Resolves `source`, a query yielding the table's columns plus `seq` (the commit order) and
 * `lake_file` (the file), into the rows the warehouse would hold. `where` filters before
 * resolving (on key columns only). The newest row is the one of the greatest (seq, lake_file):
 * unique per key, as a key is in one file per commit.
 *
 * Not `QUALIFY row_number() OVER (... ORDER BY seq DESC) = 1`: DuckDB 1.5.6 rewrites that
 * (top_n_window_elimination) and, joined to the list of committed files, dropped whole files from a query that
 * read every column of the view (`SELECT count(*), string_agg(t::VARCHAR, '') FROM sites t`
 * counted 7 of 10 sites); the max() window form is not rewritten.
 */
export function resolvedSql(table: TableSchema, source: string, where = 'true'): string {
  const rows = `SELECT * FROM (${source}) WHERE ${where}`;
  const cols = table.columns.map((c) => quoteIdentifier(c.name)).join(', ');
  const version = `struct_pack(seq := seq, file := lake_file)`;
  switch (table.resolve.kind) {
    case 'all':
      return `SELECT ${cols} FROM (${rows})`;
    case 'site-snapshot':
      return `SELECT ${cols} FROM (${rows}) QUALIFY seq = max(seq) OVER (PARTITION BY site_id)`;
    case 'latest':
      return `SELECT ${cols} FROM (${rows})
QUALIFY ${version} = max(${version}) OVER (PARTITION BY ${table.resolve.key.map(quoteIdentifier).join(', ')})`;
  }
}

/** The rows of exactly these files (plus the table's empty schema file, so the list is never empty), with their seq. */
export function filesSource(table: TableSchema, schemaFile: string, files: readonly LakeFile[]): string {
  const list = [schemaFile, ...files.map((f) => f.file)].map(quoteLiteral).join(', ');
  const seqs =
    files.length === 0
      ? `SELECT NULL::VARCHAR AS filename, NULL::BIGINT AS seq WHERE false`
      : `SELECT * FROM (VALUES ${files.map((f) => `(${quoteLiteral(f.file)}, ${f.seq}::BIGINT)`).join(', ')}) AS f(filename, seq)`;
  return `SELECT ${castColumns(table, 'p')}, f.seq, p.filename AS lake_file FROM read_parquet([${list}], filename = true, union_by_name = true, hive_partitioning = false) p
JOIN (${seqs}) f ON f.filename = p.filename`;
}
