/**
 * Commits a shard run's scratch warehouse to the lake: per table, the rows that differ from what
 * was seeded (everything, for tables not seeded) are written by DuckDB as Parquet (staged under
 * <lake>/_staging/, then renamed into the table's folder) and added to the table by one Delta
 * commit. Delta commits one table at a time: the series and small tables first, sync_state and
 * the run ledger last, so a shard killed between two tables has never advanced a sync state past
 * rows the lake lacks, and its rerun (seeded from what did land) commits the rest.
 */
import { quoteIdentifier } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { commit } from './delta/commit.js';
import { writeDataFiles } from './delta/files.js';
import { listLog } from './delta/log.js';
import { lakePath, MONTH, SEQ_TAG, STAGING_DIR, tableDir } from './layout.js';
import { warehouseSchema, type TableSchema } from './schema.js';
import { formatShard, type Shard } from './shard.js';
import { join } from 'node:path';

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
  /** The Delta version committed per table. */
  versions: Record<string, number>;
}

/** Tables committed last: the watermark and the run's ledger rows land after the data they describe. */
const LAST = ['sync_state', 'runs', 'run_failures'];

export async function commitToLake(warehouse: Warehouse, input: CommitInput): Promise<Committed> {
  const schema = await warehouseSchema();
  const ordered = [
    ...schema.tables.filter((t) => !LAST.includes(t.name)),
    ...schema.tables.filter((t) => LAST.includes(t.name)),
  ];
  const seq = Date.now();
  const committed: Committed = { rows: {}, files: 0, versions: {} };
  for (const table of ordered) {
    const dir = tableDir(input.lake, table.name);
    const readVersion = listLog(dir).commits.at(-1) ?? -1;
    const adds = await warehouse.exclusive(async () => {
      await warehouse.run(`CREATE OR REPLACE TEMP TABLE lake_new AS ${newRowsSql(table)}`);
      try {
        return await writeDataFiles(warehouse.connection, {
          table: dir,
          query: `SELECT *${table.partition === 'month' ? `, ${monthOf('valid_time')} AS ${MONTH}` : ''} FROM temp.lake_new ORDER BY ${clusterOrder(table)}`,
          partitionColumns: table.partition === 'month' ? [MONTH] : [],
          prefix: `part-${input.who}-${input.runId}`,
          statsColumns: statsColumns(table),
          dataChange: true,
          staging: join(lakePath(input.lake), STAGING_DIR),
          tags: { [SEQ_TAG]: String(seq) },
        });
      } finally {
        await warehouse.run('DROP TABLE IF EXISTS temp.lake_new');
      }
    });
    if (adds.length === 0) continue;
    const done = await commit({
      table: dir,
      readVersion,
      operation: 'WRITE',
      actions: adds.map((add) => ({ add })),
      info: { efsync: { kind: 'sync', run_id: input.runId, shard: formatShard(input.shard) } },
    });
    committed.rows[table.name] = adds.reduce((sum, a) => sum + Number(JSON.parse(a.stats ?? '{}').numRecords ?? 0), 0);
    committed.files += adds.length;
    committed.versions[table.name] = done.version;
  }
  return committed;
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

/** Key columns first, site first: the order files are sorted in, so row-group min/max let readers skip other sites. */
function keyColumns(table: TableSchema): string[] {
  const names = table.columns.map((c) => c.name);
  const key =
    table.resolve.kind === 'latest' ? [...table.resolve.key] : names.includes('site_id') ? ['site_id'] : [names[0]];
  return names.includes('site_id') ? ['site_id', ...key.filter((k) => k !== 'site_id')] : key;
}

export function clusterOrder(table: TableSchema): string {
  return keyColumns(table).map(quoteIdentifier).join(', ');
}

/** The add stats' columns: the key columns and valid_time, where a table has one. */
export function statsColumns(table: TableSchema): string[] {
  const names = table.columns.map((c) => c.name);
  return [...new Set([...keyColumns(table), ...(names.includes('valid_time') ? ['valid_time'] : [])])];
}
