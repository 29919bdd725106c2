/**
 * The lake as the place a run writes (sink `parquet`: config `sink`/`lake`, or
 * `--sink parquet --lake PATH`; the runner opens it, src/runner/sink.ts): it holds the shard's lock
 * in the lake, removes what a killed run of the shard left uncommitted, and gives the job a
 * scratch warehouse in a temp folder seeded from the lake; publish commits the rows that are new
 * to the lake copy-on-write, one Delta commit per table that changed (commit.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import { WriterLock } from '../warehouse/lock.js';
import { Warehouse, type OpenOptions } from '../warehouse/warehouse.js';
import { commitToLake } from './commit.js';
import { openDuckDB } from '../warehouse/duckdb.js';
import { ensureLake, LOCK_DIR, lakePath, removeUncommitted } from './layout.js';
import { type SeedOptions, seedFromLake } from './seed.js';
import { formatShard, shardTag } from './shard.js';

export interface LakeSinkOptions extends SeedOptions {
  lake: string;
  /** The run holding the shard's lock, and how long to wait for it (onWait: to log the wait). */
  holder: { job: string; runId: string };
  lockWaitMs: number;
  onWait?: OpenOptions['onWait'];
  log: Logger;
}

/**
 * The lake's sink of a run (the runner's `RunSink`, src/runner/sink.ts): the shard's lock, a
 * scratch warehouse seeded from the lake, and on publish one commit of the rows new to the lake.
 */
export async function openLakeSink(opts: LakeSinkOptions) {
  const { lake, shard, holder, lockWaitMs, onWait, log } = opts;
  const who = shardTag(shard);
  await ensureLake(lake);
  const lock = await WriterLock.acquire(
    join(lakePath(lake), LOCK_DIR, `${who}.lock`),
    `lake ${lake} shard ${formatShard(shard)}`,
    holder,
    lockWaitMs,
    onWait,
  );
  const scratch = mkdtempSync(join(tmpdir(), `efsync-lake-${who}-`));
  let warehouse: Warehouse | undefined;
  try {
    const removed = await removeUncommittedOf(lake, who);
    if (removed.length > 0)
      log.warn({ files: removed.length }, 'removed files of an earlier run of this shard that never committed');
    warehouse = await Warehouse.open({ path: join(scratch, 'scratch.duckdb'), lockWaitMs: 0, holder });
    const seeded = await seedFromLake(warehouse, lake, opts);
    log.info({ lake, shard: formatShard(shard), ...seeded }, 'scratch warehouse seeded from the lake');
  } catch (error) {
    await warehouse?.close();
    rmSync(scratch, { recursive: true, force: true });
    lock.release();
    throw error;
  }
  const opened = warehouse;
  return {
    warehouse: opened,
    prepareToPublish: async () => undefined,
    // The lake commits every run: only the rows new to the lake (the run's ledger row among
    // them), never a copy of what is there, so a run that changed nothing costs little.
    publishedHoldsAllBut: async () => false,
    async publish() {
      const committed = await commitToLake(opened, { lake, who, shard, runId: holder.runId });
      log.info(
        {
          lake,
          run: committed.run,
          rows: committed.rows,
          files: committed.files,
          removed: committed.removed,
          replans: committed.replans,
          versions: committed.versions,
        },
        'committed to the lake',
      );
    },
    async close() {
      try {
        await opened.close();
      } finally {
        rmSync(scratch, { recursive: true, force: true });
        lock.release();
      }
    },
  };
}

async function removeUncommittedOf(lake: string, who: string): Promise<string[]> {
  const db = await openDuckDB(':memory:');
  try {
    return await removeUncommitted(db.connection, lake, who);
  } finally {
    db.close();
  }
}
