/**
 * Copy-on-write of a shard's commit to one table: what the run supersedes (the keys of its new
 * rows, and the rows it deleted) is looked up in the table's active files, and each file holding
 * such a row is written again without it, with the run's new rows, so the table's active files
 * hold one row per key, as the single-file warehouse does (docs/lake.md, "The commit protocol").
 * The add stats' bounds and the month partition narrow the files to read; DuckDB reads those.
 *
 * What a row supersedes, by table (src/lake/tables.ts):
 *   latest, seeded:      its key; a seeded key the run no longer holds was deleted by the run
 *   site-snapshot:       the whole set of each site whose set changed (it may shrink to nothing)
 *   all, seeded:         nothing; a seeded row the run no longer holds was deleted by the run
 *   latest, not seeded (revisions, ledgers): its key (a rerun writing a revision again)
 *   all, not seeded:     nothing, append only
 */
import { quoteIdentifier, quoteLiteral } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { join } from 'node:path';
import { type LakeFile, MONTH, SCHEMA_FILE } from './layout.js';
import { filesSource } from './read.js';
import type { TableSchema } from './schema.js';

/** The temp tables of one table's commit: its new rows, and the keys (or rows) it supersedes. */
export const NEW_ROWS = 'temp.lake_new';
export const GONE = 'temp.lake_gone';

/** The columns naming what a row supersedes; null for a table whose commits only append. */
export function supersededBy(table: TableSchema): string[] | null {
  switch (table.resolve.kind) {
    case 'latest':
      return [...table.resolve.key];
    case 'site-snapshot':
      return table.seed === 'none' ? null : ['site_id'];
    case 'all':
      return table.seed === 'none' ? null : table.columns.map((c) => c.name);
  }
}

/**
 * Creates NEW_ROWS, the rows of the scratch table the lake does not hold yet, and GONE, what
 * they supersede plus what the run deleted; the number of each.
 */
export async function stageChanges(warehouse: Warehouse, table: TableSchema): Promise<{ rows: number; gone: number }> {
  const name = quoteIdentifier(table.name);
  const cols = table.columns.map((c) => quoteIdentifier(c.name)).join(', ');
  const current = `SELECT ${cols} FROM main.${name}`;
  const seeded = `SELECT ${cols} FROM lake_seed.${name}`;
  const key = supersededBy(table);
  const keyCols = (key ?? []).map(quoteIdentifier).join(', ');
  let rows = table.seed === 'none' ? current : `${current} EXCEPT ${seeded}`;
  let gone = `SELECT ${cols} FROM main.${name} WHERE false`;
  if (key !== null && table.resolve.kind === 'site-snapshot') {
    // A site's set changed (a row added, changed or gone): its whole new set replaces the old.
    gone = `SELECT site_id FROM (${current} EXCEPT ${seeded}) UNION SELECT site_id FROM (${seeded} EXCEPT ${current})`;
    rows = `${current} WHERE site_id IN (SELECT site_id FROM temp.lake_gone)`;
  } else if (key !== null && table.resolve.kind === 'latest') {
    const deleted = `SELECT ${keyCols} FROM lake_seed.${name} EXCEPT SELECT ${keyCols} FROM main.${name}`;
    gone = `SELECT ${keyCols} FROM (${rows})${table.seed === 'none' ? '' : ` UNION SELECT * FROM (${deleted})`}`;
  } else if (key !== null) {
    gone = `${seeded} EXCEPT ${current}`;
  }
  await warehouse.run(`CREATE OR REPLACE TEMP TABLE lake_gone AS ${gone}`);
  await warehouse.run(`CREATE OR REPLACE TEMP TABLE lake_new AS ${rows}`);
  const [counts] = await warehouse.all<{ rows: bigint; gone: bigint }>(
    `SELECT (SELECT count(*) FROM ${NEW_ROWS}) AS rows, (SELECT count(*) FROM ${GONE}) AS gone`,
  );
  return { rows: Number(counts.rows), gone: Number(counts.gone) };
}

export async function dropChanges(warehouse: Warehouse): Promise<void> {
  await warehouse.run(`DROP TABLE IF EXISTS ${NEW_ROWS}; DROP TABLE IF EXISTS ${GONE}`);
}

/**
 * The files among `files` (of the table at `dir`) that hold a row GONE names: first those whose
 * add stats and month may hold one, then, read by DuckDB, those that do.
 */
