// The series (forecasts, model outputs, actuals, actuals of other types) and their merges: what a
// batch staged (staging.ts) goes into the core tables by an anti-join on each table's key (the
// SQL is merge.ts's), and the rows written are counted per site. The commit queue
// (commit-queue.ts) runs them, every kind of a batch in one transaction.
// No key is staged twice, so the merges take the staged rows as they are: keys are made unique
// in one place, the loader (each load's, by dedupe.ts's rule: the last read wins, and within one
// the greatest value), and a batch holds one load per site and kind (commit-queue.ts).
import {
  actualChangesSql,
  applyActualChangesSql,
  POWER_ACTUALS,
  TYPED_ACTUALS,
  type ActualsTarget,
  freshForecastsSql,
  freshOutputsSql,
} from './merge.js';
import { flagPending, markFlagsPending, type QualitySettings } from './flags.js';
import { nonZero, type RowsWritten } from './rows.js';
import { sqlList } from './sql.js';
import { StoredVintages } from './stored-vintages.js';
import type { Staged, StagingTables } from './staging.js';
import type { SyncStateUpdate } from './sync-state.js';
import type { VintageBookkeeping } from './vintage-reads.js';
import type { Warehouse } from './warehouse.js';

export interface LoadOptions {
  /** The clock for synced_at, first_seen_at, replaced_at, observed_at; default Date.now(). */
  now?: number;
  /** Written in the same transaction as the data. */
  syncState?: SyncStateUpdate;
  /** The vintages this load defers and the pending ones it stores (vintage-reads.ts), in the same transaction. */
  vintageReads?: VintageBookkeeping;
  /** Thresholds of the data-quality flags, to compute those of a load of (power) actuals in its transaction; without, they stay pending (flags.ts, flagPending). */
  quality?: QualitySettings;
}

export type SeriesKind = 'forecasts' | 'outputs' | 'actuals' | 'typed_actuals';

export interface Series extends StagingTables {
  /**
   * Merges what is staged for `sites`; rows written per site. `options`: those of the batch's
   * first load; `staged`: what was staged.
   */
  merge(warehouse: Warehouse, sites: string[], options: LoadOptions, staged: Staged): Promise<Map<string, RowsWritten>>;
}

/**
 * A series of vintages (forecasts, model outputs): a vintage is a block, staged with its
 * `vintage` columns once in `vintages`, not on each of its rows (copying a model output's
 * model_id and model_name into every row was ~12% of the sync's main thread), and only the rows
 * of new keys inserted into `table`.
 */
function vintageSeries(
  name: string,
  vintage: string,
  table: string,
  freshSql: (sites: string, anyStored: boolean) => string,
): Series {
  return {
    staging: `stage_${name}`,
    definition: 'site_no INTEGER, block_no INTEGER, valid_time DOUBLE, forecast DOUBLE, capacity DOUBLE',
    shared: { table: `stage_${name.replace(/s$/, '')}_vintages`, definition: vintage },
    merge: (warehouse, sites, _options, staged) => insertFresh(warehouse, sites, freshSql, table, staged),
  };
}

export const SERIES: Record<SeriesKind, Series> = {
  forecasts: vintageSeries(
    'forecasts',
    'model_name VARCHAR, model_version INTEGER, update_time DOUBLE',
    'forecasts',
    freshForecastsSql,
  ),
  outputs: vintageSeries(
    'outputs',
    'model_id VARCHAR, model_name VARCHAR, model_version INTEGER, as_of DOUBLE',
    'model_outputs',
    freshOutputsSql,
  ),
  actuals: {
    staging: 'stage_actuals',
    definition: 'site_no INTEGER, valid_time DOUBLE, value DOUBLE, seen_at DOUBLE',
    merge: async (warehouse, sites, options) => {
      const written = await mergeActuals(warehouse, sites, POWER_ACTUALS);
      // The flags of the sites whose actuals changed are pending from the earliest changed valid
      // time on (flags.ts reaches back far enough for runs that began earlier): computed here
      // when the load was given thresholds, else by the sync once after its series.
      if (written.size > 0) {
        markFlagsPending(warehouse, `temp.${POWER_ACTUALS.changes}`);
        if (options.quality) {
          await flagPending(warehouse, options.quality, { sites: [...written.keys()], now: options.now ?? Date.now() });
        }
      }
      return written;
    },
  },
  typed_actuals: {
    staging: 'stage_typed_actuals',
    definition: 'site_no INTEGER, type VARCHAR, valid_time DOUBLE, value DOUBLE, seen_at DOUBLE',
    merge: (warehouse, sites) => mergeActuals(warehouse, sites, TYPED_ACTUALS),
  },
};

