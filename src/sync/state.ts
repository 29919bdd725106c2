// How far each site has synced a resource (sync_state), read once at the start of a run, and
// the models the warehouse knows of some sites. The loader (src/warehouse/loader.ts) writes them,
// sync_state in the same transaction as the data.
import { sqlList } from '../warehouse/sql.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { KnownModel, KnownModels } from './models.js';
import type { SyncMark } from './windows.js';

export async function readMarks(warehouse: Warehouse, resource: string): Promise<Map<string, SyncMark>> {
  const rows = await warehouse.all<{
    site_id: string;
    synced_to: bigint;
    last_as_of: bigint | null;
    digest: string | null;
  }>(
    `SELECT site_id, epoch_ms(synced_to) AS synced_to, epoch_us(last_as_of) AS last_as_of, digest
       FROM sync_state WHERE resource = $1`,
    [resource],
  );
  return new Map(
    rows.map((row) => [
      row.site_id,
      {
        syncedTo: Number(row.synced_to),
        lastAsOf: row.last_as_of === null ? null : Number(row.last_as_of) / 1000, // to the µs: an issue time
        digest: row.digest,
      },
    ]),
  );
}

/** The stored label and type of each model of `siteIds`, per site (a site with none is absent). */
export async function knownModels(warehouse: Warehouse, siteIds: readonly string[]): Promise<Map<string, KnownModels>> {
  if (siteIds.length === 0) return new Map();
  const rows = await warehouse.all<{
    site_id: string;
    model_id: string;
    label: string;
    model_type: 'ai' | 'physical' | null;
  }>(`SELECT site_id, model_id, label, model_type FROM models WHERE site_id IN (${sqlList(siteIds)})`);
  const sites = new Map<string, Map<string, KnownModel>>();
  for (const row of rows) {
    const models = sites.get(row.site_id) ?? new Map();
    models.set(row.model_id, { label: row.label, modelType: row.model_type });
    sites.set(row.site_id, models);
  }
  return sites;
}
