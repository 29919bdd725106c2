// pino to stderr, so stdout stays free for the human summary and --json output: JSON lines, or
// on a terminal (src/cli.ts's --log-format) human lines at warn and above (--verbose: info).
import { randomUUID } from 'node:crypto';
import { pino, type Logger } from 'pino';
import { humanDestination } from './human-log.js';

export type { Logger };

/** `auto`: human lines when stderr is a terminal, JSON otherwise. */
export const LOG_FORMATS = ['auto', 'human', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LogOutput {
  format: LogFormat;
  /** Human lines from info (or `log.level`, when lower) rather than warn. */
  verbose: boolean;
}

/** JSON until the command line says otherwise: callers other than src/cli.ts (tests, benches) keep today's lines. */
let output: LogOutput = { format: 'json', verbose: false };

/** Set once by src/cli.ts from the global flags, before a command runs. */
export function setLogOutput(next: LogOutput): void {
  output = next;
}

export function createLogger(options: { level?: string; destination?: number } = {}): Logger {
  const level = options.level ?? process.env.EFSYNC_LOG_LEVEL ?? 'info';
  const fd = options.destination ?? 2;
  const human = fd === 2 && (output.format === 'human' || (output.format === 'auto' && process.stderr.isTTY === true));
  return pino(
    {
      level: human ? humanLevel(level, output.verbose) : level,
      base: { app: 'efsync' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // The key travels in one header only; redact it wherever a request object is logged.
      redact: {
        paths: ['apiKey', '*.apiKey', 'headers.authorization', '*.headers.authorization'],
        censor: '[redacted]',
      },
    },
    human ? humanDestination(process.stderr) : pino.destination({ fd, sync: true }),
  );
}

/**
 * A person reads warnings and errors, or with --verbose the info lines too: the configured level
 * bounds it only where it asks for fewer lines (error) or, with --verbose, more (debug).
 */
export function humanLevel(level: string, verbose: boolean): string {
  const value = pino.levels.values[level] ?? Number.POSITIVE_INFINITY; // silent
  if (verbose) return value <= pino.levels.values.info ? level : 'info';
  return value >= pino.levels.values.warn ? level : 'warn';
}

/** A fresh run id: sortable by time, unique across processes. */
export function newRunId(now = Date.now()): string {
  return `${new Date(now).toISOString().replace(/[-:.]/g, '').slice(0, 15)}Z-${randomUUID().slice(0, 8)}`;
}

/** One child logger per job run, carrying its run id on every line. */
export function runLogger(parent: Logger, job: string, runId: string): Logger {
  return parent.child({ job, runId });
}
