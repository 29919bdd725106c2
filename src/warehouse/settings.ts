// DuckDB's settings, all of them here: the memory and threads of one step of a run (config
// sync.memory_limit/threads, accuracy.memory_limit/threads), the sync's checkpoint and allocator
// thresholds, and the buffer pool's purge. Without a limit DuckDB's buffer pool caches up to 80%
// of RAM and every core gets a thread with its own buffers, so a step's memory grew with the
// warehouse and the machine; with one, DuckDB spills to `<writer file>.tmp/` instead. (What an
// instance is created with, its own memory limit, UTC and unsigned extensions, is duckdb.ts's.)
import { quoteLiteral } from './sql.js';
import { isOutOfMemory } from './duckdb.js';

/**
 * What the settings need of a warehouse (src/warehouse/warehouse.ts has it): its statements, its
 * queue, and its own memory limit (warehouse.memory_limit; null: DuckDB's default).
 */
export interface Tunable {
  readonly memoryLimit: string | null;
  all<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  run(sql: string): Promise<void>;
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * Runs `fn` with DuckDB's settings at these values (null: left as they are), then resets them to
 * DuckDB's defaults (the memory limit to the warehouse's own, warehouse.memory_limit, when it has
 * one, else DuckDB's default as baseLimit gives it), so a later step of the same run (accuracy
 * after the sync) starts from those. Steps do not nest.
 */
export async function withDuckDBSettings<T>(
  warehouse: Tunable,
  settings: Record<string, string | number | null>,
  fn: () => Promise<T>,
): Promise<T> {
  const changed = Object.entries(settings).filter((entry): entry is [string, string | number] => entry[1] !== null);
  const limit = changed.find(([name]) => name === 'memory_limit');
  if (limit) await rememberDefaultLimit(warehouse);
  for (const [name, value] of changed) await warehouse.run(`SET ${name} = ${quoteLiteral(String(value))}`);
  if (limit) memoryLimits.set(warehouse, String(limit[1]));
  try {
    return await fn();
  } finally {
    memoryLimits.delete(warehouse);
    for (const [name] of changed) {
      await warehouse.run(
        name === 'memory_limit' ? `SET memory_limit = ${quoteLiteral(baseLimit(warehouse))}` : `RESET ${name}`,
      );
    }
  }
}

/**
 * DuckDB's default memory limit (~80% of RAM) of each warehouse opened without one of its own,
 * read before efsync first changes it. A limit must be SET back to it, never RESET: DuckDB (1.5)
 * resets the setting but leaves its buffer pool at the last limit SET, while the setting reads
 * the default. After a purge (purgeBufferPool) every later statement ran within 1MB, and a
 * 100-site load failed to append its staging rows (#28).
 */
const defaultLimits = new WeakMap<Tunable, string>();

async function rememberDefaultLimit(warehouse: Tunable): Promise<void> {
  if (warehouse.memoryLimit !== null || defaultLimits.has(warehouse)) return;
  const [row] = await warehouse.all<{ shown: string }>(`SELECT current_setting('memory_limit') AS shown`);
  defaultLimits.set(warehouse, bytesOf(row.shown));
}

/** The limit outside a step: the warehouse's own, or DuckDB's default (rememberDefaultLimit). */
function baseLimit(warehouse: Tunable): string {
  const limit = warehouse.memoryLimit ?? defaultLimits.get(warehouse);
  if (limit === undefined) throw new Error('DuckDB default memory limit not read before it was changed');
  return limit;
}

const UNITS: Record<string, number> = { KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40, PiB: 2 ** 50 };

/**
 * A limit as DuckDB shows it (`18.8 GiB`, cut to a tenth of its unit) in bytes, for SET: the
 * middle of the tenth it shows, within 0.3% of the limit it had, and shown the same again.
 */
function bytesOf(shown: string): string {
  const match = /^(\d+(?:\.\d+)?) (bytes|KiB|MiB|GiB|TiB|PiB)$/.exec(shown);
  if (!match) throw new Error(`DuckDB shows its memory limit as ${JSON.stringify(shown)}: not a size`);
  const value = Number(match[1]);
  const unit = match[2];
  return unit === 'bytes' ? `${value}B` : `${Math.round((value + 0.05) * UNITS[unit])}B`;
}

/**
 * A sync step's settings: its memory and threads (null leaves DuckDB's own; memory_limit is
 * checked by the config schema), and the thresholds below. The WAL checkpoints automatically
 * every 16 MB: ~45 checkpoints in a 1,000-site sync, most of its COMMIT time; at 256 MB a few,
 * and the runner checkpoints once before it publishes.
 */
export function syncStepSettings({ memory_limit, threads }: { memory_limit: string | null; threads: number | null }) {
  return {
    memory_limit,
    threads,
    checkpoint_threshold: SYNC_CHECKPOINT_THRESHOLD,
    allocator_bulk_deallocation_flush_threshold: SYNC_FLUSH_THRESHOLD,
  };
}

/** How much WAL a sync lets grow before DuckDB checkpoints on its own (its default: 16 MB). */
const SYNC_CHECKPOINT_THRESHOLD = '256MB';

/**
 * An accuracy step's settings: its memory and threads (null leaves DuckDB's own) and a WAL
 * threshold its ledger stays below. DuckDB checkpoints on its own at the commit that takes the
 * WAL past 16 MB, with that batch's temp tables still held: in a nightly score at 100 sites such
 * a commit raised the step's peak RSS from 265 to 300 MB. The ledger checkpoints between its
 * batches instead, once what a batch held is evicted (settleBatch, src/accuracy/input/incremental.ts).
 */
