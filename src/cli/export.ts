// `efsync export`: a table, a view or a query of the published warehouse as an Arrow IPC file.
import type { Command } from 'commander';
import type { Outcome } from '../outcome.js';
import { quoteIdentifier } from '../warehouse/sql.js';
import { command, UsageError } from './boundary.js';
import { CONFIG_OPTION, configWithDb, DB_OPTION, MEMORY_OPTION, type CommonFlags } from './runner.js';
import { openPublished, userQuery } from './sql.js';

interface ExportFlags extends CommonFlags {
  table?: string;
  query?: string;
  out: string;
}

export function registerExportCommands(program: Command): void {
  program
    .command('export')
    .description(
      'Write a table, view or query of the warehouse as an Arrow IPC file (pandas read_feather, polars read_ipc, R arrow::read_feather)',
    )
    .option('--table <name>', 'a table or view, e.g. forecast_vs_actual')
    .option('--query <sql>', 'any SELECT over the warehouse')
    .requiredOption('--out <file>', 'the .arrow file to write')
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .action(command<[], ExportFlags>(exportCommand));
}

async function exportCommand(flags: ExportFlags): Promise<Outcome> {
  if ((flags.table === undefined) === (flags.query === undefined))
    throw new UsageError('give either --table or --query');
  const config = configWithDb(flags);
  const warehouse = await openPublished(config.warehouse.path);
  try {
    const sql = flags.query ?? `SELECT * FROM ${quoteIdentifier(flags.table!)}`;
    await userQuery(warehouse, `SELECT * FROM (${sql}) LIMIT 0`, flags.query ? '--query' : `--table ${flags.table}`);
    // Loaded for an export only: apache-arrow is ~150 of the ~600 modules a command loaded at start.
    const { exportArrow } = await import('../export/arrow.js');
    const rows = await exportArrow(warehouse.connection, sql, flags.out);
    process.stdout.write(`${flags.out}: ${rows} rows\n`);
    return 'ok';
  } finally {
    await warehouse.close();
  }
}
