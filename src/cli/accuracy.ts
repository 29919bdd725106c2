// `efsync accuracy`: score the warehouse (results stored, a table or JSON on stdout, an optional
// report), or with --pairs a CSV file of pairs with no service and no warehouse.
// Scoring the warehouse is a run of the accuracy job (lock, ledger, signals, publish); the report
// goes beside the warehouse unless --report names a file.
// Exit codes: 0 scored; 1 scored but some sites were left out; 2 bad options or a malformed file;
// 3 the warehouse is busy; 4 failed; 5 interrupted.
import { join } from 'node:path';
import type { Command } from 'commander';
import { LAKE_WINDOW, type LakeRun, reduceLake, scoreShard } from '../accuracy/lake.js';
import { parseEventOption } from '../accuracy/compute/events.js';
import { resultsTable, toJsonRows } from '../accuracy/output/format.js';
import { INTERVAL_LABELS, parseGroups } from '../accuracy/compute/groups.js';
import { ledgerLine } from '../accuracy/input/incremental.js';
import { scoreInRun } from '../accuracy/job.js';
import type { AccuracyRow } from '../accuracy/compute/metrics.js';
import { runPairsAccuracy, settingsFromConfig, type AccuracySettings, type WarehouseRun } from '../accuracy/score.js';
import { type LoadedConfig, reportPath } from '../config.js';
import { defineJob } from '../job.js';
import { ConfigError } from '../errors.js';
import { isLake } from '../lake/layout.js';
import { formatShard, parseShard, shardFromEnv } from '../lake/shard.js';
import { newRunId } from '../log.js';
import type { Outcome } from '../outcome.js';
import { loadJob } from '../runner/registry.js';
import { isTimeZone, parseDuration, parseInstant, startOfUtcDay } from '../time.js';
import type { IntervalLabel } from '../warehouse/rows.js';
import { accuracyStepSettings } from '../warehouse/settings.js';
import { command, UsageError } from './boundary.js';
import { runClock } from './clock.js';
import { checkWindow, CONFIG_OPTION, configWithDb, DB_OPTION, MEMORY_OPTION, runCommandJob } from './runner.js';

interface Flags {
  from?: string;
  to?: string;
  site?: string[];
  model?: string[];
  by?: string;
  tz?: string;
  json?: boolean;
  report?: string | boolean;
  db?: string;
  config?: string;
  pairs?: string;
  intervalLabel?: string;
  deadband?: string;
  maxMissing?: string;
  forecastInterval?: string;
  actualInterval?: string;
  distribution?: boolean;
  includeFlagged?: boolean;
  event?: string[];
  full?: boolean;
  lake?: string;
  shard?: string;
  maxAge?: string;
}