export function accuracyStepSettings({
  memory_limit,
  threads,
}: {
  memory_limit: string | null;
  threads: number | null;
}) {
  return { memory_limit, threads, checkpoint_threshold: ACCURACY_CHECKPOINT_THRESHOLD };
}

/** Past any WAL the ledger lets grow between its checkpoints (LEDGER_WAL_BYTES). */
const ACCURACY_CHECKPOINT_THRESHOLD = '1GB';

/**
 * DuckDB allocates through the jemalloc linked into its library, which keeps the pages it freed
 * (~1 s of decay, then MADV_FREE, which still counts as resident) for reuse: in a 200-site sync
 * ~40-90 MB of its resident memory was freed pages, against ~55 MB in use. Before each
 * allocation above this size DuckDB purges every arena and trims glibc's heap (its
 * allocator_bulk_deallocation_flush_threshold, 512 MiB by default). The purges cost time: a
 * 1,000-site sync took 95.8 s and peaked at 376 MB without them; at 4MB 89.9 s / 363 MB; at 2MB
 * 104.9 s / 322 MB; at 1MB 106.5 s / 335 MB. 4MB keeps the sync's bench ratio; the RSS target
 * needs more than this setting (docs/sync.md, Memory).
 */
const SYNC_FLUSH_THRESHOLD = '4MB';

/**
 * Within a sync step, for the data-quality flags, last in it (withDuckDBSettings resets the
 * setting after them): DuckDB purges before every allocation. The flags' windows need tens of MB
 * for a slice of sites (flags.ts), freed as each slice ends; with the series' threshold
 * (SYNC_FLUSH_THRESHOLD) jemalloc kept those pages, and the flags of 1,000 sites added ~95 MB to
 * a sync's peak RSS. Purging, the flags of 1,000 sites of 7 days, alone on a copy of a synced
 * warehouse, took 2.5 s and +30 MB of RSS, against 1.5 s and +100 MB at 4MB.
 */
export async function flushBeforeEveryAllocation(warehouse: Tunable): Promise<void> {
  await warehouse.run(`SET allocator_bulk_deallocation_flush_threshold = '0MB'`);
}

/**
 * Runs `fn` with DuckDB's build_side_probe_side optimizer off, so that each hash join builds on
 * the side the statement puts on its right; the caller holds the connection (a step's statements
 * run one after another). For the statements of an incremental score that look up a batch's
 * ledger pairs or points in the run's changes (changedRowsSql in src/accuracy/input/incremental.ts):
 * DuckDB estimated the pairs, filtered by window and site range, at a few hundred rows, turned
 * the LEFT JOIN on the changed hours into a RIGHT JOIN and built its hash table on them, every
 * column of ~500,000 pairs. At 1,000 sites 62 of 62 and 46 of 93 batches of a night ran out of
 * 96MB and went again in halves, each after a checkpoint: the night's score took 140 s and
 * peaked at 331 MB; built on the changes, none ran out, 86 s, 297 MB. Only those statements: a
 * plan changed elsewhere sums the same floats in another order (an actual's interval mean).
 */
export async function withJoinsBuiltOnTheRight<T>(sql: Pick<Tunable, 'run'>, fn: () => Promise<T>): Promise<T> {
  await sql.run(`SET disabled_optimizers = 'build_side_probe_side'`);
  try {
    return await fn();
  } finally {
    await sql.run('RESET disabled_optimizers');
  }
}

/** The memory limit the running step set on each warehouse (withDuckDBSettings), as configured. */
const memoryLimits = new WeakMap<Tunable, string>();

/**
 * Evicts from DuckDB's buffer pool every block no statement holds, by lowering its memory limit
 * to almost nothing for a moment, then setting the step's limit again (outside a step, the warehouse's own or DuckDB's default:
 * baseLimit). Why: DuckDB's eviction queues hold a weak reference to every block a statement
 * ever unpinned, and the memory of a block freed since (~150 bytes with its queue entry) stays
 * allocated until that entry is dropped. A queue drops its dead entries only once it holds
 * ~32,000 of them, and there are eight queues, so a sync of many small statements (each hash join
 * builds one block per partition, 16 of them) kept ~130,000 freed blocks at 3,000 sites and grew
 * glibc's heap from ~25 to ~70 MB at 10,000. An eviction walks the queues and drops dead entries
 * as it passes them; this one walks them all. Work hands memory back through the executor
 * (handBackPool in executor.ts), the one caller of this.
 */
export async function purgeBufferPool(warehouse: Tunable): Promise<void> {
  await warehouse.exclusive(async () => {
    await rememberDefaultLimit(warehouse);
    try {
      // What a statement holds cannot go: DuckDB then refuses the limit, having evicted the rest.
      await warehouse.run(`SET memory_limit = '${PURGE_LIMIT}'`).catch((error: unknown) => {
        if (!isOutOfMemory(error)) throw error;
      });
    } finally {
      const restored = memoryLimits.get(warehouse) ?? baseLimit(warehouse);
      await warehouse.run(`SET memory_limit = ${quoteLiteral(restored)}`);
    }
  });
}

/** The memory limit of a purge (purgeBufferPool): below anything a block takes. */
const PURGE_LIMIT = '1MB';
