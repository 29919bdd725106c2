/**
 * Commits a shard run's scratch warehouse to the lake: the rows that differ from what was seeded
 * (everything, for tables not seeded) are written by DuckDB as Parquet under
 * <lake>/_staging/<who>-<run>/, moved into the table folders, and then ONE manifest entry listing
 * them is renamed into place: the commit point. Until it lands no reader sees any of the files
 * through the manifest; a run killed before it leaves files that its shard's next run removes
 * (layout.ts removeUncommitted).
 */
import { quoteIdentifier, quoteLiteral } from '../warehouse/sql.js';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Warehouse } from '../warehouse/warehouse.js';
import { lakePath, moveIntoLake, STAGING_DIR, writeManifest, type ManifestFile } from './layout.js';
import { warehouseSchema, type TableSchema } from './schema.js';
import { formatShard, type Shard } from './shard.js';

export interface CommitInput {
  lake: string;
  /** File-name tag of the writer (s1of4). */
  who: string;
  shard: Shard | undefined;
  runId: string;
}

export interface Committed {
  /** Rows committed per table (only non-zero). */
  rows: Record<string, number>;
  files: number;
  manifest: string | null;
}

export async function commitToLake(warehouse: Warehouse, input: CommitInput): Promise<Committed> {
  const schema = await warehouseSchema();
  const staging = join(lakePath(input.lake), STAGING_DIR, `${input.who}-${input.runId}`);
  const rows: Record<string, number> = {};
  const files: ManifestFile[] = [];
  const seq = Date.now();
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    for (const table of schema.tables) {
      const count = await stageTable(warehouse, table, staging, `part-${input.who}-${input.runId}`);
      if (count === 0) continue;
      rows[table.name] = count;
      const perFile = await fileRows(warehouse, join(staging, table.name));
      for (const path of moveIntoLake(input.lake, staging, table.name)) {
        files.push({ table: table.name, path, rows: perFile.get(path.split('/').slice(1).join('/')) ?? 0, seq });
      }
    }
    if (files.length === 0) return { rows, files: 0, manifest: null };
    const manifest = writeManifest(input.lake, {
      run_id: input.runId,
      kind: 'sync',
      shard: formatShard(input.shard),
      committed_at: new Date(seq).toISOString(),
      files,
      replaces: [],
    });
    return { rows, files: files.length, manifest };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Writes the table's new rows as Parquet under `<staging>/<table>/`; returns how many. */
async function stageTable(warehouse: Warehouse, table: TableSchema, staging: string, prefix: string): Promise<number> {
  await warehouse.run(`CREATE OR REPLACE TEMP TABLE lake_new AS ${newRowsSql(table)}`);
  try {
    const [{ n }] = await warehouse.all<{ n: bigint }>('SELECT count(*) AS n FROM temp.lake_new');
    if (n === 0n) return 0;
    const order = clusterOrder(table);
    const dir = join(staging, table.name);
    if (table.partition === 'month') {
      await warehouse.run(`COPY (SELECT *, ${monthOf('valid_time')} AS month FROM temp.lake_new ORDER BY ${order})
        TO ${quoteLiteral(dir)} (FORMAT parquet, PARTITION_BY (month), FILENAME_PATTERN ${quoteLiteral(`${prefix}-{i}`)})`);
    } else {
      mkdirSync(dir, { recursive: true });
      await warehouse.run(
        `COPY (SELECT * FROM temp.lake_new ORDER BY ${order}) TO ${quoteLiteral(join(dir, `${prefix}-0.parquet`))} (FORMAT parquet)`,
      );
    }
    return Number(n);
  } finally {
    await warehouse.run('DROP TABLE IF EXISTS temp.lake_new');
  }
}

/** The rows of the scratch table that the lake does not hold yet. */
export function newRowsSql(table: TableSchema): string {
  const name = quoteIdentifier(table.name);
  const cols = table.columns.map((c) => quoteIdentifier(c.name)).join(', ');
  const current = `SELECT ${cols} FROM main.${name}`;
  if (table.seed === 'none') return current;
  const seeded = `SELECT ${cols} FROM lake_seed.${name}`;
  if (table.resolve.kind !== 'site-snapshot') return `${current} EXCEPT ${seeded}`;
  // A site's set changed (a row added, changed or gone): its whole new set is committed.
  return `${current} WHERE site_id IN (
    SELECT site_id FROM (${current} EXCEPT ${seeded}) UNION SELECT site_id FROM (${seeded} EXCEPT ${current}))`;
}

/** UTC month (YYYY-MM) of a TIMESTAMPTZ column, whatever the session's time zone. */
export function monthOf(column: string): string {
  return `strftime(make_timestamp(epoch_us(${quoteIdentifier(column)})), '%Y-%m')`;
}

/** Rows sorted by key (site first), so row-group min/max let readers skip other sites. */
export function clusterOrder(table: TableSchema): string {
  const names = table.columns.map((c) => c.name);
  const key =
    table.resolve.kind === 'latest' ? [...table.resolve.key] : names.includes('site_id') ? ['site_id'] : [names[0]];
  const first = names.includes('site_id') ? ['site_id', ...key.filter((k) => k !== 'site_id')] : key;
  return first.map(quoteIdentifier).join(', ');
}

/** Rows of each Parquet file under `dir`, by path relative to `dir`. */
async function fileRows(warehouse: Warehouse, dir: string): Promise<Map<string, number>> {
  const rows = await warehouse.all<{ file_name: string; num_rows: bigint }>(
    `SELECT file_name, num_rows FROM parquet_file_metadata(${quoteLiteral(`${dir}/**/*.parquet`)})`,
  );
  return new Map(
    rows.map((r) => [
      r.file_name
        .slice(dir.length + 1)
        .split('\\')
        .join('/'),
      Number(r.num_rows),
    ]),
  );
}