function option<T>(name: string, text: string | undefined, parse: (text: string) => T): T | undefined {
  if (text === undefined) return undefined;
  try {
    return parse(text);
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`);
  }
}

function percent(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || value > 100) throw new Error(`not a percentage from 0 to 100: "${text}"`);
  return value;
}

function label(text: string): IntervalLabel {
  if (!(INTERVAL_LABELS as readonly string[]).includes(text)) throw new Error(`use ${INTERVAL_LABELS.join(', ')}`);
  return text as IntervalLabel;
}

function zone(text: string): string {
  if (!isTimeZone(text)) throw new Error(`not a known time zone: "${text}" (e.g. UTC, Europe/Stockholm)`);
  return text;
}

/** `--event a --event b` -> [a, b] (an event's own fields are comma-separated). */
const repeat = (value: string, previous: string[] = []) => [...previous, value];

/** `--site a --site b,c` -> [a, b, c]. */
const collect = (value: string, previous: string[] = []) =>
  previous.concat(
    value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );

function settingsFrom(flags: Flags, defaultReport: string, base: AccuracySettings, now: number): AccuracySettings {
  const reportPath =
    flags.report === undefined || flags.report === false ? null : flags.report === true ? defaultReport : flags.report;
  const labelled = option('--interval-label', flags.intervalLabel, label);
  const from = option('--from', flags.from, parseInstant);
  const to = option('--to', flags.to, parseInstant);
  checkWindow(from, to, flags.from ?? '', flags.to ?? '');
  return {
    ...base,
    groups: option('--by', flags.by, parseGroups) ?? (flags.pairs ? ['total', 'hour'] : base.groups),
    tz: option('--tz', flags.tz, zone) ?? base.tz,
    from,
    // Valid times still ahead have no actual yet: the warehouse is scored up to now unless told.
    to: to ?? (flags.pairs ? undefined : now),
    sites: flags.site,
    models: flags.model,
    deadbandPct: option('--deadband', flags.deadband, percent) ?? base.deadbandPct,
    maxMissingPct: option('--max-missing', flags.maxMissing, percent) ?? base.maxMissingPct,
    forecastLabel: labelled ?? base.forecastLabel,
    actualLabel: labelled ?? base.actualLabel,
    forecastIntervalMs: option('--forecast-interval', flags.forecastInterval, parseDuration),
    actualIntervalMs: option('--actual-interval', flags.actualInterval, parseDuration),
    distribution: flags.distribution,
    includeFlagged: flags.includeFlagged,
    // events named on the command line replace the config's
    events: flags.event ? flags.event.map((text) => option('--event', text, parseEventOption)!) : base.events,
    full: flags.full,
    reportPath,
  };
}

/** The groups asked for (a report scores lead and hour too, for its plots). */
function print(rows: AccuracyRow[], settings: Pick<AccuracySettings, 'groups'>, json: boolean | undefined): void {
  const asked = rows.filter((r) => settings.groups.includes(r.group));
  process.stdout.write(json ? `${JSON.stringify(toJsonRows(asked))}\n` : `${resultsTable(asked)}\n`);
}

async function accuracyCommand(flags: Flags): Promise<Outcome> {
  const config = configWithDb(flags);
  if ((flags.lake || config.sink === 'parquet') && config.lake && !flags.pairs)
    return lakeCommand(flags, config, config.lake);
  if (flags.shard && !flags.pairs) throw new UsageError('--shard scores a shard of a lake: give --lake too');
  const now = runClock()();
  const settings = settingsFrom(
    flags,
    reportPath(config),
    settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
    now,
  );
  if (flags.pairs) {
    if (flags.site || flags.model || flags.from || flags.to || flags.db || flags.full || flags.lake || flags.shard) {
      throw new UsageError(
        '--pairs scores the file as it is: --site, --model, --from, --to, --db, --full, --lake and --shard apply to the warehouse or the lake only',
      );
    }
    const result = await runPairsAccuracy(flags.pairs, settings, now);
    print(result.rows, settings, flags.json);
    if (settings.reportPath) process.stderr.write(`report: ${settings.reportPath}\n`);
    return 'ok';
  }
  // Scoring writes the warehouse (accuracy_runs, accuracy_results): a run of the accuracy job
  // through the runner, with this command's settings.
  const registered = await loadJob('accuracy');
  let scored: WarehouseRun | undefined;
  const job = defineJob({
    ...registered,
    run: async (ctx) => {
      const { outcome, run } = await scoreInRun(ctx, settings);
      scored = run;
      return outcome;
    },
  });
  return runCommandJob(
    job,
    config,
    {},
    {},
    {
      print: (result) => {
        if (scored) print(scored.result.rows, settings, flags.json);
        for (const s of scored?.result.skipped ?? []) process.stderr.write(`site ${s.siteId} left out: ${s.reason}\n`);
        if (scored?.result.ledger) process.stderr.write(`${ledgerLine(scored.result.ledger)}\n`);
        if (scored?.reportPath) process.stderr.write(`report: ${scored.reportPath}\n`);
        if (result.status === 'busy') process.stderr.write(`not run: ${result.error}\n`);
        else if (!scored && result.error) process.stderr.write(`error: ${result.error}\n`);
      },
      // --json keeps stdout one JSON array.
      runLineTo: flags.json ? process.stderr : process.stdout,
    },
  );
}

/** Flags a reduce does not take: the shards' settings are what it merges. */
const SHARD_SETTINGS: (keyof Flags)[] = [
  'from',
  'to',
  'model',
  'by',
  'tz',
  'intervalLabel',
  'deadband',
  'maxMissing',
  'forecastInterval',
  'actualInterval',
  'includeFlagged',
  'event',
];

/**
 * `--lake`: with a shard (--shard, EFSYNC_SHARD or JOB_COMPLETION_INDEX with EFSYNC_SHARDS) the
 * shard's sites scored and contributed to the lake; without one, the reduce of every shard's
 * contribution into the lake's accuracy_results and the report (src/accuracy/lake.ts).
 */
async function lakeCommand(flags: Flags, config: LoadedConfig, lake: string): Promise<Outcome> {
  if (flags.db || flags.site || flags.full)
    throw new UsageError(
      '--lake scores every site of the lake, each shard in full: --db, --site and --full do not apply',
    );
  const shard = flags.shard !== undefined ? parseShard(flags.shard, '--shard') : shardFromEnv(process.env);
  // a mistyped path would otherwise become an empty lake
  if (!isLake(lake))
    throw new ConfigError(
      `no lake at ${lake} (no Delta table sites/_delta_log)`,
      'check --lake (or lake in the config); shards sync into it (--sink parquet) before they score it',
    );
  const now = runClock()();
  const { memory_limit, threads } = config.accuracy;
  const run: LakeRun = {
    lake,
    runId: newRunId(now),
    now,
    duckdb: accuracyStepSettings({ memory_limit, threads }),
    lockWaitMs: config.warehouse.lock_wait,
    maxAgeMs: option('--max-age', flags.maxAge, parseDuration),
  };
  if (!shard) {
    const given = SHARD_SETTINGS.filter((name) => flags[name] !== undefined);
    if (given.length > 0 || flags.distribution === false)
      throw new UsageError(
        'the reduce merges what the shards scored: give the window and metric options to the shards (--shard)',
      );
    const path =
      flags.report === undefined || flags.report === false
        ? null
        : flags.report === true
          ? join(lake, 'report.html')
          : flags.report;
    const reduced = await reduceLake(path, run);
    print(reduced.rows, reduced, flags.json);
    for (const s of reduced.skipped) process.stderr.write(`site ${s.siteId} left out: ${s.reason}\n`);
    process.stderr.write(`accuracy run ${run.runId}: ${reduced.shards} shards merged into the lake ${lake}\n`);
    if (reduced.reportPath) process.stderr.write(`report: ${reduced.reportPath}\n`);
    return reduced.skipped.length > 0 ? 'partial' : 'ok';
  }
  if (flags.report !== undefined || flags.json || flags.maxAge !== undefined)
    throw new UsageError("--report, --json and --max-age are the reduce's: a shard writes its contribution alone");
  const base = settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir);
  const settings = settingsFrom(flags, '', base, now);
  // the nightly's window unless --from says otherwise: the seed reads back from its start
  const from = settings.from ?? startOfUtcDay(settings.to! - LAKE_WINDOW);
  const scored = await scoreShard({ ...settings, from }, shard, run);
  for (const s of scored.skipped) process.stderr.write(`site ${s.siteId} left out: ${s.reason}\n`);
  process.stdout.write(
    `accuracy run ${run.runId}: shard ${formatShard(shard)} scored ${scored.sites} sites into the lake ${lake} (${scored.rows.accuracy_stats ?? 0} statistics)\n`,
  );
  return scored.skipped.length > 0 ? 'partial' : 'ok';
}

export function registerAccuracyCommands(program: Command): void {
  program
    .command('accuracy')
    .description(
      "Score the site forecast and each model's output against actuals, by lead time, hour, site and model (or a CSV of pairs with --pairs)",
    )
    .option('--from <time>', 'first valid time scored, e.g. 2026-01-01 or 2026-01-01T06:00Z (default: all)')
    .option('--to <time>', 'valid times before this (default: now)')
    .option('--site <ids>', 'only these sites, by id or name (repeat or comma-separate)', collect)
    .option('--model <names>', 'only these model outputs, by name (the site forecast is always scored)', collect)
    .option(
      '--by <groups>',
      'groups: total,lead,hour,weekday,month,season,year,date,site,model (default total,lead,hour; with --pairs total,hour)',
    )
    .option('--tz <zone>', 'time zone of hour, weekday, month and date (default: accuracy.tz of the config, UTC)')
    .option('--json', 'print a JSON array of rows instead of the table')
    .option(
      '--report [file]',
      'write the HTML report (default file: accuracy.report of the config, report.html beside the warehouse)',
    )
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .option(
      '--lake <path>',
      "score the lake: with --shard the shard's sites, contributed to the lake; without, the reduce of every shard's into the lake's accuracy_results",
    )
    .option(
      '--shard <I/N>',
      'with --lake: score the sites of shard I of N (or EFSYNC_SHARD, or JOB_COMPLETION_INDEX with EFSYNC_SHARDS)',
    )
    .option(
      '--max-age <duration>',
      'with --lake, the reduce: refuse a shard whose contribution is older than this (e.g. 12h: one that did not score tonight)',
    )
    .option(
      '--pairs <file>',
      'score this CSV (valid_time, actual, and forecast, reference, capacity, q<percent>, issue_time, site, model)',
    )
    .option(
      '--interval-label <label>',
      'beginning, ending or instant, for forecasts and actuals (default: service.interval_label, interval-beginning as the the service guides show)',
    )
    .option('--deadband <percent>', 'errors within this percentage of the actual count as zero')
    .option(
      '--max-missing <percent>',
      'drop a forecast interval missing more than this share of its actual sub-points (default 10)',
    )
    .option('--forecast-interval <duration>', 'forecast interval length, e.g. 15m or 1h (default: inferred per site)')
    .option('--actual-interval <duration>', 'actual interval length (default: inferred per site)')
    .option(
      '--include-flagged',
      'score actuals that failed a data-quality check too (by default they count as missing: docs/accuracy.md, Data quality)',
    )
    .option(
      '--event <fields>',
      'score this event instead of accuracy.events, e.g. name=high,kind=threshold,threshold=80,unit=pct or name=ramp,kind=ramp,threshold=20,span=1h,direction=both (repeat for more)',
      repeat,
    )
    .option(
      '--full',
      'align every pair of the window again, not only the new and changed ones (docs/accuracy.md, Incremental scoring)',
    )
    .option(
      '--no-distribution',
      'skip KSI, OVER and CPI, the metrics that take a second pass over the values (faster on very large windows)',
    )
    .action(command<[], Flags>(accuracyCommand));
}
