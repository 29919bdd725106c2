// The bookkeeping of vintage reads (vintage_reads, docs/sync.md "Vintages one by one") that goes
// with a load: the vintages a site's first pass leaves to its backfill, recorded as pending; the
// pending ones a load stores, forgotten; and the reads that failed (or found the vintage not out
// yet), recorded with their attempts. All are written in the load's own transaction, with its
// data and sync state, for every load of a batch in one statement each: a record per vintage
// costs a row, not a statement or a transaction (a first sync defers ~200 vintages a site, and a
// night can find the newest output of every model not out yet).
import { DOUBLE, INTEGER, VARCHAR } from './duckdb-api.js';
import { instant, instantLiteral, quoteLiteral } from './sql.js';
import { appendBlocks } from './staging.js';
import type { Warehouse } from './warehouse.js';

/** A vintage of a site's resource: the site forecast's (modelId '') or a model's, by its issue time (epoch ms, fractional). */
export interface VintageKey {
  modelId: string;
  issue: number;
}

/** A read that did not store its vintage: its row of vintage_reads as the read leaves it. */
export interface AttemptedRead {
  key: VintageKey;
  /** `pending`: read again by a later run; `given_up`: past sync.vintage_retries. */
  status: 'pending' | 'given_up';
  /** Failed reads so far (0: not read, the run stopped first). */
  attempts: number;
  reason: string;
}

/** What a load records of its resource's vintages. */
export interface VintageBookkeeping {
  resource: 'forecasts' | 'outputs';
  /** Not read yet: kept pending (no attempt counted) for the backfill pass or the next run. */
  deferred: readonly VintageKey[];
  /** Pending ones whose rows this load stores: deleted. */
  stored: readonly VintageKey[];
  /** Reads that failed, found the vintage not out yet, or were stopped: their row updated or inserted. */
  attempted: readonly AttemptedRead[];
  /** Why the deferred ones are pending, as `efsync status` shows it. */
  reason: string;
  /** The run that deferred them. */
  runId: string;
}

/** The staged keys of a batch: the stored, deferred and attempted ones, told apart by `kind`. */
const KEYS_TABLE = 'vintage_keys';

const KEYS = `SELECT site_id, resource, model_id, ${instant('issue')} AS issue, reason, kind, status, attempts FROM ${KEYS_TABLE}`;

type Entries = readonly { siteId: string; reads: VintageBookkeeping; now: number }[];

/** The statement that creates the table of a batch's keys empty (run with the batch's staging tables'). */
export const FRESH_VINTAGE_KEYS_SQL = `CREATE OR REPLACE TEMP TABLE ${KEYS_TABLE} (site_id VARCHAR, resource VARCHAR, model_id VARCHAR, issue DOUBLE, reason VARCHAR, kind VARCHAR, status VARCHAR, attempts INTEGER)`;

/**
 * Stages the vintage keys of a batch's loads (stored, deferred and attempted) into their TEMP table, fresh
 * (FRESH_VINTAGE_KEYS_SQL), through the appender, before the batch's transaction: a first sync of
 * months defers tens of thousands of vintages a batch, and a statement given them as one parameter
 * parses it whole in memory.
 */
