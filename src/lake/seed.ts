/**
 * Seeds a shard run's scratch warehouse (freshly migrated) from the lake, so that the ordinary
 * sync jobs run against it as they would against the single-file warehouse:
 *   - the small tables (sites, models, sync_state, ...) whole, newest row per key: a site that
 *     moved shard when N changed continues from its sync state, and an unchanged site or model
 *     is not written again;
 *   - forecasts, model outputs and actuals of the shard's sites from the oldest point the run can
 *     re-read (sync_state minus the lookback, or the backfill's start): the loader's anti-join
 *     and the actuals' revision logic see what is stored there.
 * Each seeded row is also kept in schema `lake_seed`, so the commit writes only what differs.
 */
import { instantLiteral, quoteIdentifier, quoteLiteral } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { join } from 'node:path';
import { lakeFiles, SCHEMA_FILE, tableDir } from './layout.js';
import { filesSource, resolvedSql } from './read.js';
import { warehouseSchema, type TableSchema } from './schema.js';
import { shardOf, type Shard } from './shard.js';

export interface SeedOptions {
  shard: Shard | undefined;
  /** config.sync.lookback (ms). */
  lookback: number;
  /** The start of a --from/--to backfill window (epoch ms), when the run backfills. */
  backfillFrom?: number;
}

export interface Seeded {
  /** Rows seeded per table (only non-zero). */
  rows: Record<string, number>;
  /** The shard's sites known to the lake. */
  sites: number;
  /** Series rows seeded from this valid time on; null when the shard has no sites in the lake yet. */
  windowFrom: number | null;
}

export async function seedFromLake(warehouse: Warehouse, lake: string, options: SeedOptions): Promise<Seeded> {
  const schema = await warehouseSchema();
  const files = await lakeFiles(lake);
  const source = (table: TableSchema) =>
    filesSource(table, join(tableDir(lake, table.name), SCHEMA_FILE), files.get(table.name) ?? []);
  const rows: Record<string, number> = {};
  return warehouse.transaction(async () => {
    await warehouse.run('CREATE SCHEMA lake_seed');
    for (const table of schema.tables) {
      if (table.seed === 'none') continue;
      await warehouse.run(
        `CREATE TABLE lake_seed.${quoteIdentifier(table.name)} AS SELECT * FROM main.${quoteIdentifier(table.name)} LIMIT 0`,
      );
      if (table.seed === 'all') await seedTable(warehouse, table, resolvedSql(table, source(table)), rows);
    }
    const sites = await shardSites(warehouse, options.shard);
    await warehouse.run('CREATE TEMP TABLE lake_shard_sites (site_id VARCHAR PRIMARY KEY)');
    if (sites.length > 0)
      await warehouse.run(
        `INSERT INTO temp.lake_shard_sites VALUES ${sites.map((s) => `(${quoteLiteral(s)})`).join(', ')}`,
      );
    const windowFrom = options.backfillFrom ?? (await oldestReread(warehouse, options.lookback));
    if (sites.length > 0 && windowFrom !== null) {
      const where = `site_id IN (SELECT site_id FROM temp.lake_shard_sites) AND valid_time >= ${instantLiteral(windowFrom)}`;
      for (const table of schema.tables.filter((t) => t.seed === 'window')) {
        await seedTable(warehouse, table, resolvedSql(table, source(table), where), rows);
      }
    }
    for (const table of schema.tables.filter((t) => t.seed !== 'none' && rows[t.name])) {
      // A migration may have put default rows in (interval_labels): what the lake holds wins.
      await warehouse.run(`DELETE FROM main.${quoteIdentifier(table.name)}`);
      await warehouse.run(
        `INSERT INTO main.${quoteIdentifier(table.name)} SELECT * FROM lake_seed.${quoteIdentifier(table.name)}`,
      );
    }
    return { rows, sites: sites.length, windowFrom: sites.length > 0 ? windowFrom : null };
  });
}

async function seedTable(
  warehouse: Warehouse,
  table: TableSchema,
  sql: string,
  rows: Record<string, number>,
): Promise<void> {
  const n = await warehouse.changed(`INSERT INTO lake_seed.${quoteIdentifier(table.name)} ${sql}`);
  if (n > 0) rows[table.name] = (rows[table.name] ?? 0) + n;
}

/** The sites the lake knows (from sites and sync_state) that fall in the shard. */
async function shardSites(warehouse: Warehouse, shard: Shard | undefined): Promise<string[]> {
  const known = await warehouse.all<{ site_id: string }>(
    'SELECT site_id FROM lake_seed.sites UNION SELECT site_id FROM lake_seed.sync_state',
  );
  return known.map((r) => r.site_id).filter((id) => !shard || shardOf(id, shard.count) === shard.index);
}

/** The oldest valid time an incremental run re-reads: the oldest sync_state point of the shard's sites minus the lookback. */
async function oldestReread(warehouse: Warehouse, lookback: number): Promise<number | null> {
  const [row] = await warehouse.all<{ oldest: bigint | null }>(
    'SELECT epoch_ms(min(synced_to)) AS oldest FROM lake_seed.sync_state WHERE site_id IN (SELECT site_id FROM temp.lake_shard_sites)',
  );
  return row.oldest === null ? null : Number(row.oldest) - lookback;
}
