// DuckDB's memory and threads for one step of a run (config sync.memory_limit/threads,
// accuracy.memory_limit/threads). Without a limit DuckDB's buffer pool caches up to 80% of RAM
// and every core gets a thread with its own buffers, so a step's memory grew with the warehouse
// and the machine; with one, DuckDB spills to `<writer file>.tmp/` instead.
import { quoteLiteral } from './sql.js';
import { isOutOfMemory, type Warehouse } from './warehouse.js';

/** A step's DuckDB settings; null leaves DuckDB's own (memory_limit is checked by the config schema). */
export interface DuckDBLimits {
  memory_limit: string | null;
  threads: number | null;
}

/**
 * Runs `fn` with DuckDB's settings at these values (null: left as they are), then resets them to
 * DuckDB's defaults (the memory limit to the warehouse's own, warehouse.memory_limit, when it has
 * one), so a later step of the same run (accuracy after the sync) starts from those.
 * (Not the values read before: DuckDB shows a memory limit rounded, `18.8 GiB`, which is not
 * the limit it had.) Steps do not nest.
 */
export async function withDuckDBSettings<T>(
  warehouse: Warehouse,
  settings: Record<string, string | number | null>,
  fn: () => Promise<T>,
): Promise<T> {
  const changed = Object.entries(settings).filter((entry): entry is [string, string | number] => entry[1] !== null);
  for (const [name, value] of changed) await warehouse.run(`SET ${name} = ${quoteLiteral(String(value))}`);
  const limit = changed.find(([name]) => name === 'memory_limit');
  if (limit) memoryLimits.set(warehouse, String(limit[1]));
  try {
    return await fn();
  } finally {
    memoryLimits.delete(warehouse);
    for (const [name] of changed) await warehouse.run(`RESET ${name}`);
    if (limit && warehouse.memoryLimit !== null)
      await warehouse.run(`SET memory_limit = ${quoteLiteral(warehouse.memoryLimit)}`);
  }
}

/** The memory limit the running step set on each warehouse (withDuckDBSettings), as configured. */
const memoryLimits = new WeakMap<Warehouse, string>();

/**
 * Evicts from DuckDB's buffer pool every block no statement holds, by lowering its memory limit
 * to almost nothing for a moment, then setting the step's limit again (DuckDB's default when the
 * step set none). Why: DuckDB's eviction queues hold a weak reference to every block a statement
 * ever unpinned, and the memory of a block freed since (~150 bytes with its queue entry) stays
 * allocated until that entry is dropped. A queue drops its dead entries only once it holds
 * ~32,000 of them, and there are eight queues, so a sync of many small statements (each hash join
 * builds one block per partition, 16 of them) kept ~130,000 freed blocks at 3,000 sites and grew
 * glibc's heap from ~25 to ~70 MB at 10,000. An eviction walks the queues and drops dead entries
 * as it passes them; this one walks them all.
 */
export async function purgeBufferPool(warehouse: Warehouse): Promise<void> {
  await warehouse.exclusive(async () => {
    try {
      // What a statement holds cannot go: DuckDB then refuses the limit, having evicted the rest.
      await warehouse.run(`SET memory_limit = '${PURGE_LIMIT}'`).catch((error: unknown) => {
        if (!isOutOfMemory(error)) throw error;
      });
    } finally {
      const limit = memoryLimits.get(warehouse);
      const restored = limit ?? warehouse.memoryLimit;
      await warehouse.run(restored === null ? 'RESET memory_limit' : `SET memory_limit = ${quoteLiteral(restored)}`);
    }
  });
}

/** The memory limit of a purge (purgeBufferPool): below anything a block takes. */
const PURGE_LIMIT = '1MB';
