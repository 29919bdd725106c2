// `efsync demo` (`npm start`): the nightly chain against the configured service, or against an
// embedded emulator with demo sites when none is configured; then where to look next.
import type { Command } from 'commander';
import { reportPath, type LoadedConfig } from '../config.js';
import type { Outcome } from '../outcome.js';
import { loadJob } from '../runner/registry.js';
import { command } from './boundary.js';
import { configWithDb, CONFIG_OPTION, DB_OPTION, MEMORY_OPTION, runCommandJob, type CommonFlags } from './runner.js';

/** Shown after the demo; the README shows the same. */
export const EXAMPLE_QUERIES = [
  [
    'Forecast against actual, newest vintage, per site',
    `SELECT s.name, f.valid_time, round(f.forecast) AS forecast, round(f.actual) AS actual, f.lead_time
     FROM forecast_vs_actual f JOIN sites s USING (site_id) ORDER BY f.valid_time DESC, s.name LIMIT 12`,
  ],
  [
    'Which model is best at which lead time (nMAE, % of capacity)',
    `SELECT model, group_key AS lead, round(value, 2) AS nmae FROM accuracy_latest
     WHERE subject = 'model' AND group_name = 'lead' AND metric = 'nmae' ORDER BY key_order, nmae`,
  ],
  [
    'How fresh each site is',
    `SELECT name, type, newest_actual, newest_forecast_update_time FROM site_freshness ORDER BY name`,
  ],
] as const;

export function registerDemoCommands(program: Command): void {
  program
    .command('demo')
    .description('Run the nightly chain (sync, then accuracy) and show where the warehouse and the report are')
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .action(
      command<[], CommonFlags>(async (flags): Promise<Outcome> => {
        const config = configWithDb(flags);
        const outcome = await runCommandJob(await loadJob('nightly'), config, {}, {});
        if (outcome === 'ok' || outcome === 'partial') printTour(config, flags);
        return outcome;
      }),
    );
}

/** `'it''s'`: a shell argument in single quotes. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function printTour(config: LoadedConfig, flags: CommonFlags): void {
  const db = config.warehouse.path;
  const dbFlag = flags.db ? ` --db ${shellQuote(flags.db)}` : '';
  const lines = [
    '',
    `Warehouse for analysts: ${db} (a snapshot efsync replaces after every run: open it read-only)`,
    `Report: ${reportPath(config)}`,
    '',
    'Queries to try (or with the DuckDB CLI, `duckdb -readonly FILE`, or Python duckdb.connect(FILE, read_only=True)):',
    ...EXAMPLE_QUERIES.flatMap(([title, sql]) => [
      `  # ${title}`,
      `  npx efsync sql${dbFlag} ${shellQuote(sql.replace(/\s+/g, ' '))}`,
    ]),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
