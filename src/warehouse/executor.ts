// The executor: the one place efsync runs bounded work against DuckDB's memory limit. Its callers
// (the sync's commit queue, accuracy, retention, the cold store, the data-quality flags, the
// writer file's compaction) cut their work into pieces by the budget's row bounds
// (src/resources/sizes.ts); the executor runs each piece, splits one that still runs out of
// memory into halves, and hands memory back between steps. docs/decisions/memory-budget.md,
// "The executor".
//
//   await runInHalves(sites, (part) => deleteRows(part), { handBack: () => wh.checkpoint() });
//   await runSplitting(slice, compute, { halves: sliceHalves, handBack });  // a piece of any shape
//   await firstThatFits([1, 4, 16], (parts) => sumIn(parts));               // fewer statements first
//   const skipped = await skippedForMemory(() => compact());                // work that only saves
//   await handBackPool(wh);                                                  // between two steps
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FailedError } from '../errors.js';
import { isOutOfMemory } from './duckdb.js';
import { hasNativeExtension } from './native.js';
import { limitInForce, type Tunable, withOneThread } from './settings.js';
import { quoteLiteral } from './sql.js';

/**
 * How a piece of work (a list of sites, days or rows; or a slice of sites and days) is split when
 * DuckDB runs out of memory in it. The rule: a piece that runs out hands memory back (handBack),
 * then goes again as its two halves, each split the same way, down to a piece that cannot be
 * split (an item alone), which gets exactly one more try, on one DuckDB thread when the
 * warehouse is given, and then fails with its error. A DuckDB statement that runs out of memory
 * rolls back, so a half never meets its own work done.
 */
export interface Splitting<P, R> {
  /** The two halves of a piece, in the order they run; null for one that cannot be split. */
  halves(piece: P): Promise<readonly [P, P] | null> | readonly [P, P] | null;
  /**
   * Hands memory back after a piece ran out, before any of it goes again: a checkpoint, which
   * frees what the piece's writes and deletes hold. A DELETE that failed part-way leaves its
   * marks until one, and a retry of the same rows then conflicts. Without a hand-back, an item
   * alone that runs out fails at once: its retry would meet the same memory.
   */
  handBack?: () => Promise<void>;
  /**
   * The warehouse the work runs on: an item alone's one more try runs on one of its threads
   * (withOneThread), each of which keeps buffers of its own besides the item's work.
   */
  warehouse?: Pick<Tunable, 'all' | 'run'>;
  /** After the hand-back: what of the piece is still to do (null: nothing); by default all of it. */
  remaining?: (piece: P) => Promise<P | null>;
  /** Runs after each piece that went through, outside the splitting: a failure in it fails the work. */
  settle?: (piece: P, result: R) => Promise<void>;
  /**
   * A piece that failed for a reason splitting does not cure (not memory, or an item alone that
   * ran out again): settled by the caller with the result it stands for. By default, thrown.
   */
  failed?: (piece: P, error: unknown) => Promise<R>;
}

/** Runs `work` on `piece`, split as `splitting` says while it runs out of memory; the result of each piece run, in order. */
export async function runSplitting<P, R>(
  piece: P,
  work: (piece: P) => Promise<R>,
  splitting: Splitting<P, R>,
): Promise<R[]> {
  return attempt(piece, work, splitting, FIRST_TRY);
}

/** Where a piece stands: an item alone's one more try, and the out-of-memory error its split began with. */
interface Try {
  retry: boolean;
  outOfMemory: unknown;
}

const FIRST_TRY: Try = { retry: false, outOfMemory: null };

async function attempt<P, R>(
  piece: P,
  work: (piece: P) => Promise<R>,
  splitting: Splitting<P, R>,
  at: Try,
): Promise<R[]> {
  let result: R;
  try {
    result = await work(piece);
  } catch (error) {
    if (!isOutOfMemory(error) || at.retry) return [await failure(piece, splitting, explained(error, at))];
    return split(piece, work, splitting, error);
  }
  await splitting.settle?.(piece, result);
  return [result];
}

/** A piece that ran out of memory: memory handed back, then its halves, or an item alone once more. */
async function split<P, R>(
  piece: P,
  work: (piece: P) => Promise<R>,
  splitting: Splitting<P, R>,
  outOfMemory: unknown,
): Promise<R[]> {
  await splitting.handBack?.();
  const left = splitting.remaining ? await splitting.remaining(piece) : piece;
  if (left === null) return [];
  const halves = await splitting.halves(left);
  if (halves) {
    const first = await attempt(halves[0], work, splitting, { retry: false, outOfMemory });
    return [...first, ...(await attempt(halves[1], work, splitting, { retry: false, outOfMemory }))];
  }
  if (!splitting.handBack) return [await failure(piece, splitting, outOfMemory)];
  const { warehouse } = splitting;
  const alone = warehouse ? (item: P) => withOneThread(warehouse, () => work(item)) : work;
  return attempt(left, alone, splitting, { retry: true, outOfMemory });
}

async function failure<P, R>(piece: P, splitting: Splitting<P, R>, error: unknown): Promise<R> {
  if (!splitting.failed) throw error;
  return splitting.failed(piece, error);
}

/**
 * The error a piece failed with, said plainly when it is DuckDB's conflict with the deletes a
 * failed attempt left marked (`Conflict on tuple deletion`): a DELETE that ran out of memory
 * part-way can leave them in the same database instance, and no retry there gets through, so
 * the piece fails rather than splitting on.
 */
