// `efsync emulator`: the local forecasting service on loopback, until SIGINT or SIGTERM.
import type { Command } from 'commander';
import { command, UsageError } from './boundary.js';
import { stopSignal } from '../runner/signals.js';
import type { Outcome } from '../outcome.js';
import { parseDuration, parseInstant } from '../time.js';
import { EMULATOR_PROFILES, type EmulatorProfile } from '../emulator/handlers.js';
import type { Quota } from '../emulator/limits.js';
import { startEmulator } from '../emulator/server.js';
import type { ModelKind } from '../emulator/store.js';

const MODEL_KINDS: readonly ModelKind[] = ['ai', 'physical', 'quantile'];
import { UNTIDY_KINDS, type UntidyKind } from '../emulator/untidy.js';

interface EmulatorFlags {
  host: string;
  port: string;
  apiKey?: string[];
  sites: string;
  seed: string;
  faultRate: string;
  malformedRate: string;
  slowMs: string;
  state?: string;
  historyDays: string;
  profile: string;
  now?: string;
  quota?: string;
  revokeAfter?: string;
  fractionalIssues?: boolean;
  latePublication?: string[];
  failingVintage?: string[];
  untidy?: string[];
}

export function registerEmulatorCommands(program: Command): void {
  program
    .command('emulator')
    .description('Run the local emulator of the forecasting service (Platform API v2) with demo sites')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', '0')
    .option('--api-key <key...>', 'an accepted API key, one account each; repeatable (default: $EFSYNC_API_KEY)')
    .option('--sites <n>', 'demo sites per key (solar fixed and tracking, wind, load)', '3')
    .option('--seed <s>', 'seed of all generated data', '1')
    .option('--fault-rate <r>', 'share of requests answered with a transient fault (0..1)', '0')
    .option('--malformed-rate <r>', 'share of data responses that break the interface (0..1)', '0')
    .option('--slow-ms <ms>', 'delay of a slow-response fault', '3000')
    .option('--state <file>', 'keep accounts, sites and models in this JSON file across restarts')
    .option('--history-days <n>', 'days of history before today', '14')
    .option('--quota <n/window>', 'answer 429 without Retry-After past n requests per window and key, e.g. 120/1m')
    .option('--revoke-after <n>', 'revoke every key after n requests: 401 from then on')
    .option('--now <instant>', "the emulator's clock held at this instant (ISO 8601), so its data does not move")
    .option(
      '--fractional-issues',
      'issue every vintage 1-6 s after its cron fire, with microseconds (06:15:03.448761Z)',
    )
    .option(
      '--late-publication <kind=minutes...>',
      'publish the vintages of a kind of model (ai, physical, quantile) that many minutes after their cron fire; repeatable',
    )
    .option(
      '--failing-vintage <id@instant...>',
      'a vintage that always answers 400: a site id and a forecast as_of, or a model id and an output issue time; repeatable',
    )
    .option(
      '--profile <name>',
      "rich (the documented shapes plus capacity columns and state details) or docs (exactly the public pages' shapes)",
      'rich',
    )
    .option('--untidy <kind...>', `untidy answers to serve: ${UNTIDY_KINDS.join(', ')}`)
    .action(command<[], EmulatorFlags>(emulatorCommand));
}

/** Serves until SIGINT or SIGTERM, then saves its state (with --state) and exits 0. */
async function emulatorCommand(flags: EmulatorFlags): Promise<Outcome> {
  const options = optionsFrom(flags);
  const stop = stopSignal('closing');
  const emulator = await startEmulator(options);
  process.stdout.write(`efsync emulator listening on ${emulator.url}\n`);
  await new Promise<void>((resolve) => {
    if (stop.aborted) resolve();
    stop.addEventListener('abort', () => resolve(), { once: true });
  });
  await emulator.close();
  const signal = stop.reason instanceof Error ? stop.reason.message : 'signal';
  process.stderr.write(
    `efsync emulator: stopped on ${signal}${options.statePath ? `, state saved to ${options.statePath}` : ''}\n`,
  );
  return 'ok';
}

