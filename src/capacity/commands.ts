// `efsync capacity check | plan | apply`: the operator's loop over the capacity folder.
// Exit codes: 0 all well; 1 some site's push failed (the others landed); 2 invalid files or usage.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import pushCapacity from '../../jobs/push-capacity.js';
import { loadConfig, type LoadedConfig } from '../config.js';
import { createLogger } from '../log.js';
import { runJob } from '../runner/run.js';
import { connectService } from '../service.js';
import { Warehouse } from '../warehouse/warehouse.js';
import type { InputFileError } from '../yaml.js';
import { formatPlan, planCapacity, planJson } from './plan.js';
import { CapacityConfigError, checkCapacityDir } from './validate.js';

const EXIT_INVALID = 2;

interface CommonOptions {
  dir?: string;
  db?: string;
}

/** The config, with `--dir` and `--db` taking precedence over the file and the environment. */
function configFor(options: CommonOptions): LoadedConfig {
  const config = loadConfig();
  return {
    ...config,
    capacity: { ...config.capacity, dir: options.dir ?? config.capacity.dir },
    warehouse: { ...config.warehouse, path: options.db ?? config.warehouse.path },
  };
}

function printErrors(errors: InputFileError[]): void {
  for (const error of errors) process.stderr.write(`${error.message}\n`);
  const files = new Set(errors.map((e) => e.file)).size;
  process.stderr.write(
    `${errors.length} error${errors.length === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'}: nothing was pushed\n`,
  );
}

function errorJson(errors: InputFileError[]) {
  return errors.map((e) => ({ file: e.file, line: e.line, column: e.column, rule: e.rule }));
}

export function registerCapacityCommands(program: Command): void {
  const capacity = program
    .command('capacity')
    .description('Capacity timelines from config files: check them, plan the change, apply it');

  capacity
    .command('check')
    .description('Validate the capacity files without the network (for the config repository\'s CI)')
    .option('--dir <dir>', 'capacity folder (default: capacity.dir of the config, config/capacity)')
    .option('--json', 'print the result as JSON')
    .action((options: CommonOptions & { json?: boolean }) => {
      const config = configFor(options);
      const { timelines, errors } = checkCapacityDir(config.capacity.dir);
      const unchecked = 'that each site exists and that no value exceeds its nameplate by more than ' +
        `${config.capacity.max_over_nameplate_pct}%`;
      if (options.json) {
        process.stdout.write(`${JSON.stringify({
          ok: errors.length === 0,
          files: timelines.map((t) => ({ file: t.source.file, site: t.source.site, points: t.points.length })),
          errors: errorJson(errors),
          not_checked: unchecked,
        })}\n`);
      } else {
        for (const t of timelines) {
          process.stdout.write(`ok  ${t.source.file}: site ${t.source.site}, ${t.points.length} points\n`);
        }
        if (errors.length > 0) printErrors(errors);
        process.stdout.write(`Not checked offline (needs the service): ${unchecked}. \`efsync capacity plan\` checks those too.\n`);
      }
      process.exitCode = errors.length > 0 ? EXIT_INVALID : 0;
    });

  capacity
    .command('plan')
    .description('Show what apply would change, per site, against the service and against the last push')
    .option('--dir <dir>', 'capacity folder (default: capacity.dir of the config, config/capacity)')
    .option('--db <path>', 'warehouse holding the push ledger (default: warehouse.path of the config)')
    .option('--json', 'print the plan as JSON (for CI)')
    .action(async (options: CommonOptions & { json?: boolean }) => {
      const config = configFor(options);
      const log = createLogger({ level: config.log.level });
      const connection = await connectService(config, log);
      // The published snapshot is enough to read the ledger, and reading it never waits for a writer.
      const warehouse = existsSync(config.warehouse.path)
        ? await Warehouse.open({ path: config.warehouse.path, readOnly: true })
        : null;
      try {
        const plan = await planCapacity(
          config.capacity.dir, connection.client, warehouse, config.capacity.max_over_nameplate_pct,
        );
        process.stdout.write(options.json ? `${JSON.stringify(planJson(plan))}\n` : `${formatPlan(plan)}\n`);
      } catch (error) {
        if (!(error instanceof CapacityConfigError)) throw error;
        if (options.json) process.stdout.write(`${JSON.stringify({ ok: false, errors: errorJson(error.errors) })}\n`);
        printErrors(error.errors);
        process.exitCode = EXIT_INVALID;
      } finally {
        await warehouse?.close();
        await connection.close();
      }
    });

  capacity
    .command('apply')
    .description('Push the sites whose timeline changed; every push is recorded in the warehouse ledger')
    .option('--dir <dir>', 'capacity folder (default: capacity.dir of the config, config/capacity)')
    .option('--db <path>', 'warehouse holding the push ledger (default: warehouse.path of the config)')
    .action(async (options: CommonOptions) => {
      const config = configFor(options);
      // The offline rules first: a broken file stops here, before any connection or lock.
      const { errors } = checkCapacityDir(config.capacity.dir);
      if (errors.length > 0) {
        printErrors(errors);
        process.exitCode = EXIT_INVALID;
        return;
      }
      const stop = new AbortController();
      const onSignal = (signal: NodeJS.Signals) => stop.abort(new Error(signal));
      process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
      try {
        const result = await runJob(pushCapacity, {
          config, trigger: 'manual', signal: stop.signal, log: createLogger({ level: config.log.level }),
        });
        for (const line of result.summary) process.stdout.write(`${line}\n`);
        if (result.status !== 'ok' && result.error) process.stderr.write(`${result.error}\n`);
        process.stdout.write(`run ${result.runId}: ${result.status}\n`);
        process.exitCode = result.exitCode;
      } finally {
        process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      }
    });
}
