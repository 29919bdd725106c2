// config/efsync.yaml: validated with zod, every error naming the key and line; the
// environment overrides the file; the API key never comes from the file itself.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { type BudgetSource, parseSize, resolveBudget } from './resources/budget.js';
import { DEFAULT_SIZES, type Sizes, sizesFor, threadsWithin } from './resources/sizes.js';
import { DAY, isTimeZone, parseDuration } from './time.js';
import { InputFileError, parseYaml, yamlIssueError } from './yaml.js';

export const DEFAULT_CONFIG_PATH = 'config/efsync.yaml';

/** A duration written as text (`15m`, `6h`, `7d`, `PT6H`), parsed to milliseconds. */
const Duration = z.string().transform((text, ctx) => {
  try {
    return parseDuration(text);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const Zone = z.string().refine(isTimeZone, 'not a known time zone (e.g. UTC, Europe/Stockholm)');

export const RESOURCES = ['sites', 'models', 'forecasts', 'outputs', 'actuals'] as const;
export type Resource = (typeof RESOURCES)[number];

const ServiceConfig = z
  .strictObject({
    base_url: z
      .url()
      .nullable()
      .prefault(null)
      .describe('Base URL of the service, e.g. https://api.rebase.energy; null runs the embedded emulator'),
    api_key_file: z
      .string()
      .nullable()
      .prefault(null)
      .describe('File holding the API key; EFSYNC_API_KEY or EFSYNC_API_KEY_FILE take precedence'),
    connections: z.int().min(1).max(256).prefault(16).describe('Keep-alive connections to the service'),
    timeouts: z
      .strictObject({
        connect: Duration.prefault('10s'),
        headers: Duration.prefault('30s'),
        body: Duration.prefault('60s'),
      })
      .prefault({}),
    retries: z
      .strictObject({
        attempts: z.int().min(0).max(20).prefault(5).describe('Retries after the first try'),
        base_delay: Duration.prefault('250ms'),
        max_delay: Duration.prefault('20s'),
        retry_after_max: Duration.prefault('60s').describe('Longest Retry-After that is honoured'),
      })
      .prefault({}),
    rate_limit: z
      .strictObject({
        requests: z.int().min(1).describe('Requests allowed per window'),
        per: Duration.describe('The window, e.g. 1m or 1s'),
      })
      .nullable()
      .prefault(null)
      .describe(
        'At most this many requests per window, shared by every request of the process, spaced evenly (null: no limit; v2 documents none, docs/client.md)',
      ),
    throttle: z
      .strictObject({
        attempts: z.int().min(0).max(50).prefault(10).describe('How often one request repeats after a 429'),
        base_delay: Duration.prefault('1s'),
        max_delay: Duration.prefault('5m'),
      })
      .prefault({})
      .describe(
        'A 429 without Retry-After pauses every request: exponential backoff with full jitter from base_delay up to max_delay',
      ),
    unreachable_after: Duration.nullable()
      .prefault('2m')
      .describe(
        'When every request fails for want of the service (no connection, no answer in time, 502-504) this long, none answered, the run stops: exit 4 (null: never)',
      ),
    output_fill_param: z
      .string()
      .min(1)
      .prefault('fill')
      .describe('Wire name of the Model Output parameter taking disabled|auto'),
    interval_label: z
      .strictObject({
        forecasts: z.enum(['beginning', 'ending']).prefault('beginning'),
        actuals: z.enum(['beginning', 'ending']).prefault('beginning'),
      })
      .prefault({})
      .describe(
        'Which end of its interval a valid time labels, for forecasts and for actuals; the guides show interval-beginning (docs/interface-assumptions.md)',
      ),
  })
  .prefault({});

/** A memory budget written as a size (`256MB`, `1GB`), parsed to bytes. */
const Size = z.string().transform((text, ctx) => {
  try {
    return parseSize(text);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const ResourcesConfig = z
  .strictObject({
    memory: Size.nullable()
      .prefault(null)
      .describe(
        "The process's memory budget, e.g. 256MB or 1GB, which DuckDB's limits, the V8 heap and the row bounds are derived from; --memory and EFSYNC_MEMORY override; null: the cgroup's limit, else 300MB (docs/warehouse.md, Memory budget)",
      ),
  })
  .prefault({})
  .transform(({ memory }) => ({
    memory,
    source: (memory === null ? null : 'resources.memory') as BudgetSource | null,
  }));

/** A DuckDB memory_limit for one step: digits and a unit (it goes into a SET statement), or null for DuckDB's default. */
const MemoryLimit = (byDefault: string) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i, 'a size such as 128MB')
    .nullable()
    .prefault(byDefault);

const WarehouseConfig = z
  .strictObject({
    path: z
      .string()
      .min(1)
      .prefault('data/warehouse.duckdb')
      .describe('The published warehouse that analysts open; EFSYNC_DB or --db override'),
    lock_wait: Duration.prefault('30s').describe('How long a second writer waits for the first'),
    hot_window: Duration.prefault('8d').describe(
      'Days of the series kept in the DuckDB file; older UTC days move to Parquet files at publish, which scores and retention read too (docs/warehouse.md, "Hot and cold")',
    ),
    cold_grace: Duration.prefault('7d').describe(
      'How long a cold file a newer one replaced is kept, for readers still holding an older snapshot',
    ),
    memory_limit: MemoryLimit(DEFAULT_SIZES.duckdb.warehouse).describe(
      "DuckDB's memory for the writer's work outside a step that sets its own (the publish, the writer file's compaction at open); DuckDB spills past it; unset: its share of resources.memory, which a value set here overrides; null: up to 80% of RAM",
    ),
  })
  .prefault({});

const Threads = (byDefault: number | null) => z.int().min(1).max(256).nullable().prefault(byDefault);

const SyncConfig = z
  .strictObject({
    concurrency: z
      .int()
      .min(1)
      .max(64)
      .prefault(16)
      .describe(
        'Sites fetching at once; one that has fetched waits for the loader without a slot, bounded by rows_in_memory (docs/sync.md)',
      ),
    rows_in_memory: z
      .int()
      .min(1)
      .prefault(DEFAULT_SIZES.rows.syncInMemory)
      .describe(
        'Series rows the sites in flight hold fetched and not yet committed, each vintage their loads record counted as three; a site starts only while they fit (a site above it goes alone); unset: its share of resources.memory (120,000 at 300MB)',
      ),
    lookback: Duration.prefault('6h').describe('Re-read this much before the last synced point'),
    initial_history: Duration.prefault('7d').describe('How far back a first sync of a site reaches'),
    horizon: Duration.prefault('2d').describe('How far ahead forecasts are read'),
    vintage_retries: z
      .int()
      .min(0)
      .prefault(3)
      .describe(
        'Later syncs that read a vintage again after its read failed (or, for a model output, its vintage was not out yet), before it is given up and shown by efsync status',
      ),
    resources: z.array(z.enum(RESOURCES)).prefault([...RESOURCES]),
    actual_types: z
      .array(z.string().regex(/^[\w.-]+$/, 'a series type such as power or availability'))
      .min(1)
      .refine((types) => new Set(types).size === types.length, 'each type once')
      .prefault(['power'])
      .describe(
        'The actuals series synced (the type parameter of Get Site Actuals): power into actuals, any other into actuals_by_type',
      ),
    memory_limit: MemoryLimit(DEFAULT_SIZES.duckdb.sync).describe(
      "DuckDB's memory limit during a sync and retention (its buffer pool otherwise caches the growing file, up to 80% of RAM); unset: its share of resources.memory (64MB at 300MB), which a value set here overrides; null: DuckDB's default",
    ),
    threads: Threads(1).describe(
      "DuckDB's threads during a sync (each has buffers of its own; the sync's own process needs a core too); null: one per core",
    ),
  })
  .prefault({});

const SitesConfig = z
  .strictObject({
    dir: z
      .string()
      .prefault('config/sites')
      .describe('One YAML file per site (efsync sites check|import|plan|apply, docs/sites.md)'),
  })
  .prefault({});

const CapacityConfig = z
  .strictObject({
    dir: z.string().prefault('config/capacity'),
    max_over_nameplate_pct: z
      .number()
      .min(0)
      .prefault(10)
      .describe('A capacity point may exceed the site nameplate by at most this share'),
  })
  .prefault({});

/**
 * One event the event metrics score (docs/accuracy.md, "Events"): a threshold crossed, or a ramp
 * (change over `span`) at least `threshold`, in kW or in % of the capacity at the valid time.
 */
export const EventDefinition = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/, 'lower-case letters, digits and _, starting with a letter (it names result fields)'),
    kind: z.enum(['threshold', 'ramp']),
    threshold: z.number().describe('kW, or % of capacity with unit: pct'),
    unit: z.enum(['kw', 'pct']).prefault('kw'),
    direction: z
      .enum(['up', 'down', 'both'])
      .prefault('up')
      .describe('threshold: up = at or above, down = at or below; ramp: up, down or both'),
    span: Duration.prefault('1h').describe('ramp: the change from span before the valid time'),
  })
  .refine((e) => e.kind === 'ramp' || e.direction !== 'both', {
    message: 'direction both applies to ramps only (a threshold event is up, at or above, or down, at or below)',
    path: ['direction'],
  })
  .refine((e) => e.kind === 'threshold' || e.threshold >= 0, {
    message: 'a ramp threshold is a size of change, 0 or more (direction says up or down)',
    path: ['threshold'],
  });
export type EventDefinition = z.output<typeof EventDefinition>;

const AccuracyConfig = z
  .strictObject({
    tz: Zone.prefault('UTC').describe('Time zone of hour, weekday, month and date groups'),
    memory_limit: MemoryLimit(DEFAULT_SIZES.duckdb.accuracy).describe(
      "DuckDB's memory limit while scoring (past it DuckDB spills to disk); unset: its share of resources.memory (96MB at 300MB), which a value set here overrides; null: DuckDB's default, up to 80% of RAM",
    ),
    threads: Threads(DEFAULT_SIZES.accuracyThreads).describe(
      "DuckDB's threads while scoring, at most one per core; unset: as many as its memory limit holds, one per 32MiB (each has buffers of its own); null: one per core",
    ),
    batch_points: z
      .number()
      .int()
      .min(1)
      .prefault(DEFAULT_SIZES.rows.accuracyBatchPoints)
      .describe(
        'Forecast points aligned at a time, whole sites per batch (and four times as many pairs per statement of statistics): what bounds the memory of scoring; larger batches read the tables fewer times; unset: its share of resources.memory (100,000 at 300MB)',
      ),
    report: z
      .string()
      .min(1)
      .prefault('report.html')
      .describe(
        "The HTML report; a relative path is taken from the warehouse's folder (default: report.html beside the warehouse)",
      ),
    lead_buckets: z
      .array(Duration)
      .prefault(['6h', '12h', '24h', '36h', '48h', '72h'])
      .describe('Upper bounds of the lead-time buckets'),
    deadband_pct: z.number().min(0).prefault(0),
    max_missing_pct: z
      .number()
      .min(0)
      .max(100)
      .prefault(10)
      .describe('An interval with more missing sub-points than this is dropped'),
    mape_min_actual_pct: z.number().min(0).prefault(1).describe('MAPE skips actuals below this share of capacity'),
    quality: z
      .strictObject({
        stale_span: Duration.prefault('2h').describe('A value held this long or longer is flagged stale from then on'),
        negative_pct: z
          .number()
          .min(0)
          .prefault(5)
          .describe('Solar and wind below minus this share of capacity are flagged negative'),
        over_capacity_pct: z
          .number()
          .min(0)
          .prefault(5)
          .describe('Values above capacity by more than this share are flagged over_capacity'),
        night_pct: z
          .number()
          .min(0)
          .prefault(5)
          .describe('Solar output above this share of capacity with the sun below the horizon is flagged night'),
        clipping_points: z.int().min(2).prefault(4).describe('Consecutive values that make a clipping plateau'),
        clipping_pct: z
          .number()
          .min(0)
          .prefault(0.5)
          .describe('How close to each other (share of capacity) the values of a plateau are'),
      })
      .prefault({})
      .describe('Data-quality flags on actuals; flagged actuals are left out of scores unless --include-flagged'),
    events: z
      .array(EventDefinition)
      .prefault([])
      .refine((events) => new Set(events.map((e) => e.name)).size === events.length, 'event names must differ')
      .describe('Threshold and ramp events scored by POD, FAR, POFD, CSI, event bias and accuracy; --event overrides'),
  })
  .prefault({});

/** A vintage kept past `retention.all_vintages`: the day-ahead one, the last one, or the last issued at least this lead time before its valid time. */
const KeptVintage = z.string().transform((text, ctx): 'day_ahead' | 'latest' | number => {
  if (text === 'day_ahead' || text === 'latest') return text;
  try {
    return parseDuration(text);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'day_ahead, latest or a lead time such as 6h' });
    return z.NEVER;
  }
});

