/**
 * The one way in and out of the process, for every command (src/cli.ts registers them through
 * `command()`):
 *
 * - **Outcomes and exit codes**: every command ends in one of the outcomes of `EXIT`, the one
 *   table of exit codes (the README's), whether it returned or threw.
 * - **Typed errors**: code that knows what went wrong throws `UsageError` (a flag or argument),
 *   `ConfigError` (a file, a key, a path), `InterruptedError` or `FailedError`; errors of other
 *   parts are typed too (`ServiceError`, `InputFileError`, `WarehouseBusyError`, commander's, a
 *   system error naming a path). `outcomeOf` classifies by type, never by message text; anything
 *   else is `internal`, a bug.
 * - **One line for the user**: `efsync <command>: <what is wrong>`, naming the file, key or flag;
 *   the stack trace goes to the JSON log (stderr), and to the terminal only with `--debug`.
 * - **One signal handler** for the whole process: the first SIGINT/SIGTERM aborts `stopSignal()`
 *   with an Error named after the signal (a run finishes or rolls back its site in flight and
 *   records itself as interrupted; a daemon or the emulator stops and exits 0); a
 *   second one gives `onSecondSignal` hooks a moment to record the run, then exits 5. A command
 *   that never asked for `stopSignal()` has nothing to finish: the first signal exits 5 at once.
 */
import { CommanderError, type Command } from 'commander';
import { ServiceError } from './api/errors.js';
import { createLogger } from './log.js';
import { printAbove } from './progress.js';
import { interruptAll } from './warehouse/duckdb.js';
import { WarehouseBusyError } from './warehouse/lock.js';
import { InputFileError } from './yaml.js';

/** Every outcome of a command, and the exit code it ends with: the README's table. */
export const EXIT = {
  /** Everything asked for was done. */
  ok: 0,
  /** Finished, but some sites or steps failed (named in the summary, `run_failures`, `efsync status`). */
  partial: 1,
  /** A flag or argument is wrong (unknown option, `--from` after `--to`, an unknown job). */
  usage: 2,
  /** A file, key or path is wrong (invalid config or capacity file, a missing file, a path that cannot be written). */
  config: 2,
  /** Another efsync process holds the warehouse writer lock (the message names it). */
  busy: 3,
  /** The service is unreachable, refused us or answered what the interface does not allow. */
  service: 4,
  /** Failed as a whole for another stated reason (a timeout, a full disk). */
  failed: 4,
  /** A bug: the one line says so, the stack is in the JSON log (and on the terminal with --debug). */
  internal: 4,
  /** Stopped by SIGINT or SIGTERM; the site in flight finished or rolled back; the run is recorded. */
  interrupted: 5,
} as const;

export type Outcome = keyof typeof EXIT;
export type ExitCode = (typeof EXIT)[Outcome];

