// DuckDB's memory and threads for one step of a run (config sync.memory_limit/threads,
// accuracy.memory_limit/threads). Without a limit DuckDB's buffer pool caches up to 80% of RAM
// and every core gets a thread with its own buffers, so a step's memory grew with the warehouse
// and the machine; with one, DuckDB spills to `<writer file>.tmp/` instead.
import { quoteLiteral } from './sql.js';
import type { Warehouse } from './warehouse.js';

/** A step's DuckDB settings; null leaves DuckDB's own (memory_limit is checked by the config schema). */
export interface DuckDBLimits {
  memory_limit: string | null;
  threads: number | null;
}

/**
 * Runs `fn` with DuckDB's settings at these values (null: left as they are), then resets them to
 * DuckDB's defaults, so a later step of the same run (accuracy after the sync) starts from those.
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
  try {
    return await fn();
  } finally {
    for (const [name] of changed) await warehouse.run(`RESET ${name}`);
  }
}
