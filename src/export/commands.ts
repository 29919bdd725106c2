// `efsync export`: a table, a view or a query of the published warehouse as an Arrow IPC file.
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { EXIT } from '../runner/exit-codes.js';
import { Warehouse } from '../warehouse/warehouse.js';
import { exportArrow } from './arrow.js';

interface ExportFlags {
  table?: string;
  query?: string;
  out: string;
  db?: string;
  config?: string;
}

export function registerExportCommands(program: Command): void {
  program
    .command('export')
    .description('Write a table, view or query of the warehouse as an Arrow IPC file (pandas read_feather, polars read_ipc, R arrow::read_feather)')
    .option('--table <name>', 'a table or view, e.g. forecast_vs_actual')
    .option('--query <sql>', 'any SELECT over the warehouse')
    .requiredOption('--out <file>', 'the .arrow file to write')
    .option('--db <path>', 'the warehouse file (overrides warehouse.path and EFSYNC_DB)')
    .option('--config <file>', 'config file (default config/efsync.yaml, or EFSYNC_CONFIG)')
    .action(async (flags: ExportFlags) => {
      process.exitCode = await exportCommand(flags);
    });
}

async function exportCommand(flags: ExportFlags): Promise<number> {
  if ((flags.table === undefined) === (flags.query === undefined)) {
    process.stderr.write('efsync export: give either --table or --query\n');
    return EXIT.usage;
  }
  if (flags.table !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(flags.table)) {
    process.stderr.write(`efsync export: --table ${JSON.stringify(flags.table)} is not a table or view name\n`);
    return EXIT.usage;
  }
  const config = loadConfig(flags.config);
  const warehouse = await Warehouse.open({ path: flags.db ?? config.warehouse.path, readOnly: true });
  try {
    const rows = await exportArrow(warehouse.connection, flags.query ?? `SELECT * FROM ${flags.table}`, flags.out);
    process.stdout.write(`${flags.out}: ${rows} rows\n`);
    return EXIT.ok;
  } catch (error) {
    process.stderr.write(`efsync export: ${(error as Error).message}\n`);
    return EXIT.usage;
  } finally {
    await warehouse.close();
  }
}