/** An error whose outcome its thrower knows. `hint` says what to do, when the message does not. */
export class EfsyncError extends Error {
  constructor(
    readonly outcome: Exclude<Outcome, 'ok' | 'partial'>,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A flag or argument makes no sense; the message names it. */
export class UsageError extends EfsyncError {
  constructor(message: string, hint?: string) {
    super('usage', message, hint);
  }
}

/** A config file, key, input file or path is wrong; the message names it. */
export class ConfigError extends EfsyncError {
  constructor(message: string, hint?: string) {
    super('config', message, hint);
  }
}

/** Failed as a whole for a stated reason that is neither the service nor a bug (a timeout). */
export class FailedError extends EfsyncError {
  constructor(message: string, hint?: string) {
    super('failed', message, hint);
  }
}

export class InterruptedError extends EfsyncError {
  constructor(message: string) {
    super('interrupted', message);
  }
}

/** A system error (node:fs and friends): its code and, when it concerns a file, the path. */
interface SystemError extends Error {
  code: string;
  syscall?: string;
  path?: string;
}

function isSystemError(error: unknown): error is SystemError {
  return (
    error instanceof Error &&
    typeof (error as SystemError).code === 'string' &&
    typeof (error as SystemError).syscall === 'string'
  );
}

/** A path the user can fix (it does not exist, is not a folder, may not be written). */
const PATH_CODES: Record<string, string> = {
  ENOENT: 'no such file or folder',
  ENOTDIR: 'a part of the path is not a folder',
  EISDIR: 'is a folder',
  EEXIST: 'a file is in the way of a folder',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENAMETOOLONG: 'name too long',
};

/** The outcome an error stands for: by its type, never by its message. */
export function outcomeOf(error: unknown): Exclude<Outcome, 'ok' | 'partial'> {
  if (error instanceof EfsyncError) return error.outcome;
  if (error instanceof CommanderError) return 'usage';
  if (error instanceof InputFileError) return 'config';
  if (error instanceof WarehouseBusyError) return 'busy';
  if (error instanceof ServiceError) return error.kind === 'aborted' ? 'interrupted' : 'service';
  if (isSystemError(error)) return error.code in PATH_CODES ? 'config' : 'failed';
  return 'internal';
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
// Signals

const stop = new AbortController();
let stopWanted = false;
/** What the first signal does, as the command that asked for `stopSignal()` words it. */
let stopping = '';
const secondSignalHooks = new Set<() => Promise<void>>();
/** How long a second signal waits for the hooks (recording the run) before exiting anyway. */
const SECOND_SIGNAL_GRACE_MS = 5_000;

/** How often, and how many times, the DuckDB statements are interrupted before the exit. */
const INTERRUPT_EVERY_MS = 20;
const INTERRUPTS = 5;

/**
 * Exits 5 within a tenth of a second. A running DuckDB statement would hold process.exit() until
 * it ends, so every open connection is interrupted first, and again a few times: a statement whose
 * task was queued as the signal came starts after the first interrupt and clears it.
 */
function exitInterrupted(): void {
  // The interrupted statement fails, and what it fails may end the process before the last
  // interrupt: whichever way it ends, it ends as interrupted.
  process.on('exit', () => {
    process.exitCode = EXIT.interrupted;
  });
  interruptAll();
  let interrupts = 1;
  setInterval(() => {
    interruptAll();
    interrupts += 1;
    if (interrupts >= INTERRUPTS) process.exit(EXIT.interrupted);
  }, INTERRUPT_EVERY_MS);
}

function onSignal(name: NodeJS.Signals): void {
  if (!stopWanted) {
    exitInterrupted(); // nothing runs that could finish cleanly
    return;
  }
  if (!stop.signal.aborted) {
    printAbove(process.stderr, `efsync: ${name}: ${stopping}; a second signal stops at once\n`);
    stop.abort(new Error(name));
    return;
  }
  printAbove(process.stderr, `efsync: second ${name}: recording the run as interrupted, then exiting\n`);
  const hooks = [...secondSignalHooks].map((hook) => hook().catch(() => undefined));
  const grace = new Promise((resolve) => setTimeout(resolve, SECOND_SIGNAL_GRACE_MS).unref());
  void Promise.race([Promise.all(hooks), grace]).then(exitInterrupted);
}

/** Installed once, by src/cli.ts, before any command runs. */
export function installSignalHandler(): void {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/**
 * The process-wide stop: aborted by the first SIGINT/SIGTERM (its reason `Error('SIGTERM')`);
 * `what` is what the command then does, for the line the signal prints ("stopping after …").
 */
export function stopSignal(what: string): AbortSignal {
  stopWanted = true;
  stopping = what;
  return stop.signal;
}

/** Runs `hook` on a second signal, before the process exits 5; returns its removal. */
export function onSecondSignal(hook: () => Promise<void>): () => void {
  secondSignalHooks.add(hook);
  return () => secondSignalHooks.delete(hook);
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
 * A command's action: `body` gets the arguments and options commander parsed and resolves to an
 * outcome; whatever it throws is classified, said in one line, logged, and becomes the exit code.
 */
export function command<Args extends unknown[], Flags extends object>(
  body: (...args: [...Args, Flags]) => Promise<Outcome> | Outcome,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const self = args[args.length - 1] as Command;
    const flags = self.optsWithGlobals<Flags & { debug?: boolean }>();
    try {
      process.exitCode = EXIT[await body(...(args.slice(0, -2) as Args), flags)];
    } catch (error) {
      process.exitCode = EXIT[reportError(commandPath(self), error, flags)];
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
