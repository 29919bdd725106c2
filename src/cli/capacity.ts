// `efsync capacity check | plan | apply`: the operator's loop over the capacity folder.
// Exit codes: 0 all well; 1 some site's push failed (the others landed); 2 invalid files or usage;
// apply is a run of the push-capacity job (3 warehouse busy, 4 failed as a whole, 5 interrupted).
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { CapacityConfigError, checkCapacityDir } from '../capacity/validate.js';
import { loadConfig, type LoadedConfig } from '../config.js';
import type { Outcome } from '../outcome.js';
import { loadJob } from '../runner/registry.js';
import { InputFileError } from '../yaml.js';
import { command } from './boundary.js';
import { fileErrorsJson, printFileErrors } from './file-errors.js';
import { CONFIG_OPTION, MEMORY_OPTION, runCommandJob } from './runner.js';

interface CommonFlags {
  dir?: string;
  site?: string[];
  db?: string;
  memory?: string;
  config?: string;
  json?: boolean;
}

/** The config, with `--dir` and `--db` taking precedence over the file and the environment. */
function configFor(flags: CommonFlags): LoadedConfig {
  const config = loadConfig(flags.config, process.env, { memory: flags.memory });
  return {
    ...config,
    capacity: { ...config.capacity, dir: flags.dir ?? config.capacity.dir },
    warehouse: { ...config.warehouse, path: flags.db ?? config.warehouse.path },
  };
}

function printErrors(errors: InputFileError[]): void {
  printFileErrors(errors, 'file', 'nothing was pushed');
}

/** A command body; invalid capacity files are listed one per line (and in --json), then exit 2. */
function guarded(body: (config: LoadedConfig, flags: CommonFlags) => Promise<Outcome>) {
  return command<[], CommonFlags>(async (flags) => {
    const config = configFor(flags);
    try {
      return await body(config, flags);
    } catch (error) {
      const errors =
        error instanceof CapacityConfigError ? error.errors : error instanceof InputFileError ? [error] : null;
      if (!errors) throw error;
      if (flags.json) process.stdout.write(`${JSON.stringify({ ok: false, errors: fileErrorsJson(errors) })}\n`);
      printErrors(errors);
      return 'config';
    }
  });
}

export function registerCapacityCommands(program: Command): void {
  const capacity = program
    .command('capacity')
    .description('Capacity timelines from config files: check them, plan the change, apply it');
  const common = (command: Command) =>
    command
      .option('--dir <dir>', 'capacity folder (default: capacity.dir of the config, config/capacity)')
      .option(...MEMORY_OPTION)
      .option(...CONFIG_OPTION);

  common(capacity.command('check'))
    .description("Validate the capacity files without the network (for the config repository's CI)")
    .option('--json', 'print the result as JSON')
    .action(guarded(async (config, flags) => checkCommand(config, flags)));

  common(capacity.command('plan'))
    .description('Show what apply would change, per site, against the service and against the last push')
    .option('--site <id...>', 'only these sites (id or name); every file is still validated')
    .option('--db <path>', 'warehouse holding the push ledger (default: warehouse.path of the config)')
    .option('--json', 'print the plan as JSON (for CI)')
    .action(guarded(planCommand));

  common(capacity.command('apply'))
    .description('Push the sites whose timeline changed; every push is recorded in the warehouse ledger')
    .option('--site <id...>', 'only these sites (id or name); every file is still validated')
    .option('--db <path>', 'warehouse holding the push ledger (default: warehouse.path of the config)')
    .action(guarded(applyCommand));
}

function checkCommand(config: LoadedConfig, flags: CommonFlags): Outcome {
  const { timelines, errors } = checkCapacityDir(config.capacity.dir);
  const unchecked =
    'that each site exists and that no value exceeds its nameplate by more than ' +
    `${config.capacity.max_over_nameplate_pct}%`;
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        ok: errors.length === 0,
        files: timelines.map((t) => ({ file: t.source.file, site: t.source.site, points: t.points.length })),
        errors: fileErrorsJson(errors),
        not_checked: unchecked,
      })}\n`,
    );
  } else {
    for (const t of timelines)
      process.stdout.write(`ok  ${t.source.file}: site ${t.source.site}, ${t.points.length} points\n`);
    if (timelines.length === 0 && errors.length === 0) {
      process.stdout.write(`no capacity files (*.yaml, *.yml, *.csv) in ${config.capacity.dir}\n`);
    }
    if (errors.length > 0) printErrors(errors);
    process.stdout.write(
      `Not checked offline (needs the service): ${unchecked}; \`efsync capacity plan\` checks those too.\n`,
    );
  }
  return errors.length > 0 ? 'config' : 'ok';
}

async function planCommand(config: LoadedConfig, flags: CommonFlags): Promise<Outcome> {
  // Loaded on use, so that `check` starts without the client, the emulator or DuckDB.
  const { createLogger } = await import('../log.js');
  const { connectService } = await import('../service.js');
  const { Warehouse } = await import('../warehouse/warehouse.js');
  const { formatPlan, onlySites, planCapacity, planJson } = await import('../capacity/plan.js');
  const connection = await connectService(config, createLogger({ level: config.log.level }));
  // The published snapshot holds the ledger, and reading it never waits for a writer.
  const warehouse = existsSync(config.warehouse.path)
    ? await Warehouse.open({ path: config.warehouse.path, readOnly: true })
    : null;
  try {
    const plan = onlySites(
      await planCapacity(config.capacity.dir, connection.client, warehouse, config.capacity.max_over_nameplate_pct),
      flags.site,
    );
    process.stdout.write(flags.json ? `${JSON.stringify(planJson(plan))}\n` : `${formatPlan(plan)}\n`);
    return plan.sites.some((site) => site.readError) ? 'partial' : 'ok';
  } finally {
    await warehouse?.close();
    await connection.close();
  }
}

async function applyCommand(config: LoadedConfig, flags: CommonFlags): Promise<Outcome> {
  // The offline rules first: a broken file stops here, before any connection or lock.
  const { errors } = checkCapacityDir(config.capacity.dir);
  if (errors.length > 0) throw new CapacityConfigError(errors);
  return runCommandJob(await loadJob('push-capacity'), config, {}, flags.site ? { sites: flags.site } : {}, {
    print: (result) => {
      for (const line of result.summary) process.stdout.write(`${line}\n`);
      if (result.status !== 'ok' && result.error) process.stderr.write(`${result.error}\n`);
    },
  });
}
