// What a memory budget (src/resources/budget.ts) splits into: DuckDB's memory limits, the V8
// heap, and the rows that bound each piece of work. Each is its value at DEFAULT_BUDGET, where
// the nightly benchmarks measured it (docs/benchmarks.md), scaled in proportion to what the
// budget leaves past the process itself (PROCESS_BYTES), so that the same work takes the same
// share of what any budget leaves for work; docs/warehouse.md, "Memory budget".
import { availableParallelism } from 'node:os';
import { type Budget, bytesIn, DEFAULT_BUDGET, PROCESS_BYTES, SMALLEST_BUDGET } from './budget.js';

/**
 * The bounds, in rows, of the pieces of work that DuckDB's memory limits must hold: each keeps
 * its piece's hash tables, sorts and delete versions within its step's limit (the measurements
 * behind each: docs/decisions/memory-budget.md).
 */
export interface RowSizes {
  /** Series rows a sync's sites in flight hold fetched and not yet committed (sync.rows_in_memory). */
  syncInMemory: number;
  /** Forecast points accuracy aligns at a time (accuracy.batch_points). */
  accuracyBatchPoints: number;
  /** Rows a batch of the sync's loads merges at once (src/warehouse/commit-queue.ts). */
  commitBatch: number;
  /** Values one statement of the data-quality flags reads: its windows hold them all (src/warehouse/flags.ts). */
  flagValues: number;
  /** Rows a move to the cold store copies into one TEMP table and commits together (src/warehouse/cold.ts). */
  coldMoveChunk: number;
  /** Hot rows of the consecutive sites one delete of a move takes. */
  coldDeleteSlice: number;
  /** Rows of a day one sort of a cold file takes; a day with more is sorted a slice of sites at a time. */
  coldSortSlice: number;
  /** Rows a move's deletes touch between checkpoints: until one, DuckDB holds a version of each touched vector. */
  coldCheckpointAfter: number;
  /** Touched rows a move leaves held before it writes its next files (whose sort needs the pool). */
  coldCheckpointBeforeWrite: number;
  /** Rows of a day retention removes in one transaction, whole sites (src/retention/apply.ts). */
  retentionSlice: number;
  /** Rows retention removes between checkpoints: until one, DuckDB holds the version of every deleted row. */
  retentionCheckpointAfter: number;
  /** Histogram rows accuracy sums in one statement's hash table (src/accuracy/compute/stats-store.ts). */
  sumPerPartition: number;
}

export interface Sizes {
  budget: Budget;
  /** The V8 old generation's cap in MiB (--max-old-space-size; bin/efsync.js applies it). */
  heapMb: number;
  /**
   * Each of the two semi-spaces of V8's young generation, in MiB (--max-semi-space-size;
   * bin/efsync.js applies it): see youngGenerationMb.
   */
  semiSpaceMb: number;
  /**
   * The size in MiB below which a sync leaves V8's old generation uncollected
   * (src/resources/heap-floor.ts), 0 for none: see syncHeapFloorMb.
   */
  syncHeapFloorMb: number;
  /** How long DuckDB's jemalloc keeps the pages DuckDB freed, in ms (DUCKDB_JE_MALLOC_CONF; bin/efsync.js applies it). */
  allocatorDecayMs: number;
  /** DuckDB's memory_limit outside the steps, during a sync (and retention), while scoring. */
  duckdb: { warehouse: string; sync: string; accuracy: string };
  /** DuckDB's threads while scoring (threadsWithin its memory_limit; null: one per core), at most one per core. */
  accuracyThreads: number | null;
  rows: RowSizes;
}

/**
 * Past this floor a sync's full collections are already rare (its live data stays well below it),
 * so a larger budget leaves the rest to DuckDB.
 */
const MAX_SYNC_HEAP_FLOOR_MB = 128;