function explained(error: unknown, at: Try): unknown {
  if (at.outOfMemory === null || !(error instanceof Error) || !DELETE_CONFLICT.test(error.message)) return error;
  const conflict = new FailedError(
    `DuckDB ran out of memory (${firstLine(at.outOfMemory)}), and the retry of the same rows conflicted with ` +
      `the deletes the failed attempt left marked (${firstLine(error)})`,
    'a larger memory budget (--memory, EFSYNC_MEMORY, resources.memory) lets the work go through in one attempt',
  );
  conflict.cause = error;
  return conflict;
}

const DELETE_CONFLICT = /Conflict on tuple deletion/;

/** The first line of an error's message (DuckDB adds the statement and its context after it). */
function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0];
}

/** The halves of a list, the first the longer; null for fewer than two items. */
export function halvesOf<T>(items: readonly T[]): readonly [T[], T[]] | null {
  if (items.length < 2) return null;
  const half = Math.ceil(items.length / 2);
  return [items.slice(0, half), items.slice(half)];
}

/** runSplitting for a list of items (sites, days, loads): halves of the list, down to an item alone. */
export async function runInHalves<T, R>(
  items: readonly T[],
  work: (items: readonly T[]) => Promise<R>,
  splitting: Omit<Splitting<readonly T[], R>, 'halves'> = {},
): Promise<R[]> {
  return runSplitting(items, work, { ...splitting, halves: halvesOf });
}

/** Consecutive items in chunks of at most `maxRows` rows together (an item with more is a chunk alone), with their rows. */
export function chunksOf<K>(
  items: readonly { key: K; rows: number }[],
  maxRows: number,
): { keys: K[]; rows: number }[] {
  const chunks: { keys: K[]; rows: number }[] = [];
  for (const item of items) {
    const last = chunks.at(-1);
    if (last && last.rows + item.rows <= maxRows) {
      last.keys.push(item.key);
      last.rows += item.rows;
    } else chunks.push({ keys: [item.key], rows: item.rows });
  }
  return chunks;
}

/**
 * Runs `work` with each plan in turn (partition counts, fewest statements first) until one does
 * not run out of memory; the last plan's error is thrown. For work whose memory falls with the
 * number of statements it is cut into, and that starts over whole with each plan.
 */
export async function firstThatFits<T>(plans: readonly T[], work: (plan: T) => Promise<void>): Promise<void> {
  for (const [i, plan] of plans.entries()) {
    try {
      return await work(plan);
    } catch (error) {
      if (!isOutOfMemory(error) || i === plans.length - 1) throw error;
    }
  }
}

/**
 * Runs work that only improves what is there (a table's layout, a file's free space): when
 * DuckDB runs out of memory its rollback leaves things as they were, and why it was skipped (the
 * error's first line) is returned instead of thrown; null when it went through.
 */
export async function skippedForMemory(work: () => Promise<unknown>): Promise<string | null> {
  try {
    await work();
    return null;
  } catch (error) {
    if (!isOutOfMemory(error)) throw error;
    return firstLine(error);
  }
}

/**
 * Evicts from DuckDB's buffer pool every block no statement holds, by lowering its memory limit
 * to almost nothing for a moment, then setting the limit in force again (limitInForce); then gives
 * the C heap's free pages back to the kernel (efsync_trim, where efsync's extension is loaded).
 * Called between two steps of work, so that the next step's peak is its own work, not its work
 * on top of the last one's leftovers. Why the eviction: DuckDB's eviction queues hold a weak
 * reference to every block a statement ever unpinned, and the memory of a block freed since (with
 * its queue entry) stays allocated until that entry is dropped. A queue drops its dead entries
 * only once it holds ~32,000 of them, and there are eight queues, so a sync of many small
 * statements (each hash join builds one block per partition, 16 of them) keeps freed blocks that
 * grow glibc's heap with the number of sites. An eviction walks the queues and drops dead entries
 * as it passes them; this one walks them all. Why the trim: glibc gives back only the top of its
 * heap, and what Node and DuckDB freed below a block still in use stays in the RSS
 * (docs/decisions/memory-budget.md, "Handing memory back").
 */
export async function handBackPool(warehouse: Tunable): Promise<void> {
  await warehouse.exclusive(async () => {
    const restored = await limitInForce(warehouse);
    try {
      // What a statement holds cannot go: DuckDB then refuses the limit, having evicted the rest.
      await warehouse.run(`SET memory_limit = '${PURGE_LIMIT}'`).catch((error: unknown) => {
        if (!isOutOfMemory(error)) throw error;
      });
    } finally {
      await warehouse.run(`SET memory_limit = ${quoteLiteral(restored)}`);
    }
    if (await hasNativeExtension(warehouse)) await warehouse.run('SELECT efsync_trim()');
  });
}

/** The memory limit of a purge (handBackPool): below anything a block takes. */
const PURGE_LIMIT = '1MB';

/**
 * Hands back, before a run's publish and before a report's plots, what the work before left in
 * memory: DuckDB's buffer pool (handBackPool) and V8's garbage (collectGarbage). Between a
 * chain's steps the checkpoint purges the pool, and the chain collects the garbage.
 */
export async function handBackMemory(warehouse: Tunable): Promise<void> {
  await handBackPool(warehouse);
  collectGarbage();
}

/** V8's full collection; Node exposes it only behind `--expose-gc`, so the flag is set here, once. */
let gc: (() => void) | null | undefined;

/** Collects V8's garbage, which nothing in the work that follows may make V8 collect. */
export function collectGarbage(): void {
  if (gc === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    } catch {
      gc = null; // a runtime that refuses the flag keeps its garbage until V8 collects it
    }
  }
  // The first collection frees the garbage; the second gives the emptied pages back to the system.
  gc?.();
  gc?.();
}