const RetentionConfig = z
  .strictObject({
    enabled: z
      .boolean()
      .prefault(true)
      .describe('Run the retention step of the nightly chain (docs/warehouse.md, Retention); false keeps everything'),
    all_vintages: Duration.prefault('30d').describe(
      'Every forecast and model-output vintage is kept this long after its valid time (whole UTC days), then only those of keep',
    ),
    keep: z
      .array(KeptVintage)
      .min(1)
      .prefault(['day_ahead', 'latest'])
      .describe(
        'Vintages kept per valid time after all_vintages: day_ahead (the view forecast_day_ahead), latest, or a lead time such as 6h (the last vintage issued at least that long before)',
      ),
    actual_revisions: Duration.prefault('30d').describe(
      'Revisions of actuals (actual_revisions, actual_revisions_by_type) are kept this long after their valid time',
    ),
  })
  .prefault({});

const CatchUp = z.enum(['skip', 'once', 'each']);

const ScheduleConfig = z
  .strictObject({
    timezone: Zone.prefault('UTC'),
    catch_up: CatchUp.prefault('once').describe('What to do with runs missed while the daemon was down'),
    catch_up_limit: z.int().min(1).prefault(3).describe('With catch_up: each, the most missed runs to make up'),
    retries: z.int().min(0).prefault(2),
    retry_backoff: Duration.prefault('5m'),
    timeout: Duration.prefault('2h'),
    jobs: z
      .record(z.string(), z.string().nullable())
      .prefault({})
      .describe('Job name to cron expression; null disables a job that has a default schedule'),
  })
  .prefault({});