export async function filesHolding(
  warehouse: Warehouse,
  table: TableSchema,
  dir: string,
  files: readonly LakeFile[],
): Promise<LakeFile[]> {
  const key = supersededBy(table);
  if (key === null || files.length === 0) return [];
  const maybe = new Set((await warehouse.all<{ path: string }>(candidatesSql(table, key, files))).map((r) => r.path));
  const candidates = files.filter((f) => maybe.has(f.path));
  if (candidates.length === 0) return [];
  const holding = new Set(
    (
      await warehouse.all<{ lake_file: string }>(
        `SELECT DISTINCT r.lake_file FROM (${filesSource(table, join(dir, SCHEMA_FILE), candidates)}) r
         SEMI JOIN ${GONE} g ON ${matches(key)}`,
      )
    ).map((r) => r.lake_file),
  );
  return candidates.filter((f) => holding.has(f.file));
}

/** The rows a copy-on-write commit writes: those of `holding` that GONE does not name, and the new rows. */
export function rewriteSql(table: TableSchema, dir: string, holding: readonly LakeFile[]): string {
  const cols = table.columns.map((c) => quoteIdentifier(c.name)).join(', ');
  const fresh = `SELECT ${cols} FROM ${NEW_ROWS}`;
  const key = supersededBy(table);
  if (key === null || holding.length === 0) return fresh;
  return `SELECT ${cols} FROM (${filesSource(table, join(dir, SCHEMA_FILE), holding)}) r
ANTI JOIN ${GONE} g ON ${matches(key)}
UNION ALL ${fresh}`;
}

/** Null-safe equality of the key columns of `r` and `g`. */
function matches(key: readonly string[]): string {
  return key.map((k) => `r.${quoteIdentifier(k)} IS NOT DISTINCT FROM g.${quoteIdentifier(k)}`).join(' AND ');
}

/**
 * The files whose bounds (the add stats' min/max of each key column that has them, and the month
 * partition) overlap those of GONE's rows of one site and month. A bound a file lacks (a string
 * longer than the stats keep, a column with no stats) does not narrow.
 */
function candidatesSql(table: TableSchema, key: readonly string[], files: readonly LakeFile[]): string {
  const types = new Map(table.columns.map((c) => [c.name, c.type]));
  const bounded = key.filter((k) =>
    /^(VARCHAR|BIGINT|INTEGER|DOUBLE|TIMESTAMP WITH TIME ZONE|DATE)$/.test(types.get(k) ?? ''),
  );
  const bySite = bounded.includes('site_id');
  const month = table.partition === 'month' && key.includes('valid_time');
  const groups = [
    ...(month ? [`strftime(make_timestamp(epoch_us(valid_time)), '%Y-%m') AS ${MONTH}`] : []),
    ...(bySite ? ['site_id'] : []),
  ];
  const ranged = bounded.filter((k) => k !== 'site_id');
  const box = `SELECT ${[
    ...groups,
    ...ranged.flatMap((k, i) => [`min(${quoteIdentifier(k)}) AS lo${i}`, `max(${quoteIdentifier(k)}) AS hi${i}`]),
    'count(*) AS n',
  ].join(', ')} FROM ${GONE}${groups.length > 0 ? ' GROUP BY ALL' : ''} HAVING count(*) > 0`;
  const bound = (k: string, which: 'min' | 'max') =>
    `TRY_CAST(json_extract_string(f.stats, ${quoteLiteral(`$.${which}Values.${k}`)}) AS ${types.get(k)})`;
  const conditions = [
    ...(month ? [`f.${MONTH} IS NOT DISTINCT FROM b.${MONTH}`] : []),
    ...(bySite
      ? [
          `coalesce(b.site_id >= ${bound('site_id', 'min')}, true)`,
          `coalesce(b.site_id <= ${bound('site_id', 'max')}, true)`,
        ]
      : []),
    ...ranged.flatMap((k, i) => [
      `coalesce(b.hi${i} >= ${bound(k, 'min')}, true)`,
      `coalesce(b.lo${i} <= ${bound(k, 'max')}, true)`,
    ]),
  ];
  const values = files
    .map(
      (f) =>
        `(${quoteLiteral(f.path)}, ${month ? quoteLiteral(f.add.partitionValues[MONTH] ?? '') : 'NULL'}, ${quoteLiteral(f.add.stats ?? '{}')})`,
    )
    .join(', ');
  return `SELECT DISTINCT f.path FROM (VALUES ${values}) f(path, ${MONTH}, stats)
JOIN (${box}) b ON ${conditions.length > 0 ? conditions.join(' AND ') : 'true'}`;
}
