// The bookkeeping of vintage reads (vintage_reads, docs/sync.md "Vintages one by one") that goes
// with a load: the vintages a site's first pass leaves to its backfill, recorded as pending, and
// the pending ones a load stores, forgotten. Both are written in the load's own transaction, with
// its data and sync state, for every load of a batch in one statement each: a record per vintage
// costs a row, not a statement or a transaction (a first sync defers ~200 vintages a site).
import { instant } from './sql.js';
import type { Warehouse } from './warehouse.js';

/** A vintage of a site's resource: the site forecast's (modelId '') or a model's, by its issue time (epoch ms, fractional). */
export interface VintageKey {
  modelId: string;
  issue: number;
}

/** What a load records of its resource's vintages. */
export interface VintageBookkeeping {
  resource: 'forecasts' | 'outputs';
  /** Not read yet: kept pending (no attempt counted) for the backfill pass or the next run. */
  deferred: readonly VintageKey[];
  /** Pending ones whose rows this load stores: deleted. */
  stored: readonly VintageKey[];
  /** Why the deferred ones are pending, as `efsync status` shows it. */
  reason: string;
  /** The run that deferred them. */
  runId: string;
}

/** The rows of $1, a JSON array of [site_id, resource, model_id, issue, reason] (issue: epoch ms): one parameter whatever their number. */
const KEYS = `SELECT r->>0 AS site_id, r->>1 AS resource, r->>2 AS model_id,
  ${instant('CAST(r->>3 AS DOUBLE)')} AS issue, r->>4 AS reason
FROM (SELECT unnest(CAST($1 AS JSON[])) AS r)`;

/** The vintage bookkeeping of a batch's loads, in at most two statements; inside its transaction. */
export async function writeVintageReads(
  warehouse: Warehouse,
  entries: readonly { siteId: string; reads: VintageBookkeeping; now: number }[],
): Promise<void> {
  const keys = (pick: (reads: VintageBookkeeping) => readonly VintageKey[]) =>
    entries.flatMap(({ siteId, reads }) =>
      pick(reads).map((key) => [siteId, reads.resource, key.modelId, key.issue, reads.reason]),
    );
  const stored = keys((reads) => reads.stored);
  if (stored.length > 0)
    await warehouse.run(
      `DELETE FROM vintage_reads v USING (${KEYS}) k
        WHERE v.site_id = k.site_id AND v.resource = k.resource AND v.model_id = k.model_id AND v.issue = k.issue`,
      [JSON.stringify(stored)],
    );
  const deferred = keys((reads) => reads.deferred);
  if (deferred.length === 0) return;
  // One run's clock and id for the whole batch: the loads of a batch come from one sync.
  const { now, reads } = entries[0];
  // A vintage already pending (a failed read, or deferred by a run that ended before its
  // backfill) keeps its row and its attempts.
  await warehouse.run(
    `INSERT INTO vintage_reads
     SELECT k.site_id, k.resource, k.model_id, k.issue, 'pending', 0, k.reason, ${instant('$2')}, ${instant('$2')}, $3
       FROM (${KEYS}) k
     ON CONFLICT (site_id, resource, model_id, issue) DO NOTHING`,
    [JSON.stringify(deferred), now, reads.runId],
  );
}
