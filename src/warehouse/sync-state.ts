// The sync state (sync_state): how far each site's resource is synced, written with the data in
// the same transaction by the commit queue (writeSyncStates), or on its own for the resources
// that read nothing new (saveSyncStates).
import { syncStateAdvanceSql, syncStateInsertSql } from './merge.js';
import type { RowsWritten } from './rows.js';
import { sqlList } from './sql.js';
import type { Warehouse } from './warehouse.js';

export interface SyncStateUpdate {
  resource: 'forecasts' | 'outputs' | 'actuals' | (string & {});
  /** End of the window synced (valid time, epoch ms). */
  syncedTo: number;
  /** Newest as_of vintage read, for resources read by vintage. */
  lastAsOf?: number | null;
  runId: string;
  /** What the read found, for the next run to compare (actuals); replaces the stored one. */
  digest?: string | null;
}

export function stateKey(siteId: string, resource: string): string {
  return `${siteId}\0${resource}`;
}

/**
 * The sync states of a batch (one per site and resource) in two statements whatever their
 * number: a statement per site cost ~7 ms each, more than merging the site's rows. Returns the
 * stateKeys of those that advanced.
 */
export async function writeSyncStates(
  warehouse: Warehouse,
  entries: { siteId: string; state: SyncStateUpdate; now: number }[],
): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const rows = JSON.stringify(
    entries.map(({ siteId, state, now }) => [
      siteId,
      state.resource,
      state.syncedTo,
      state.lastAsOf ?? null,
      now,
      state.runId,
      state.digest ?? null,
    ]),
  );
  const written = [
    ...(await warehouse.all<{ site_id: string; resource: string }>(syncStateAdvanceSql(rows))),
    ...(await warehouse.all<{ site_id: string; resource: string }>(syncStateInsertSql(rows))),
  ];
  return new Set(written.map((row) => stateKey(row.site_id, row.resource)));
}

/**
 * Sync states with no data, STATES_PER_TRANSACTION at a time: a sync writes those of the site
 * resources that read nothing new once, after its series, instead of one transaction per batch
 * of them (a state written late, or lost to a crash, only makes the next run read again).
 */
export async function saveSyncStates(
  warehouse: Warehouse,
  states: readonly { siteId: string; state: SyncStateUpdate }[],
  options: { now?: number } = {},
): Promise<RowsWritten> {
  const now = options.now ?? Date.now();
  let advanced = 0;
  for (let start = 0; start < states.length; start += STATES_PER_TRANSACTION) {
    const part = states.slice(start, start + STATES_PER_TRANSACTION);
    const written = await warehouse.transaction(() =>
      writeSyncStates(
        warehouse,
        part.map(({ siteId, state }) => ({ siteId, state, now })),
      ),
    );
    advanced += written.size;
  }
  return advanced > 0 ? { sync_state: advanced } : {};
}

/**
 * The states written in one transaction: DuckDB holds a transaction's updated rows, and the JSON
 * list of the states (one value), in memory it cannot spill, so a 10,000-site resync's 30,000
 * states go in transactions of a size any budget's pool holds (docs/decisions/memory-budget.md).
 */
const STATES_PER_TRANSACTION = 1000;

/**
 * Clears the stored digests of `resources` (sync_state keys): a load that writes no sync state (a
 * backfill) may change rows a digest describes, and the next read must then merge in full.
 */
export async function forgetDigests(warehouse: Warehouse, resources: readonly string[]): Promise<void> {
  if (resources.length === 0) return;
  await warehouse.run(
    `UPDATE sync_state SET digest = NULL WHERE digest IS NOT NULL AND resource IN (${sqlList(resources)})`,
  );
}