/** A pair of ages: past `warn` a check warns, past `crit` it is critical. */
const Thresholds = (warn: string, crit: string) =>
  z
    .strictObject({ warn: Duration.prefault(warn), crit: Duration.prefault(crit) })
    .refine((t) => t.warn <= t.crit, { message: 'warn must not be longer than crit' })
    .prefault({});

const MonitoringConfig = z
  .strictObject({
    actual_age: Thresholds('6h', '24h').describe("Age of a site's newest stored actual (efsync status --check)"),
    forecast_age: Thresholds('12h', '36h').describe("Age of the issue time of a site's newest stored forecast vintage"),
    last_ok_age: Thresholds('26h', '50h').describe("Time since a scheduled job's last run that ended ok"),
    ready_failing_for: Duration.prefault('24h').describe(
      "The daemon's /readyz fails once a job's last run failed and it has not ended ok for this long",
    ),
  })
  .prefault({});

const Webhook = z.strictObject({
  name: z.string().min(1).describe('Names the webhook in the logs and alert_deliveries (its URL never appears there)'),
  url: z.url().describe('Where alerts are POSTed; a Slack URL holds its secret: keep the config file private'),
  format: z.enum(['json', 'slack']).prefault('json').describe('json: efsync\'s alert object; slack: {"text": ...}'),
  secret_file: z
    .string()
    .nullable()
    .prefault(null)
    .describe('File holding a shared secret: each body is signed, header x-efsync-signature: sha256=<HMAC>'),
});

