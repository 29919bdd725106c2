// DuckDB's settings, all of them here: the memory and threads of one step of a run (config
// sync.memory_limit/threads, accuracy.memory_limit/threads), the sync's checkpoint and allocator
// thresholds, and the buffer pool's purge. Without a limit DuckDB's buffer pool caches up to 80%
// of RAM and every core gets a thread with its own buffers, so a step's memory grew with the
// warehouse and the machine; with one, DuckDB spills to `<writer file>.tmp/` instead. (What an
// instance is created with, its own memory limit, UTC and unsigned extensions, is duckdb.ts's.)
import { availableParallelism } from 'node:os';
import { quoteLiteral } from './sql.js';

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
  // All in one call: each call waits for the event loop and DuckDB's thread, whatever its statement.
  if (changed.length > 0)
    await warehouse.run(changed.map(([name, value]) => `SET ${name} = ${quoteLiteral(String(value))}`).join(';\n'));
  if (limit) memoryLimits.set(warehouse, String(limit[1]));
  try {
    return await fn();
  } finally {
    memoryLimits.delete(warehouse);
    if (changed.length > 0) await warehouse.run(changed.map(([name]) => restoreSql(warehouse, name)).join(';\n'));
  }
}

/** What sets `name` back after a step: the writer's own value (WRITER_SETTINGS), else DuckDB's default. */
function restoreSql(warehouse: Tunable, name: string): string {
  if (name === 'memory_limit') return `SET memory_limit = ${quoteLiteral(baseLimit(warehouse))}`;
  const own = (WRITER_SETTINGS as Record<string, string>)[name];
  return own === undefined ? `RESET ${name}` : `SET ${name} = ${quoteLiteral(own)}`;
}

/**
 * DuckDB's default memory limit (~80% of RAM) of each warehouse opened without one of its own,
 * read before efsync first changes it. A limit must be SET back to it, never RESET: DuckDB (1.5)
 * resets the setting but leaves its buffer pool at the last limit SET, while the setting reads
 * the default. Reset after a purge (the executor's handBackPool), every later statement would run within the
 * purge's limit (#28).
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
 * checked by the config schema), and the thresholds below. At DuckDB's own WAL threshold a sync
 * checkpoints many times over, at its COMMITs' cost; at SYNC_CHECKPOINT_THRESHOLD only a few,
 * and the runner checkpoints once before it publishes.
 */
export function syncStepSettings({ memory_limit, threads }: { memory_limit: string | null; threads: number | null }) {
  return {
    memory_limit,
    threads,
    checkpoint_threshold: SYNC_CHECKPOINT_THRESHOLD,
    // The writer's own threshold, named so that the step's end restores it.
    allocator_bulk_deallocation_flush_threshold: WRITER_SETTINGS.allocator_bulk_deallocation_flush_threshold,
  };
}

/** How much WAL a sync lets grow before DuckDB checkpoints on its own (its default: 16 MB). */
const SYNC_CHECKPOINT_THRESHOLD = '256MB';

/**
 * An accuracy step's settings: its memory and threads (null leaves DuckDB's own) and a WAL
 * threshold its ledger stays below. DuckDB checkpoints on its own at the commit that takes the
 * WAL past 16 MB, with that batch's temp tables still held, so the checkpoint's memory comes on
 * top of the batch's. The ledger checkpoints between its batches instead, once what a batch held
 * is evicted (settleBatch, src/accuracy/input/incremental.ts).
 */
export function accuracyStepSettings({
  memory_limit,
  threads,
}: {
  memory_limit: string | null;
  threads: number | null;
}) {
  return {
    memory_limit,
    // more threads than cores only add buffers (config accuracy.threads, threadsWithin)
    threads: threads === null ? null : Math.min(threads, availableParallelism()),
    checkpoint_threshold: ACCURACY_CHECKPOINT_THRESHOLD,
    allocator_bulk_deallocation_flush_threshold: ACCURACY_FLUSH_THRESHOLD,
  };
}

/** Past any WAL the ledger lets grow between its checkpoints (LEDGER_WAL_BYTES). */
const ACCURACY_CHECKPOINT_THRESHOLD = '1GB';