function optionsFrom(flags: EmulatorFlags): Parameters<typeof startEmulator>[0] {
  const apiKeys = flags.apiKey ?? (process.env.EFSYNC_API_KEY ? [process.env.EFSYNC_API_KEY] : []);
  if (apiKeys.length === 0) throw new UsageError('--api-key is required (or set EFSYNC_API_KEY)');
  return {
    apiKeys,
    host: flags.host,
    port: integer('--port', flags.port, 0, 65535),
    sites: integer('--sites', flags.sites, 0, 100_000),
    seed: integer('--seed', flags.seed, 0, 2 ** 31 - 1),
    faultRate: share('--fault-rate', flags.faultRate),
    malformedRate: share('--malformed-rate', flags.malformedRate),
    slowMs: integer('--slow-ms', flags.slowMs, 0, 600_000),
    historyDays: integer('--history-days', flags.historyDays, 0, 366),
    profile: profileOf(flags.profile),
    ...(flags.state ? { statePath: flags.state } : {}),
    ...(flags.now !== undefined ? { now: heldClock(flags.now) } : {}),
    ...(flags.quota !== undefined ? { quota: quotaOf(flags.quota) } : {}),
    ...(flags.revokeAfter !== undefined
      ? { revokeAfter: integer('--revoke-after', flags.revokeAfter, 0, Number.MAX_SAFE_INTEGER) }
      : {}),
    issueTiming: { fractional: flags.fractionalIssues ?? false, delays: delaysOf(flags.latePublication ?? []) },
    failingVintages: failingVintagesOf(flags.failingVintage ?? []),
    ...(flags.untidy ? { untidy: flags.untidy.map(untidyOf) } : {}),
  };
}

/** `120/1m`: 120 requests per minute. */
function quotaOf(text: string): Quota {
  const [count, window, ...rest] = text.split('/');
  if (window === undefined || rest.length > 0)
    throw new UsageError(`--quota must be <requests>/<window>, e.g. 120/1m, got ${JSON.stringify(text)}`);
  let windowMs: number;
  try {
    windowMs = parseDuration(window);
  } catch (error) {
    throw new UsageError(`--quota: ${(error as Error).message}`);
  }
  if (windowMs <= 0) throw new UsageError(`--quota: the window must be longer than 0, got ${JSON.stringify(window)}`);
  return { requests: integer('--quota', count, 1, Number.MAX_SAFE_INTEGER), windowMs };
}

/** `physical=20` → the physical models publish 20 minutes late. */
function delaysOf(specs: string[]): Partial<Record<ModelKind, number>> {
  const delays: Partial<Record<ModelKind, number>> = {};
  for (const spec of specs) {
    const [kind, minutes] = spec.split('=');
    if (!MODEL_KINDS.includes(kind as ModelKind))
      throw new UsageError(
        `--late-publication: the kind is one of ${MODEL_KINDS.join(', ')}, got ${JSON.stringify(spec)}`,
      );
    delays[kind as ModelKind] = integer('--late-publication', minutes ?? '', 0, 24 * 60) * 60_000;
  }
  return delays;
}

/** Each `<id>@<instant>` checked here, so a typo is a usage error rather than a switch that never fires. */
function failingVintagesOf(specs: string[]): string[] {
  for (const spec of specs) {
    const at = spec.lastIndexOf('@');
    try {
      if (at <= 0) throw new Error('expected <site or model id>@<instant>');
      parseInstant(spec.slice(at + 1));
    } catch (error) {
      throw new UsageError(`--failing-vintage ${JSON.stringify(spec)}: ${(error as Error).message}`);
    }
  }
  return specs;
}

/** A clock that stays at `text`: no quarter hour ends and no vintage is issued while it serves. */
function heldClock(text: string): () => number {
  let at: number;
  try {
    at = parseInstant(text);
  } catch (error) {
    throw new UsageError(`--now: ${(error as Error).message}`);
  }
  return () => at;
}

function integer(flag: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}

function profileOf(text: string): EmulatorProfile {
  const profile = EMULATOR_PROFILES.find((p) => p === text);
  if (!profile)
    throw new UsageError(`--profile must be one of ${EMULATOR_PROFILES.join(', ')}, got ${JSON.stringify(text)}`);
  return profile;
}

function untidyOf(text: string): UntidyKind {
  const kind = UNTIDY_KINDS.find((k) => k === text);
  if (!kind) throw new UsageError(`--untidy must be among ${UNTIDY_KINDS.join(', ')}, got ${JSON.stringify(text)}`);
  return kind;
}

function share(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || value > 1)
    throw new UsageError(`${flag} must be a number from 0 to 1, got ${JSON.stringify(text)}`);
  return value;
}
