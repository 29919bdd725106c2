// `efsync snapshot --out FILE`: the published warehouse as one self-contained DuckDB file, for a
// laptop or a colleague (src/warehouse/snapshot.ts). Reads the published file only: it runs while a
// sync writes, and takes no lock.
import type { Command } from 'commander';
import type { Outcome } from '../outcome.js';
import { terminalProgress } from '../progress.js';
import { command, UsageError } from './boundary.js';
import { runClock } from './clock.js';
import { CONFIG_OPTION, type CommonFlags, configWithDb, DB_OPTION, MEMORY_OPTION, instantFlag } from './runner.js';

interface SnapshotFlags extends CommonFlags {
  out: string;
  from?: string;
  to?: string;
  tables?: string;
}

export function registerSnapshotCommands(program: Command): void {
  program
    .command('snapshot')
    .description('Copy the published warehouse into one DuckDB file that needs nothing beside it (cold days included)')
    .requiredOption('--out <file>', 'the DuckDB file to write (replaced once whole)')
    .option('--from <instant>', 'only valid times from this instant on, in the series tables (ISO 8601)')
    .option('--to <instant>', 'only valid times before this instant, in the series tables (ISO 8601)')
    .option('--tables <names>', 'only these tables, comma-separated (with the views and macros that read nothing else)')
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .action(command<[], SnapshotFlags>(snapshotCommand));
}

function tableList(text: string): string[] {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0) throw new UsageError('--tables needs at least one table name');
  return names;
}

async function snapshotCommand(flags: SnapshotFlags): Promise<Outcome> {
  const config = configWithDb(flags);
  const from = flags.from === undefined ? null : instantFlag('--from', flags.from);
  const to = flags.to === undefined ? null : instantFlag('--to', flags.to);
  if (from !== null && to !== null && to <= from) throw new UsageError('--to must be after --from');
  const tables = flags.tables === undefined ? null : tableList(flags.tables);
  const { writeSnapshot } = await import('../warehouse/snapshot.js');
  const started = Date.now();
  const snapshot = await writeSnapshot({
    published: config.warehouse.path,
    out: flags.out,
    from,
    to,
    tables,
    memoryLimit: config.warehouse.memory_limit,
    now: runClock()(),
    progress: terminalProgress(process.stderr),
  });
  if (snapshot.leftOut.length > 0) {
    process.stderr.write(`left out, as they read a table not copied: ${snapshot.leftOut.join(', ')}\n`);
  }
  const rows = [...snapshot.rows.values()].reduce((sum, n) => sum + n, 0);
  process.stdout.write(
    `${flags.out}: ${(snapshot.bytes / 1e6).toFixed(1)} MB, ${rows} series rows, in ${((Date.now() - started) / 1000).toFixed(1)} s; it needs no file beside it\n`,
  );
  return 'ok';
}