/**
 * DuckDB allocates through the jemalloc linked into its library, which keeps the pages it freed
 * (a decay, then MADV_FREE, which still counts as resident) for reuse. Before each allocation
 * above allocator_bulk_deallocation_flush_threshold (512 MiB by default) DuckDB purges every
 * arena and trims glibc's heap. The writer file's instance, and the drafts that replace it, purge
 * before each allocation above 4MB: what a cold move, retention or a publish freed goes back
 * before their next large piece of work takes more. Purging before every allocation held their
 * peaks up to ~35 MiB lower but took twice their time; at 4MB they stay within every budget
 * measured. A sync's series merges purge above 4MB too, which takes resident memory off without
 * slowing them. Accuracy and the data-quality flags set their own for their time:
 * ACCURACY_FLUSH_THRESHOLD, FLAGS_FLUSH_THRESHOLD (the measurements:
 * docs/decisions/memory-budget.md).
 */
export const WRITER_SETTINGS = { allocator_bulk_deallocation_flush_threshold: '4MB' } as const;

/** Accuracy's batches: as fast as DuckDB's default, and the build night's step a little lower. */
const ACCURACY_FLUSH_THRESHOLD = '16MB';

/**
 * The data-quality flags (a sync step's last work, an accuracy step's first): before every
 * allocation. Their windows take much of DuckDB's memory for a slice of sites (flags.ts), freed as
 * each slice ends; at a threshold above 0 jemalloc keeps those pages, slice after slice, on top of
 * the step's peak.
 */
const FLAGS_FLUSH_THRESHOLD = '0MB';

const FLUSH_THRESHOLD = 'allocator_bulk_deallocation_flush_threshold';

/** Runs `fn`, the data-quality flags' work, under FLAGS_FLUSH_THRESHOLD, then sets back the threshold it found. */
export async function withFlagsFlushing<T>(warehouse: Tunable, fn: () => Promise<T>): Promise<T> {
  const [{ shown }] = await warehouse.all<{ shown: string }>(`SELECT current_setting('${FLUSH_THRESHOLD}') AS shown`);
  await warehouse.run(`SET ${FLUSH_THRESHOLD} = ${quoteLiteral(FLAGS_FLUSH_THRESHOLD)}`);
  try {
    return await fn();
  } finally {
    await warehouse.run(`SET ${FLUSH_THRESHOLD} = ${quoteLiteral(bytesOf(shown))}`);
  }
}

/**
 * Runs `fn` on one DuckDB thread, then sets back the threads it found (a step's own, inside one):
 * each thread keeps buffers of its own (a sort's runs, a hash table's partitions), so one thread
 * runs a statement in the least memory, and keeps a table's order in a COPY.
 */
export async function withOneThread<T>(warehouse: Pick<Tunable, 'all' | 'run'>, fn: () => Promise<T>): Promise<T> {
  const [{ threads }] = await warehouse.all<{ threads: string }>(`SELECT current_setting('threads') AS threads`);
  await warehouse.run('SET threads = 1');
  try {
    return await fn();
  } finally {
    await warehouse.run(`SET threads = ${Number(threads)}`);
  }
}

/**
 * Runs `fn` with DuckDB's build_side_probe_side optimizer off, so that each hash join builds on
 * the side the statement puts on its right; the caller holds the connection (a step's statements
 * run one after another). For the statements of an incremental score that look up a batch's
 * ledger pairs or points in the run's changes (changedRowsSql in src/accuracy/input/incremental.ts):
 * DuckDB estimates the pairs, filtered by window and site range, at a few rows, turns the LEFT
 * JOIN on the changed hours into a RIGHT JOIN and builds its hash table on the pairs, every
 * column of a batch's, which runs batches out of memory and into halves; built on the changes,
 * they fit. Only those statements: a plan changed elsewhere sums the same floats in another
 * order (an actual's interval mean).
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
 * The memory limit in force on `warehouse` now: the running step's (withDuckDBSettings), else the
 * warehouse's own or DuckDB's default (read the first time: rememberDefaultLimit). What a change
 * of the limit for a moment (the executor's handBackPool) sets back.
 */
export async function limitInForce(warehouse: Tunable): Promise<string> {
  await rememberDefaultLimit(warehouse);
  return memoryLimits.get(warehouse) ?? baseLimit(warehouse);
}