const AlertsConfig = z
  .strictObject({
    webhooks: z
      .array(Webhook)
      .prefault([])
      .refine((hooks) => new Set(hooks.map((h) => h.name)).size === hooks.length, 'webhook names must differ')
      .describe('Where alerts go; none: alerts are not evaluated'),
    missed_grace: Duration.prefault('1h').describe(
      'A scheduled slot with no run this long after it fires missed/<job>',
    ),
    retries: z.int().min(0).max(10).prefault(3).describe('Retries of a delivery after the first attempt'),
    retry_backoff: Duration.prefault('1s').describe('Before the first retry, doubling after each'),
    timeout: Duration.prefault('10s').describe('Per attempt'),
  })
  .prefault({});

const EmulatorConfig = z
  .strictObject({
    sites: z.int().min(1).prefault(4),
    seed: z.int().prefault(1),
    profile: z
      .enum(['rich', 'docs'])
      .prefault('rich')
      .describe("rich, or docs: exactly the shapes of the service's public pages"),
  })
  .prefault({});

export const Config = z
  .strictObject({
    service: ServiceConfig,
    resources: ResourcesConfig,
    warehouse: WarehouseConfig,
    sink: z
      .enum(['warehouse', 'parquet'])
      .prefault('warehouse')
      .describe(
        'Where sync runs write: the warehouse file, or Parquet files in the lake (docs/lake.md); --sink overrides',
      ),
    lake: z
      .string()
      .min(1)
      .nullable()
      .prefault(null)
      .describe('The lake folder for sink parquet (a volume every shard mounts); --lake overrides'),
    sync: SyncConfig,
    sites: SitesConfig,
    capacity: CapacityConfig,
    accuracy: AccuracyConfig,
    retention: RetentionConfig,
    schedule: ScheduleConfig,
    monitoring: MonitoringConfig,
    alerts: AlertsConfig,
    emulator: EmulatorConfig,
    log: z
      .strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).prefault('info') })
      .prefault({}),
  })
  .refine((config) => config.warehouse.hot_window >= shortestHotWindow(config), {
    path: ['warehouse', 'hot_window'],
    message:
      'at least twice accuracy.quality.stale_span (a day if shorter) plus sync.lookback: the flags a sync computes read that far back, in the hot days only',
  });

