/**
 * The one way in and out of the process, for every command (src/cli/main.ts registers them
 * through `command()`):
 *
 * - **Outcomes and exit codes**: every command ends in one of the outcomes of `EXIT`
 *   (src/outcome.ts), the one table of exit codes (the README's), whether it returned or threw.
 * - **Typed errors**: a command throws `UsageError` for a flag or argument; the layers below throw
 *   the errors of src/errors.ts (`RequestError` for what was asked, `ConfigError`) or their own
 *   typed ones (`ServiceError`, `InputFileError`,
 *   `WarehouseBusyError`, a system error naming a path), and commander throws its own.
 *   `outcomeOf` classifies by type (src/runner/outcome.ts, the same the run ledger records),
 *   never by message text; anything else is `internal`, a bug. DuckDB's errors have no type: the
 *   one for a damaged Parquet file becomes a `ConfigError` naming it (damagedParquetError).
 * - **One line for the user**: `efsync <command>: <what is wrong>`, naming the file, key or flag;
 *   the stack trace goes to the JSON log (stderr), and to the terminal only with `--debug`.
 * - **One signal handler** for the whole process (src/runner/signals.ts), installed by main.ts.
 * - **Output without a reader is lost, not fatal** (outliveGoneReaders), installed by main.ts.
 */
import { CommanderError, type Command } from 'commander';
import { EfsyncError } from '../errors.js';
import { createLogger } from '../log.js';
import { EXIT, type ExitCode, type Outcome } from '../outcome.js';
import { isSystemError, outcomeOf as runOutcomeOf, PATH_CODES } from '../runner/outcome.js';
import { damagedParquetError } from '../warehouse/duckdb.js';

/**
 * What a write to stdout or stderr fails with once its reader is gone: a pipe's reader ended
 * (`efsync run nightly | tee log`, a parent killed, journald restarted), a terminal closed, or the
 * stream already destroyed by one of those.
 */
const READER_GONE = new Set(['EPIPE', 'EIO', 'ERR_STREAM_DESTROYED']);

/**
 * Goes on when the reader of stdout or stderr goes away: what would have been printed is lost, and
 * a run still ends and records its outcome (the ledger, metrics and alerts keep it). Node reports
 * such a write as an 'error' event of the stream, which unhandled ends the process halfway.
 */
export function outliveGoneReaders(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (!READER_GONE.has(error.code ?? '')) throw error;
    });
  }
}

/** A flag or argument makes no sense; the message names it. */
export class UsageError extends EfsyncError {
  constructor(message: string, hint?: string) {
    super('usage', message, hint);
  }
}

/** The outcome an error stands for: a run's (src/runner/outcome.ts), or commander's usage error. */
export function outcomeOf(error: unknown): Exclude<Outcome, 'ok' | 'partial'> {
  return error instanceof CommanderError ? 'usage' : runOutcomeOf(error);
}

/** What the user reads: one line naming the file, key or flag, and what to do. */
export function describeError(error: unknown, flags: Record<string, unknown> = {}): string {
  const outcome = outcomeOf(error);
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof EfsyncError) return error.hint ? `${message}; ${error.hint}` : message;
  if (isSystemError(error)) {
    const what = PATH_CODES[error.code] ?? error.code;
    const where = error.path ? `${error.path}: ` : '';
    const flag = error.path ? flagNaming(error.path, flags) : null;
    return `${where}cannot ${error.syscall}: ${what} (${error.code})${flag ? `; check ${flag}` : ''}`;
  }
  if (outcome === 'internal') {
    return `internal error: ${message} (a bug in efsync: run again with --debug for the stack trace, which the JSON log also holds)`;
  }
  return message;
}

/** The flag whose value is the path, a folder of it, a file in it or beside it: `--db /x/w.duckdb`. */
function flagNaming(path: string, flags: Record<string, unknown>): string | null {
  for (const [name, value] of Object.entries(flags)) {
    if (typeof value !== 'string' || value === '') continue;
    if (
      path === value ||
      path.startsWith(`${value}/`) ||
      // a file written beside it first (`<out>.tmp-PID`), then renamed to it
      path.startsWith(`${value}.`) ||
      value.startsWith(`${path}/`) ||
      value.startsWith(`${path}.`)
    ) {
      return `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} ${value}`;
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Commands

/** `efsync capacity apply` for the command `apply` under `capacity`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Exit codes of a command's own that a flag asks for, in place of the outcomes' (`sites plan
 * --detailed-exitcode`, as terraform's: 0 no change, 2 changes, 1 an error).
 */
export interface OwnExitCodes {
  /** The code the body's result ends with. */
  exitCode: number;
}

/**
 * A command's action: `body` gets the arguments and options commander parsed and resolves to an
 * outcome (or codes of its own, and `errorExit` the code of any error); whatever it throws is
 * classified, said in one line, logged, and becomes the exit code.
 */
export function command<Args extends unknown[], Flags extends object>(
  body: (...args: [...Args, Flags]) => Promise<Outcome | OwnExitCodes> | Outcome | OwnExitCodes,
  errorExit?: (flags: Flags) => number | undefined,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const self = args[args.length - 1] as Command;
    const flags = self.optsWithGlobals<Flags & { debug?: boolean }>();
    try {
      const result = await body(...(args.slice(0, -2) as Args), flags);
      process.exitCode = typeof result === 'string' ? EXIT[result] : result.exitCode;
    } catch (error) {
      const outcome = reportError(commandPath(self), damagedParquetError(error) ?? error, flags);
      process.exitCode = errorExit?.(flags) ?? EXIT[outcome];
    }
  };
}

/** Says what went wrong in one line (the stack only with --debug), logs it, returns its outcome. */
export function reportError(
  where: string,
  error: unknown,
  flags: Record<string, unknown> & { debug?: boolean } = {},
): Outcome {
  const outcome = outcomeOf(error);
  process.stderr.write(`${where}: ${describeError(error, flags)}\n`);
  if (flags.debug && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  const log = createLogger();
  if (outcome === 'internal') log.error({ err: error, command: where }, 'internal error');
  else log.debug({ err: error, command: where, outcome }, 'command failed');
  return outcome;
}

/** Commander's own errors (unknown option, missing argument): it has printed them; exit 2. */
export function commanderExit(error: unknown): ExitCode {
  if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  return EXIT[reportError('efsync', error)];
}