/**
 * Writes the fresh rows into `table` and counts them per site. When every staged vintage is known
 * to have no stored row (stored-vintages.ts: a first sync, or a site's older vintages after its
 * newest), every staged row is fresh (no key is staged twice) and goes in without the anti-join,
 * with the transaction's next call (Warehouse.defer): the counts are the staged rows. Else,
 * several sites: the INSERT returns each written row's site as its 1-based position in `sites`
 * (a small integer, cheap to read back) and the counts are taken here: DuckDB cannot aggregate
 * over RETURNING in SQL, and materialising the fresh rows in a TEMP table to count them costs
 * more than reading back a small integer a row.
 */
async function insertFresh(
  warehouse: Warehouse,
  sites: string[],
  freshSql: (sites: string, anyStored: boolean) => string,
  table: string,
  staged: Staged,
): Promise<Map<string, RowsWritten>> {
  const known = storedVintages(warehouse, table);
  const unknown = known.unknown(sites);
  if (unknown.length > 0) known.learn(unknown, await holdsAny(warehouse, table, unknown));
  const loads = sites.map((siteId, index) => ({ siteId, spans: staged.spansBySite[index] }));
  const allNew = known.allNew(loads);
  for (const { siteId, spans } of loads) known.record(siteId, spans);
  const list = sqlList(sites);
  if (allNew) {
    warehouse.defer(`INSERT INTO main.${table} ${freshSql(list, false)}`);
    return new Map(sites.map((site, index) => [site, { [table]: staged.rowsBySite[index] ?? 0 }]));
  }
  if (sites.length === 1) {
    return new Map([
      [sites[0], { [table]: await warehouse.changed(`INSERT INTO main.${table} ${freshSql(list, true)}`) }],
    ]);
  }
  const counts = new Array<number>(sites.length).fill(0);
  const result = await warehouse.result(
    `INSERT INTO main.${table} ${freshSql(list, true)} RETURNING list_position([${list}], site_id)::INTEGER`,
  );
  for (let index = 0; index < result.chunkCount; index++) {
    for (const position of result.getChunk(index).getColumnValues(0)) counts[(position as number) - 1] += 1;
  }
  return new Map(sites.flatMap((site, index) => (counts[index] > 0 ? [[site, { [table]: counts[index] }]] : [])));
}

/** What this process knows of the vintages each vintage table holds, per warehouse (stored-vintages.ts). */
const stored = new WeakMap<Warehouse, Map<string, StoredVintages>>();

function storedVintages(warehouse: Warehouse, table: string): StoredVintages {
  const tables = stored.get(warehouse) ?? new Map<string, StoredVintages>();
  stored.set(warehouse, tables);
  const known = tables.get(table) ?? new StoredVintages();
  tables.set(table, known);
  return known;
}

/** Whether `table` holds any row of `sites` (a lookup DuckDB answers from the row groups' min/max). */
async function holdsAny(warehouse: Warehouse, table: string, sites: string[]): Promise<boolean> {
  const [row] = await warehouse.all<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM main.${table} WHERE site_id IN (${sqlList(sites)})) AS found`,
  );
  return row.found;
}

/** Merges the staged actuals (what changed stays in temp.<target.changes>); rows written per site. */
async function mergeActuals(
  warehouse: Warehouse,
  sites: string[],
  target: ActualsTarget,
): Promise<Map<string, RowsWritten>> {
  const list = sqlList(sites);
  warehouse.defer(actualChangesSql(list, target));
  const counts = await warehouse.all<{ site_id: string; revised: number; inserted: number }>(`
    SELECT site_id, count(*) FILTER (WHERE existed)::INTEGER AS revised, count(*) FILTER (WHERE NOT existed)::INTEGER AS inserted
    FROM temp.${target.changes} GROUP BY site_id`);
  const apply = applyActualChangesSql(list, target);
  if (counts.some((c) => c.revised > 0)) {
    warehouse.defer(apply.revisions);
    warehouse.defer(apply.update);
  }
  if (counts.some((c) => c.inserted > 0)) warehouse.defer(apply.insert);
  return new Map(
    counts.map((c) => [c.site_id, nonZero({ [target.table]: c.revised + c.inserted, [target.revisions]: c.revised })]),
  );
}
