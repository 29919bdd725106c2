// `efsync demo` (`npm start`): the nightly chain against the configured service, or against an
// embedded emulator with demo sites when none is configured; then where to look next.
import type { Command } from 'commander';
import { EXIT } from './runner/exit-codes.js';
import { runJobCommand, type CommonFlags } from './runner/commands.js';
import { loadConfig } from './config.js';

const EXAMPLE_QUERIES = [
  ['Forecast against actual, newest vintage, per site',
    `SELECT s.name, f.valid_time, round(f.forecast) AS forecast, round(f.actual) AS actual, f.lead_time
     FROM forecast_vs_actual f JOIN sites s USING (site_id) ORDER BY f.valid_time DESC, s.name LIMIT 12`],
  ['Which model is best at which lead time (nMAE, % of capacity)',
    `SELECT model, group_key AS lead, round(value, 2) AS nmae FROM accuracy_latest
     WHERE subject = 'model' AND group_name = 'lead' AND metric = 'nmae' ORDER BY key_order, nmae`],
  ['How fresh each site is',
    `SELECT name, type, newest_actual, newest_forecast_update_time FROM site_freshness ORDER BY name`],
];

export function registerDemoCommands(program: Command): void {
  program
    .command('demo')
    .description('Run the nightly chain (sync, then accuracy) and show where the warehouse and the report are')
    .option('--db <path>', 'the warehouse file (overrides warehouse.path and EFSYNC_DB)')
    .option('--config <file>', 'config file (default config/efsync.yaml, or EFSYNC_CONFIG)')
    .action(async (flags: CommonFlags) => {
      const code = await runJobCommand('nightly', flags);
      if (code === EXIT.ok || code === EXIT.partial) printTour(flags);
      process.exitCode = code;
    });
}

function printTour(flags: CommonFlags): void {
  const config = loadConfig(flags.config);
  const db = flags.db ?? config.warehouse.path;
  const lines = [
    '',
    `Warehouse for analysts: ${db} (a snapshot efsync replaces after every run: open it read-only)`,
    `Report: ${config.accuracy.report}`,
    '',
    'Queries to try, e.g. with the DuckDB CLI, or Python duckdb.connect(path, read_only=True):',
    ...EXAMPLE_QUERIES.flatMap(([title, sql]) => [
      `  -- ${title}`,
      `  duckdb -readonly ${db} "${sql.replace(/\s+/g, ' ')}"`,
    ]),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