export async function stageVintageReads(warehouse: Warehouse, entries: Entries): Promise<void> {
  // Straight into the columns, no object per key: a batch stages as many keys as the sync holds rows.
  const columns = {
    siteId: [] as string[],
    resource: [] as string[],
    modelId: [] as string[],
    issue: [] as number[],
    reason: [] as string[],
    kind: [] as string[],
    status: [] as (string | null)[],
    attempts: [] as (number | null)[],
  };
  const add = (
    siteId: string,
    resource: string,
    key: VintageKey,
    kind: string,
    reason: string,
    status: string | null,
    attempts: number | null,
  ) => {
    columns.siteId.push(siteId);
    columns.resource.push(resource);
    columns.modelId.push(key.modelId);
    columns.issue.push(key.issue);
    columns.reason.push(reason);
    columns.kind.push(kind);
    columns.status.push(status);
    columns.attempts.push(attempts);
  };
  for (const { siteId, reads } of entries) {
    for (const key of reads.stored) add(siteId, reads.resource, key, 'stored', reads.reason, null, null);
    for (const key of reads.deferred) add(siteId, reads.resource, key, 'deferred', reads.reason, null, null);
    for (const read of reads.attempted)
      add(siteId, reads.resource, read.key, 'attempted', read.reason, read.status, read.attempts);
  }
  await appendBlocks(warehouse, KEYS_TABLE, [
    {
      rows: columns.siteId.length,
      columns: [
        { type: VARCHAR, values: columns.siteId },
        { type: VARCHAR, values: columns.resource },
        { type: VARCHAR, values: columns.modelId },
        { type: DOUBLE, values: columns.issue },
        { type: VARCHAR, values: columns.reason },
        { type: VARCHAR, values: columns.kind },
        { type: VARCHAR, values: columns.status },
        { type: INTEGER, values: columns.attempts },
      ],
    },
  ]);
}

/**
 * The vintage bookkeeping of a batch's loads (staged by stageVintageReads), in at most three
 * statements, deferred to the transaction's next call (Warehouse.defer).
 */
export function writeVintageReads(warehouse: Warehouse, entries: Entries): void {
  if (entries.length === 0) return;
  if (entries.some(({ reads }) => reads.stored.length > 0))
    warehouse.defer(
      `DELETE FROM vintage_reads v USING (${KEYS} WHERE kind = 'stored') k
        WHERE v.site_id = k.site_id AND v.resource = k.resource AND v.model_id = k.model_id AND v.issue = k.issue`,
    );
  // One run's clock and id for the whole batch: the loads of a batch come from one sync.
  const { now, reads } = entries[0];
  const at = instantLiteral(now);
  const runId = quoteLiteral(reads.runId);
  if (entries.some(({ reads }) => reads.deferred.length > 0))
    // A vintage already recorded (a failed read, or deferred by a run that ended before its older
    // pass) keeps its row and its attempts, and a key is inserted once: the table has no key index
    // (migration 032), so the keys it holds already are found by a join built on the batch's
    // staged keys, and left out.
    warehouse.defer(
      `INSERT INTO vintage_reads
       SELECT k.site_id, k.resource, k.model_id, k.issue, 'pending', 0, k.reason, ${at}, ${at}, ${runId}
         FROM (SELECT DISTINCT site_id, resource, model_id, issue, reason FROM (${KEYS} WHERE kind = 'deferred')) k
         ANTI JOIN (SELECT v.site_id, v.resource, v.model_id, v.issue
                      FROM vintage_reads v JOIN (${KEYS} WHERE kind = 'deferred') d
                        ON v.site_id = d.site_id AND v.resource = d.resource AND v.model_id = d.model_id AND v.issue = d.issue) held
           ON k.site_id = held.site_id AND k.resource = held.resource AND k.model_id = held.model_id AND k.issue = held.issue`,
    );
  if (entries.some(({ reads }) => reads.attempted.length > 0))
    // The key's row updated, or inserted where there is none: a key is kept once by its writers.
    warehouse.defer(
      `MERGE INTO vintage_reads v USING (${KEYS} WHERE kind = 'attempted') k
          ON v.site_id = k.site_id AND v.resource = k.resource AND v.model_id = k.model_id AND v.issue = k.issue
        WHEN MATCHED THEN UPDATE SET status = k.status, attempts = k.attempts, reason = k.reason,
          last_failed_at = ${at}, run_id = ${runId}
        WHEN NOT MATCHED THEN INSERT VALUES (k.site_id, k.resource, k.model_id, k.issue, k.status, k.attempts, k.reason,
          ${at}, ${at}, ${runId})`,
    );
}