/**
 * A sync's old generation floor: half of what the budget gives past the default budget, at most
 * MAX_SYNC_HEAP_FLOOR_MB; none up to the default. What the floor keeps is garbage on top of the
 * sync's peak, and a 1,000-site sync at the default budget peaks within ~20 MiB of it without
 * one (docs/decisions/memory-budget.md): the floor spends only memory the default does not need.
 */
function syncHeapFloorMb(budget: Budget): number {
  return Math.min(MAX_SYNC_HEAP_FLOOR_MB, Math.max(0, Math.round((budget.bytes - DEFAULT_BUDGET) / 2 / 2 ** 20)));
}

/** Each size at the default budget. */
const AT_DEFAULT = {
  heapMb: 192,
  duckdbMb: { warehouse: 64, sync: 64, accuracy: 96 },
  rows: {
    syncInMemory: 120_000,
    accuracyBatchPoints: 100_000,
    commitBatch: 500_000,
    flagValues: 40_000,
    coldMoveChunk: 500_000,
    coldDeleteSlice: 1_000_000,
    coldSortSlice: 500_000,
    coldCheckpointAfter: 1_000_000,
    coldCheckpointBeforeWrite: 100_000,
    retentionSlice: 500_000,
    retentionCheckpointAfter: 1_000_000,
    sumPerPartition: 100_000,
  } satisfies RowSizes,
};

/**
 * How long jemalloc keeps the pages DuckDB freed. At and above the default budget, a second: a
 * sync soon allocates again the pages it frees, and handing them back after 50 ms cost it a tenth
 * of its time in madvise calls and page faults without lowering its peak. Below it, 10 ms: a
 * second's worth took 20–80 MiB of a step's peak, more than a smaller budget leaves past the
 * process, while handing every page back at once doubled a night's system time, and 10 ms gets
 * most of a second's speed for ~10 MiB of peak (docs/decisions/memory-budget.md).
 */
function allocatorDecayMs(budget: Budget): number {
  return budget.bytes < DEFAULT_BUDGET ? 10 : 1000;
}

/**
 * The semi-spaces grow with the budget, as a power of two from 8 MiB at the default budget (and
 * below it) to 32 MiB: short-lived garbage then dies young instead of being copied and promoted,
 * and a sync spends less time in minor collections; past 32 MiB it saves no more
 * (docs/decisions/memory-budget.md).
 */
function youngGenerationMb(scale: number): number {
  return 2 ** Math.min(5, Math.max(3, Math.floor(Math.log2(8 * scale))));
}

/**
 * What each DuckDB thread of a step needs of the step's memory limit besides the piece of work the
 * threads share: each keeps buffers of its own (a hash table's partitions, a sort's runs, a
 * scan's row groups), whatever the piece's size. At half of it per thread, two threads ran out of
 * memory on a day of one site's statistics that one thread computed within the same limit
 * (docs/decisions/memory-budget.md, "Threads").
 */
const MEMORY_PER_THREAD = 32 * 2 ** 20;

/**
 * The threads a step's memory limit holds: one per MEMORY_PER_THREAD of it, at least one; null
 * (DuckDB's own, one per core) without a limit. The step runs at most one per core
 * (accuracyStepSettings), so the count does not depend on the machine.
 */
export function threadsWithin(memoryLimit: string | null): number | null {
  if (memoryLimit === null) return null;
  return Math.max(1, Math.floor(bytesIn(memoryLimit) / MEMORY_PER_THREAD));
}

/**
 * The sizes a budget sets. A budget below the smallest (only a cgroup's limit can be: the flag,
 * the variable and the config refuse one) gets the smallest budget's sizes: below it the process
 * itself takes nearly all of the budget, and sizes in proportion to what is left would be a
 * V8 heap and DuckDB limits no command runs in. Such a process works in its smallest pieces and
 * may still meet the kernel's limit (belowSmallest says so).
 */
