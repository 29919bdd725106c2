// The SQL that reads a table's committed rows out of Parquet files, resolved as the single-file
// warehouse holds them: the newest row per key, each site's newest snapshot, or every row of a
// ledger. Used by the views file (live, from the manifest), the seed of a shard's scratch
// warehouse and the compactor (both from the file list they read at their start).
import { ident, literal, type TableSchema } from './schema.js';
import type { CommittedFile } from './layout.js';

/** The table's columns, each cast to the warehouse's type (files written by older versions may lack some). */
export function castColumns(table: TableSchema): string {
  return table.columns.map((c) => `CAST(${ident(c.name)} AS ${c.type}) AS ${ident(c.name)}`).join(', ');
}

/**
 * Resolves `source`, a query yielding the table's columns plus `seq` (the commit order), into
 * the rows the warehouse would hold. `where` filters before resolving (on key columns only).
 */
export function resolvedSql(table: TableSchema, source: string, where = 'true'): string {
  const rows = `SELECT * FROM (${source}) WHERE ${where}`;
  const cols = table.columns.map((c) => ident(c.name)).join(', ');
  switch (table.resolve.kind) {
    case 'all':
      return `SELECT ${cols} FROM (${rows})`;
    case 'site-snapshot':
      return `SELECT ${cols} FROM (${rows}) QUALIFY seq = max(seq) OVER (PARTITION BY site_id)`;
    case 'latest':
      return `SELECT ${cols} FROM (${rows})
QUALIFY row_number() OVER (PARTITION BY ${table.resolve.key.map(ident).join(', ')} ORDER BY seq DESC) = 1`;
  }
}

/** The rows of exactly these files (plus the table's empty schema file, so the list is never empty), with their seq. */
export function filesSource(table: TableSchema, schemaFile: string, files: readonly CommittedFile[]): string {
  const list = [schemaFile, ...files.map((f) => f.file)].map(literal).join(', ');
  const seqs = files.length === 0 ? `SELECT NULL::VARCHAR AS filename, NULL::BIGINT AS seq WHERE false`
    : `SELECT * FROM (VALUES ${files.map((f) => `(${literal(f.file)}, ${f.seq}::BIGINT)`).join(', ')}) AS f(filename, seq)`;
  return `SELECT ${castColumns(table)}, f.seq FROM read_parquet([${list}], filename = true, union_by_name = true) p
JOIN (${seqs}) f ON f.filename = p.filename`;
}
