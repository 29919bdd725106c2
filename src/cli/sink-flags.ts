// `--sink warehouse|parquet` and `--lake PATH` on `efsync run` and `efsync sync`, over the config's `sink` and `lake`.
import type { LoadedConfig } from '../config.js';
import { UsageError } from './boundary.js';

export interface SinkFlags {
  sink?: string;
  lake?: string;
}

export const SINK_OPTION = [
  '--sink <sink>',
  'warehouse (the DuckDB file) or parquet (the lake; docs/lake.md); default: sink in the config',
] as const;
export const LAKE_OPTION = [
  '--lake <path>',
  'the lake folder for --sink parquet (overrides lake in the config)',
] as const;

/** The config with the flags applied; a usage error when they make no sense. */
export function withSinkFlags(config: LoadedConfig, flags: SinkFlags): LoadedConfig {
  if (flags.sink !== undefined && flags.sink !== 'warehouse' && flags.sink !== 'parquet') {
    throw new UsageError(`--sink: ${JSON.stringify(flags.sink)} is not a sink; use warehouse or parquet`);
  }
  const sink = (flags.sink as LoadedConfig['sink'] | undefined) ?? config.sink;
  const lake = flags.lake ?? config.lake;
  if (sink === 'parquet' && !lake)
    throw new UsageError('--sink parquet needs a lake folder: pass --lake PATH or set lake in the config');
  return { ...config, sink, lake };
}

/** Where a run wrote, for the last line of its summary. */
export function describeSink(config: LoadedConfig, shard?: { index: number; count: number }): string {
  if (config.sink !== 'parquet') return `warehouse ${config.warehouse.path}`;
  return `lake ${config.lake}${shard ? ` shard ${shard.index}/${shard.count}` : ''}`;
}
