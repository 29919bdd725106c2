/**
 * Where a run writes: the runner's one integration point with the lake.
 *
 *   const sink = await openSink({ config, job, options, holder, lockWaitMs });
 *   sink.warehouse   // what the job writes into
 *   await sink.publish();   // warehouse: publish the snapshot; parquet: commit to the lake
 *   await sink.close();
 *
 * sink `warehouse` is the single DuckDB file. Sink `parquet` (config `sink`/`lake`, or
 * `--sink parquet --lake PATH`) holds the shard's lock in the lake, removes what a killed run of
 * the shard left uncommitted, and gives the job a scratch warehouse in a temp folder seeded from
 * the lake; publish commits the rows that are new to the lake as one manifest entry.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadedConfig } from '../config.js';
import type { Logger } from '../log.js';
import { RequestError } from '../errors.js';
import type { Job, JobOptions } from '../job.js';
import { snapshotHoldsAllBut } from '../runner/ledger.js';
import { WriterLock } from '../warehouse/lock.js';
import { Warehouse, type OpenOptions } from '../warehouse/warehouse.js';
import { commitToLake } from './commit.js';
import { ensureLake, LOCK_DIR, lakePath, removeUncommitted } from './layout.js';
import { warehouseSchema } from './schema.js';
import { seedFromLake } from './seed.js';
import { formatShard, shardTag } from './shard.js';

export interface RunSink {
  warehouse: Warehouse;
  /** Before the run is recorded ok: throws (a full disk) if publish could not succeed. */
  prepareToPublish(): Promise<void>;
  /** Makes the run's writes visible to readers. */
  publish(): Promise<void>;
  /** Whether readers already see all but runs that changed nothing, this one among them (then it need not publish). */
  publishedHoldsAllBut(runId: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface OpenSinkOptions {
  config: LoadedConfig;
  job: Job;
  options: JobOptions;
  /** How the warehouse sink opens the warehouse; the lake sink takes its holder, lock wait and onWait. */
  open: OpenOptions & { holder: { job: string; runId: string }; lockWaitMs: number };
  log: Logger;
}

/** Jobs whose writes the lake can hold: the syncs (accuracy and capacity read and write the whole warehouse). */
export function isLakeJob(job: Job): boolean {
  return job.name === 'sync' || job.name.startsWith('sync-');
}

export async function openSink(opts: OpenSinkOptions): Promise<RunSink> {
  if (opts.config.sink === 'parquet') return openLakeSink(opts);
  const warehouse = await Warehouse.open(opts.open);
  return {
    warehouse,
    prepareToPublish: () => warehouse.prepareToPublish(),
    publish: () => warehouse.publish(),
    publishedHoldsAllBut: (runId) => snapshotHoldsAllBut(warehouse, runId),
    close: () => warehouse.close(),
  };
}

async function openLakeSink(opts: OpenSinkOptions): Promise<RunSink> {
  const { config, options, log } = opts;
  const { holder, lockWaitMs, onWait } = opts.open;
  const lake = config.lake;
  if (!lake) throw new RequestError('sink parquet needs a lake folder: set lake in the config or pass --lake PATH');
  if (!isLakeJob(opts.job)) {
    throw new RequestError(
      `job ${opts.job.name} cannot write to the lake (only the sync jobs can): run it on a warehouse (sink warehouse)`,
    );
  }
  const who = shardTag(options.shard);
  await ensureLake(lake);
  const lock = await WriterLock.acquire(
    join(lakePath(lake), LOCK_DIR, `${who}.lock`),
    `lake ${lake} shard ${formatShard(options.shard)}`,
    holder,
    lockWaitMs,
    onWait,
  );
  const scratch = mkdtempSync(join(tmpdir(), `efsync-lake-${who}-`));
  let warehouse: Warehouse | undefined;
  try {
    const removed = removeUncommitted(lake, who, (await warehouseSchema()).tables);
    if (removed.length > 0)
      log.warn({ files: removed.length }, 'removed files of an earlier run of this shard that never committed');
    warehouse = await Warehouse.open({ path: join(scratch, 'scratch.duckdb'), lockWaitMs: 0, holder });
    const seeded = await seedFromLake(warehouse, lake, {
      shard: options.shard,
      lookback: config.sync.lookback,
      ...(options.from !== undefined ? { backfillFrom: options.from } : {}),
    });
    log.info({ lake, shard: formatShard(options.shard), ...seeded }, 'scratch warehouse seeded from the lake');
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
      const committed = await commitToLake(opened, { lake, who, shard: options.shard, runId: holder.runId });
      log.info(
        { lake, rows: committed.rows, files: committed.files, manifest: committed.manifest },
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
