/**
 * Where a run writes: the runner's one integration point with the warehouse file or the lake.
 *
 *   const sink = await openSink({ config, job, options, open, log });
 *   sink.warehouse   // what the job writes into
 *   await sink.publish();   // warehouse: publish the snapshot; parquet: commit to the lake
 *   await sink.close();
 *
 * Sink `warehouse` is the single DuckDB file. Sink `parquet` (config `sink`/`lake`, or
 * `--sink parquet --lake PATH`) is the lake's (src/lake/sink.ts): a scratch warehouse seeded
 * from the lake, committed to it on publish.
 */
import type { LoadedConfig } from '../config.js';
import { RequestError } from '../errors.js';
import type { Job, JobOptions } from '../job.js';
import { openLakeSink } from '../lake/sink.js';
import type { Logger } from '../log.js';
import { Warehouse, type OpenOptions } from '../warehouse/warehouse.js';
import { snapshotHoldsAllBut } from './ledger.js';

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
function isLakeJob(job: Job): boolean {
  return job.name === 'sync' || job.name.startsWith('sync-');
}

export async function openSink(opts: OpenSinkOptions): Promise<RunSink> {
  if (opts.config.sink === 'parquet') return openParquetSink(opts);
  const warehouse = await Warehouse.open(opts.open);
  return {
    warehouse,
    prepareToPublish: () => warehouse.prepareToPublish(),
    publish: () => warehouse.publish(),
    publishedHoldsAllBut: (runId) => snapshotHoldsAllBut(warehouse, runId),
    close: () => warehouse.close(),
  };
}

function openParquetSink(opts: OpenSinkOptions): Promise<RunSink> {
  const { config, job, options, log } = opts;
  const { holder, lockWaitMs, onWait } = opts.open;
  const lake = config.lake;
  if (!lake) throw new RequestError('sink parquet needs a lake folder: set lake in the config or pass --lake PATH');
  if (!isLakeJob(job)) {
    throw new RequestError(
      `job ${job.name} cannot write to the lake (only the sync jobs can): run it on a warehouse (sink warehouse)`,
    );
  }
  return openLakeSink({
    lake,
    shard: options.shard,
    lookback: config.sync.lookback,
    ...(options.from !== undefined ? { backfillFrom: options.from } : {}),
    holder,
    lockWaitMs,
    onWait,
    log,
  });
}
