// `efsync sites check | import | plan | apply`: the operator's loop over the sites folder
// (docs/sites.md). Exit codes: 0 all well; 1 something failed alone (the rest landed) or could not
// be planned; 2 invalid files, a stale or edited plan, or usage; apply is a run of the apply-sites
// job (3 warehouse busy, 4 failed as a whole, 5 interrupted). `plan --detailed-exitcode`: 0 no
// change, 2 changes, 1 an error.
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { loadConfig, type LoadedConfig } from '../config.js';
import type { Outcome } from '../outcome.js';
import { loadJob } from '../runner/registry.js';
import { readSiteDir, SiteFilesError } from '../sites/files.js';
import type { InputFileError } from '../yaml.js';
import { command, type OwnExitCodes } from './boundary.js';
import { fileErrorsJson, printFileErrors } from './file-errors.js';
import { runClock } from './clock.js';
import { CONFIG_OPTION, MEMORY_OPTION, runCommandJob } from './runner.js';

interface SitesFlags {
  dir?: string;
  db?: string;
  memory?: string;
  config?: string;
  json?: boolean;
  site?: string[];
  out?: string;
  detailedExitcode?: boolean;
  allowDelete?: boolean;
}

/** The config, with `--dir` and `--db` taking precedence over the file and the environment. */
function configFor(flags: SitesFlags): LoadedConfig {
  const config = loadConfig(flags.config, process.env, { memory: flags.memory });
  return {
    ...config,
    sites: { ...config.sites, dir: flags.dir ?? config.sites.dir },
    warehouse: { ...config.warehouse, path: flags.db ?? config.warehouse.path },
  };
}

function printErrors(errors: readonly InputFileError[]): void {
  printFileErrors(errors, 'site file', 'nothing was sent to the service');
}

/**
 * A command body; invalid site files are listed one per line (and in --json), then exit 2. The
 * body gets the command's argument, when it has one (apply's plan), before the flags.
 */
function guarded(body: (config: LoadedConfig, flags: SitesFlags, plan?: string) => Promise<Outcome | OwnExitCodes>) {
  return command<[string | undefined], SitesFlags>(
    async (...args) => {
      const flags = args[args.length - 1] as SitesFlags;
      const plan = args.length > 1 ? (args[0] as string | undefined) : undefined;
      const config = configFor(flags);
      try {
        return await body(config, flags, plan);
      } catch (error) {
        if (!(error instanceof SiteFilesError)) throw error;
        if (flags.json)
          process.stdout.write(`${JSON.stringify({ ok: false, errors: fileErrorsJson(error.errors) })}\n`);
        printErrors(error.errors);
        return flags.detailedExitcode ? { exitCode: 1 } : 'config';
      }
    },
    (flags) => (flags.detailedExitcode ? 1 : undefined),
  );
}

export function registerSitesCommands(program: Command): void {
  const sites = program
    .command('sites')
    .description('Sites and their models serving from config files: check, import, plan, apply (docs/sites.md)');
  const common = (cmd: Command) =>
    cmd
      .option('--dir <dir>', 'sites folder (default: sites.dir of the config, config/sites)')
      .option('--db <path>', 'warehouse holding the sites ledger (default: warehouse.path of the config)')
      .option(...MEMORY_OPTION)
      .option(...CONFIG_OPTION);

  common(sites.command('check'))
    .description("Validate the site files without the network (for the config repository's CI)")
    .option('--json', 'print the result as JSON')
    .action(guarded(async (config, flags) => checkCommand(config, flags)));

  common(sites.command('import'))
    .description('Write a file for each site of the service that no file names yet (adoption); never overwrites')
    .option('--site <name...>', 'only these sites (name or id)')
    .action(guarded(importCommand));

  common(sites.command('plan'))
    .description('Show what apply would change, per field, against the service')
    .option('--out <file>', 'save the plan for `efsync sites apply FILE`, which applies exactly it')
    .option('--json', 'print the plan as JSON')
    .option('--detailed-exitcode', 'exit 0 when nothing would change, 2 when something would, 1 on an error')
    .option('--allow-delete', 'plan to delete the managed sites whose file was removed (never a protected one)')
    .action(guarded(planCommand));

  common(sites.command('apply'))
    .description('Apply a saved plan exactly (refused when the service changed since), or plan and apply')
    .argument('[plan]', 'a plan saved by `efsync sites plan --out`')
    .option(
      '--allow-delete',
      'without a saved plan: delete the managed sites whose file was removed (never a protected one)',
    )
    .action(guarded(applyCommand));
}