/**
 * The shortest hot window: a sync's data-quality flags read the actuals from twice their margin
 * (the stale span, at least a day: src/warehouse/flags.ts) before what it re-reads (sync.lookback),
 * from the hot tables alone. Scores and retention read the cold days too, so they set no floor.
 */
function shortestHotWindow(config: { accuracy: { quality: { stale_span: number } }; sync: { lookback: number } }) {
  return 2 * Math.max(config.accuracy.quality.stale_span, DAY) + config.sync.lookback;
}

export type Config = z.output<typeof Config>;

/**
 * The data-quality flags' settings: the thresholds of accuracy.quality and the label of the
 * actuals' intervals, in the shape src/warehouse/flags.ts takes them (its QualitySettings). The
 * one reading of those keys, for the sync's loads and accuracy's reflagging alike.
 */
export function qualitySettingsFromConfig(
  quality: Config['accuracy']['quality'],
  label: Config['service']['interval_label']['actuals'],
) {
  return {
    staleSpanMs: quality.stale_span,
    negativePct: quality.negative_pct,
    overCapacityPct: quality.over_capacity_pct,
    nightPct: quality.night_pct,
    clippingPoints: quality.clipping_points,
    clippingPct: quality.clipping_pct,
    label,
  };
}

export interface LoadedConfig extends Config {
  /** Where it was read from, or null when no file exists and the defaults apply. */
  file: string | null;
}

/**
 * Reads the config file (`EFSYNC_CONFIG` or config/efsync.yaml; a missing default file means
 * defaults), then applies EFSYNC_BASE_URL, EFSYNC_DB and EFSYNC_LOG_LEVEL from the environment,
 * and the memory budget (`memory`: the --memory flag; src/resources/budget.ts) to the sizes it sets.
 */
export function loadConfig(
  path?: string,
  env: NodeJS.ProcessEnv = process.env,
  flags: { memory?: string } = {},
): LoadedConfig {
  // An empty variable is an unset one, as for the other EFSYNC_ variables.
  const named = path ?? (env.EFSYNC_CONFIG || undefined);
  const file = named ?? DEFAULT_CONFIG_PATH;
  const explicit = named !== undefined;
  if (existsSync(file)) {
    const yaml = parseYaml(readFileSync(file, 'utf8'), file);
    const raw = yaml.value ?? {};
    const parsed = Config.safeParse(raw);
    if (!parsed.success) throw yamlIssueError(yaml, parsed.error);
    return { ...withBudget(applyEnv(parsed.data, env), raw, flags.memory, env), file };
  }
  if (explicit) throw new InputFileError(file, 1, 1, 'config file not found');
  return { ...withBudget(applyEnv(Config.parse({}), env), {}, flags.memory, env), file: null };
}

/**
 * The config with its budget resolved (flag, variable, file, cgroup, default) and every size the
 * file does not set taken from it: a size set in the file wins over its share of the budget.
 */
