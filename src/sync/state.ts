// How far each site has synced a resource (sync_state), read once at the start of a run.
// The loader (src/warehouse/loader.ts) writes it, in the same transaction as the data.
import type { Warehouse } from '../warehouse/warehouse.js';
import type { SyncMark } from './windows.js';

export async function readMarks(warehouse: Warehouse, resource: string): Promise<Map<string, SyncMark>> {
  const rows = await warehouse.all<{
    site_id: string;
    synced_to: bigint;
    last_as_of: bigint | null;
    digest: string | null;
  }>(
    `SELECT site_id, epoch_ms(synced_to) AS synced_to, epoch_ms(last_as_of) AS last_as_of, digest
       FROM sync_state WHERE resource = $1`,
    [resource],
  );
  return new Map(
    rows.map((row) => [
      row.site_id,
      {
        syncedTo: Number(row.synced_to),
        lastAsOf: row.last_as_of === null ? null : Number(row.last_as_of),
        digest: row.digest,
      },
    ]),
  );
}