function checkCommand(config: LoadedConfig, flags: SitesFlags): Outcome {
  const { files, errors } = readSiteDir(config.sites.dir);
  const unchecked = 'that each model named exists and that no other model holds a serving priority';
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        ok: errors.length === 0,
        files: files.map((f) => ({ file: f.file, site: f.spec.name, type: f.spec.type })),
        errors: fileErrorsJson(errors),
        not_checked: unchecked,
      })}\n`,
    );
  } else {
    for (const f of files) process.stdout.write(`ok  ${f.file}: ${f.spec.type} site "${f.spec.name}"\n`);
    if (files.length === 0 && errors.length === 0)
      process.stdout.write(`no site files (*.yaml, *.yml) in ${config.sites.dir}\n`);
    if (errors.length > 0) printErrors(errors);
    process.stdout.write(
      `Not checked offline (needs the service): ${unchecked}; \`efsync sites plan\` checks those too.\n`,
    );
  }
  return errors.length > 0 ? 'config' : 'ok';
}

/** The service and the published warehouse (read-only, for the managed sites), closed after `use`. */
async function withService<T>(
  config: LoadedConfig,
  use: (
    client: import('../api/client.js').ServiceClient,
    warehouse: import('../warehouse/warehouse.js').Warehouse | null,
  ) => Promise<T>,
): Promise<T> {
  // Loaded on use, so that `check` starts without the client, the emulator or DuckDB.
  const { createLogger } = await import('../log.js');
  const { connectService } = await import('../service.js');
  const { Warehouse } = await import('../warehouse/warehouse.js');
  const connection = await connectService(config, createLogger({ level: config.log.level }));
  const warehouse = existsSync(config.warehouse.path)
    ? await Warehouse.open({ path: config.warehouse.path, readOnly: true })
    : null;
  try {
    return await use(connection.client, warehouse);
  } finally {
    await warehouse?.close();
    await connection.close();
  }
}

async function importCommand(config: LoadedConfig, flags: SitesFlags): Promise<Outcome> {
  const { importSites } = await import('../sites/import.js');
  const imported = await withService(config, (client) =>
    importSites({ dir: config.sites.dir, client, sites: flags.site ?? [], now: runClock()() }),
  );
  for (const site of imported) {
    const head = site.file
      ? `wrote ${site.file}: site "${site.name}" (${site.siteId})`
      : `skipped site "${site.name}" (${site.siteId})`;
    process.stdout.write(`${[head, ...site.notes.map((note) => `    ${note}`)].join('\n')}\n`);
  }
  const written = imported.filter((site) => site.file !== null);
  process.stdout.write(
    `sites import: ${written.length} file(s) written to ${config.sites.dir}, ${imported.length - written.length} skipped; \`efsync sites plan\` now shows what differs (nothing, for what was imported)\n`,
  );
  return imported.some((site) => site.file !== null && site.notes.length > 0) ? 'partial' : 'ok';
}

async function planCommand(config: LoadedConfig, flags: SitesFlags): Promise<Outcome | OwnExitCodes> {
  const { planFromFiles } = await import('../sites/job.js');
  const { formatPlan } = await import('../sites/format.js');
  const { hasChanges } = await import('../sites/plan.js');
  // The offline rules first: a broken file stops here, before any connection.
  const { errors } = readSiteDir(config.sites.dir);
  if (errors.length > 0) throw new SiteFilesError(errors);
  const plan = await withService(config, (client, warehouse) =>
    planFromFiles(config, client, warehouse, { allowDelete: flags.allowDelete ?? false, now: runClock()() }),
  );
  if (flags.out) {
    const temporary = `${flags.out}.tmp-${process.pid}`;
    writeFileSync(temporary, `${JSON.stringify(plan, null, 2)}\n`);
    renameSync(temporary, flags.out);
  }
  process.stdout.write(flags.json ? `${JSON.stringify(plan)}\n` : `${formatPlan(plan).join('\n')}\n`);
  if (flags.out && !flags.json)
    process.stdout.write(`Saved to ${flags.out}: \`efsync sites apply ${flags.out}\` applies exactly this plan.\n`);
  if (flags.detailedExitcode) return { exitCode: plan.problems.length > 0 ? 1 : hasChanges(plan) ? 2 : 0 };
  return plan.problems.length > 0 ? 'partial' : 'ok';
}

async function applyCommand(config: LoadedConfig, flags: SitesFlags, planFile?: string): Promise<Outcome> {
  // Refused before the lock and any request: an edited plan, or (without one) a broken file.
  if (planFile) (await import('../sites/plan.js')).readPlanFile(planFile);
  else {
    const { errors } = readSiteDir(config.sites.dir);
    if (errors.length > 0) throw new SiteFilesError(errors);
  }
  const options = { ...(planFile ? { plan: planFile } : {}), allowDelete: flags.allowDelete ?? false };
  return runCommandJob(await loadJob('apply-sites'), config, {}, options, {
    print: (result) => {
      for (const line of result.summary) process.stdout.write(`${line}\n`);
      if (result.status !== 'ok' && result.error) process.stderr.write(`${result.error}\n`);
    },
  });
}
