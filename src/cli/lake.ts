// `efsync lake init`, `views`, `compact` and `vacuum`: the lake's Delta tables created, the
// readers' views file over them, the compaction of small files and the deletion of files no
// snapshot needs. Outcomes and exit codes through the boundary (boundary.ts).
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import { isLake } from '../lake/layout.js';
import { parseDuration } from '../time.js';
import type { Outcome } from '../outcome.js';
import { command, UsageError } from './boundary.js';
import { CONFIG_OPTION } from './runner.js';

interface LakeFlags {
  lake?: string;
  config?: string;
}

const LAKE_FLAG = ['--lake <path>', 'the lake folder (default: lake in the config)'] as const;

export function registerLakeCommands(program: Command): void {
  const lake = program.command('lake').description('The Delta Lake tables that sharded syncs write (docs/lake.md)');
  lake
    .command('init')
    .description("Create the lake's Delta tables, or add the columns a newer efsync added (before shards run)")
    .requiredOption('--lake <path>', 'the lake folder to create or update')
    .action(
      command<[], { lake: string }>(async (flags): Promise<Outcome> => {
        const { ensureLake } = await import('../lake/layout.js');
        const ensured = await ensureLake(flags.lake, { rewriteSchemas: true });
        const count = (change: string) => [...ensured.values()].filter((e) => e.change === change).length;
        process.stdout.write(
          `lake ${flags.lake}: ${ensured.size} Delta tables, ${count('created')} created, ${count('evolved')} given new columns\n`,
        );
        return 'ok';
      }),
    );
  lake
    .command('views')
    .description("Write a DuckDB file of views over the lake, with the warehouse's table and view names and comments")
    .option(...LAKE_FLAG)
    .requiredOption('--out <file>', 'the views file to write, e.g. lake.duckdb')
    .option(...CONFIG_OPTION)
    .action(
      command<[], LakeFlags & { out: string }>(async (flags): Promise<Outcome> => {
        const path = lakeOf(flags);
        const { writeViewsFile } = await import('../lake/views.js');
        const written = await writeViewsFile(path, flags.out);
        process.stdout.write(
          `wrote ${written.out}: ${written.tables} table views and ${written.views} analyst views over the lake ${path}\n`,
        );
        return 'ok';
      }),
    );
  lake
    .command('compact')
    .description(
      "Merge each table partition's committed files into one, dropping duplicates and superseded rows (safe beside running shards)",
    )
    .option(...LAKE_FLAG)
    .option(...CONFIG_OPTION)
    .action(
      command<[], LakeFlags>(async (flags): Promise<Outcome> => {
        const path = lakeOf(flags);
        const { compactLake } = await import('../lake/compact.js');
        const started = performance.now();
        const done = await compactLake(path);
        const seconds = ((performance.now() - started) / 1000).toFixed(1);
        process.stdout.write(
          done.written === 0
            ? `nothing to compact in ${path} (${seconds} s)\n`
            : `compacted ${done.replaced} files into ${done.written} (${done.rowsBefore} rows to ${done.rowsAfter}) in ${seconds} s; ${done.checkpoints} checkpoints; run ${done.runId}\n`,
        );
        return 'ok';
      }),
    );
  lake
    .command('vacuum')
    .description(
      'Delete the data files no table holds any more (compacted away, never committed) once older than the retention',
    )
    .option(...LAKE_FLAG)
    .option('--retain <duration>', 'keep files removed less than this long ago, for readers of older snapshots', '7d')
    .option(...CONFIG_OPTION)
    .action(
      command<[], LakeFlags & { retain: string }>(async (flags): Promise<Outcome> => {
        // the flag first: a bad --retain is the same mistake wherever the lake is
        const retain = retention(flags.retain);
        const path = lakeOf(flags);
        const { vacuumLake } = await import('../lake/vacuum.js');
        const done = await vacuumLake(path, retain);
        process.stdout.write(
          `vacuumed ${path}: ${done.files} data files (${done.bytes} bytes) and ${done.leftovers} leftovers of killed writers deleted\n`,
        );
        return 'ok';
      }),
    );
}

/**
 * The lake these commands read: it must exist, since only `lake init` or a sync creates one (a
 * mistyped path would otherwise give an empty views file, or a compactor's lock folder where no
 * lake is).
 */
function lakeOf(flags: LakeFlags): string {
  const path = flags.lake ?? loadConfig(flags.config).lake;
  if (!path) throw new UsageError('no lake: pass --lake PATH or set lake in the config');
  if (!isLake(path)) {
    throw new ConfigError(
      `no lake at ${path} (no Delta table sites/_delta_log)`,
      'check --lake (or lake in the config); efsync lake init (or a sync with --sink parquet) creates the lake',
    );
  }
  return path;
}

function retention(text: string): number {
  try {
    return parseDuration(text);
  } catch (error) {
    throw new UsageError(`--retain: ${(error as Error).message}`);
  }
}