function withBudget(config: Config, raw: unknown, flag: string | undefined, env: NodeJS.ProcessEnv): Config {
  const budget = resolveBudget({ flag, configured: config.resources.memory }, env);
  const sizes = sizesFor(budget);
  const given = (section: string, key: string) => valueAt(raw, section, key) !== undefined;
  const pick = <T>(section: string, key: string, set: T, share: T) => (given(section, key) ? set : share);
  const { warehouse, sync, accuracy } = config;
  const accuracyLimit = pick('accuracy', 'memory_limit', accuracy.memory_limit, sizes.duckdb.accuracy);
  return {
    ...config,
    resources: { memory: budget.bytes, source: budget.source },
    warehouse: {
      ...warehouse,
      memory_limit: pick('warehouse', 'memory_limit', warehouse.memory_limit, sizes.duckdb.warehouse),
    },
    sync: {
      ...sync,
      memory_limit: pick('sync', 'memory_limit', sync.memory_limit, sizes.duckdb.sync),
      rows_in_memory: pick('sync', 'rows_in_memory', sync.rows_in_memory, sizes.rows.syncInMemory),
    },
    accuracy: {
      ...accuracy,
      memory_limit: accuracyLimit,
      threads: pick('accuracy', 'threads', accuracy.threads, threadsWithin(accuracyLimit)),
      batch_points: pick('accuracy', 'batch_points', accuracy.batch_points, sizes.rows.accuracyBatchPoints),
    },
  };
}

function valueAt(raw: unknown, section: string, key: string): unknown {
  const part = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[section] : undefined;
  return typeof part === 'object' && part !== null ? (part as Record<string, unknown>)[key] : undefined;
}

/**
 * The sizes a config runs with: its budget's (the default budget when it has none, as a config
 * built in a test), with DuckDB's limits and the two row bounds the config carries.
 */
export function sizesOf(config: Config): Sizes {
  const { memory, source } = config.resources;
  const sizes = memory === null ? DEFAULT_SIZES : sizesFor({ bytes: memory, source: source ?? 'resources.memory' });
  return {
    ...sizes,
    duckdb: {
      warehouse: config.warehouse.memory_limit ?? 'none',
      sync: config.sync.memory_limit ?? 'none',
      accuracy: config.accuracy.memory_limit ?? 'none',
    },
    accuracyThreads: config.accuracy.threads,
    rows: {
      ...sizes.rows,
      syncInMemory: config.sync.rows_in_memory,
      accuracyBatchPoints: config.accuracy.batch_points,
    },
  };
}

function applyEnv(config: Config, env: NodeJS.ProcessEnv): Config {
  const fromEnv = (name: string, key: string, schema: z.ZodType<unknown>) => {
    const value = env[name];
    if (value === undefined || value === '') return undefined;
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new ConfigError(`${name} (overrides ${key}): ${parsed.error.issues[0].message}`);
    return parsed.data;
  };
  const baseUrl = fromEnv('EFSYNC_BASE_URL', 'service.base_url', z.url()) as string | undefined;
  const db = fromEnv('EFSYNC_DB', 'warehouse.path', z.string()) as string | undefined;
  const level = fromEnv('EFSYNC_LOG_LEVEL', 'log.level', Config.shape.log.unwrap().shape.level) as
    | Config['log']['level']
    | undefined;
  return {
    ...config,
    service: { ...config.service, base_url: baseUrl ?? config.service.base_url },
    warehouse: { ...config.warehouse, path: db ?? config.warehouse.path },
    log: { level: level ?? config.log.level },
  };
}

/**
 * The API key: EFSYNC_API_KEY, else the file named by EFSYNC_API_KEY_FILE or
 * `service.api_key_file`. Never part of the config file itself, never logged.
 */
export function resolveApiKey(config: Config, env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.EFSYNC_API_KEY) return env.EFSYNC_API_KEY.trim();
  const file = env.EFSYNC_API_KEY_FILE || config.service.api_key_file;
  if (!file) return null;
  if (!existsSync(file)) throw new ConfigError(`API key file not found: ${file}`);
  const key = readFileSync(file, 'utf8').trim();
  if (!key) throw new ConfigError(`API key file is empty: ${file}`);
  return key;
}

/** JSON Schema of the config file, for editors (yaml-language-server) and the config repo's CI. */
export function configJsonSchema(): unknown {
  return z.toJSONSchema(Config, { io: 'input', unrepresentable: 'any' });
}

/** Where the HTML report goes: accuracy.report, relative to the warehouse's folder, so it follows --db. */
export function reportPath(config: Config): string {
  const report = config.accuracy.report;
  return isAbsolute(report) ? report : join(dirname(config.warehouse.path), report);
}