export function sizesFor(budget: Budget): Sizes {
  const sized = Math.max(budget.bytes, SMALLEST_BUDGET);
  const scale = (sized - PROCESS_BYTES) / (DEFAULT_BUDGET - PROCESS_BYTES);
  const scaled = (value: number) => Math.max(1, Math.round(value * scale));
  const megabytes = (mb: number) => `${scaled(mb)}MB`;
  const { warehouse, sync, accuracy } = AT_DEFAULT.duckdbMb;
  const rows = Object.fromEntries(Object.entries(AT_DEFAULT.rows).map(([name, value]) => [name, scaled(value)]));
  return {
    budget,
    heapMb: scaled(AT_DEFAULT.heapMb),
    semiSpaceMb: youngGenerationMb(scale),
    syncHeapFloorMb: syncHeapFloorMb(budget),
    allocatorDecayMs: allocatorDecayMs(budget),
    duckdb: { warehouse: megabytes(warehouse), sync: megabytes(sync), accuracy: megabytes(accuracy) },
    accuracyThreads: threadsWithin(megabytes(accuracy)),
    rows: rows as unknown as RowSizes,
  };
}

/** The sizes at the default budget: what a warehouse opened with no budget of its own uses. */
export const DEFAULT_SIZES = sizesFor({ bytes: DEFAULT_BUDGET, source: 'default' });

/**
 * What to warn of when the budget is below the smallest (a cgroup's limit): efsync is sized as for
 * the smallest budget and may be stopped by the kernel at the cgroup's limit; null otherwise.
 */
export function belowSmallest(budget: Budget): string | null {
  if (budget.bytes >= SMALLEST_BUDGET) return null;
  return (
    `the memory budget, ${megabytesText(budget.bytes)} (${budget.source}), is below the smallest efsync sizes itself for, ` +
    `${megabytesText(SMALLEST_BUDGET)}: sized as for ${megabytesText(SMALLEST_BUDGET)}, it may meet the limit and be stopped by the kernel; ` +
    `a limit of ${megabytesText(SMALLEST_BUDGET)} or more runs within it`
  );
}

function megabytesText(bytes: number): string {
  return `${Math.round(bytes / 1e6)}MB`;
}

/** The sizes in one line, for `efsync status` and the log line after a run's `run started`. */
export function describeSizes(sizes: Sizes): string {
  const { budget, heapMb, semiSpaceMb, syncHeapFloorMb, allocatorDecayMs, duckdb, accuracyThreads, rows } = sizes;
  const cap = heapCapOfThisProcess();
  return (
    `memory budget ${megabytesText(budget.bytes)} (${budget.source}` +
    (budget.bytes < SMALLEST_BUDGET ? `, sized as ${megabytesText(SMALLEST_BUDGET)}, the smallest` : '') +
    '): ' +
    `V8 heap ${heapMb}MiB (this process: ${cap === null ? 'uncapped, Node before 22.15' : `${cap}MiB`}), ` +
    `young generation 2x${semiSpaceMb}MiB, ` +
    (syncHeapFloorMb > 0 ? `old generation collected from ${syncHeapFloorMb}MiB syncing; ` : '') +
    `DuckDB's freed pages kept ${allocatorDecayMs} ms; ` +
    `DuckDB ${duckdb.warehouse} outside the steps, ${duckdb.sync} syncing, ${duckdb.accuracy} scoring ` +
    `on ${threadsText(accuracyThreads)}; ` +
    `rows in memory ${rows.syncInMemory}, batch points ${rows.accuracyBatchPoints}`
  );
}

/** Threads as a step runs them: at most one per core (accuracyStepSettings). */
function threadsText(threads: number | null): string {
  if (threads === null) return 'one thread per core';
  const running = Math.min(threads, availableParallelism());
  return `${running} thread${running === 1 ? '' : 's'}`;
}

/** The --max-old-space-size this process started with (bin/efsync.js's restart, or given), or null. */
function heapCapOfThisProcess(): number | null {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  const given = flags.findLast((flag) => flag.startsWith('--max-old-space-size='));
  return given === undefined ? null : Number(given.slice('--max-old-space-size='.length));
}
