// `efsync lake views` and `efsync lake compact`: the readers' views file over a lake, and the
// compaction of its small files. Outcomes and exit codes through the boundary (boundary.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import { MANIFEST_DIR } from '../lake/layout.js';
import type { Outcome } from '../outcome.js';
import { command, UsageError } from './boundary.js';
import { CONFIG_OPTION } from './runner.js';

interface LakeFlags {
  lake?: string;
  config?: string;
}

const LAKE_FLAG = ['--lake <path>', 'the lake folder (default: lake in the config)'] as const;

export function registerLakeCommands(program: Command): void {
  const lake = program.command('lake').description('The Parquet lake that sharded syncs write (docs/lake.md)');
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
            : `compacted ${done.replaced} files into ${done.written} (${done.rowsBefore} rows to ${done.rowsAfter}) in ${seconds} s; run ${done.runId}\n`,
        );
        return 'ok';
      }),
    );
}

/**
 * The lake these commands read: it must exist, since only a sync creates one (a mistyped path
 * would otherwise give an empty views file, or a compactor's lock folder where no lake is).
 */
function lakeOf(flags: LakeFlags): string {
  const path = flags.lake ?? loadConfig(flags.config).lake;
  if (!path) throw new UsageError('no lake: pass --lake PATH or set lake in the config');
  if (!existsSync(join(path, MANIFEST_DIR))) {
    throw new ConfigError(
      `no lake at ${path} (no ${MANIFEST_DIR} folder)`,
      'check --lake (or lake in the config); a sync with --sink parquet creates the lake',
    );
  }
  return path;
}
