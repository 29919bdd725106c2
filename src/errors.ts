// The errors whose outcome their thrower knows (src/outcome.ts), for every layer: a wrong
// request (`RequestError`), a wrong file, key or path (`ConfigError`). The command line's own flag errors are its `UsageError`
// (src/cli/boundary.ts); the boundary says each in one line and exits with its outcome's code.
import type { Outcome } from './outcome.js';

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

/** What was asked cannot be done as asked (a window, a site, a shard, a grouping, a job); the message names it. */
export class RequestError extends EfsyncError {
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

/**
 * A Delta table (src/lake/delta/) that cannot be read or written as asked: a protocol version or
 * table feature efsync does not implement (`unsupported`), or a log that breaks the protocol (a
 * missing commit, a checkpoint that does not parse: `corrupt`). The message names the table and
 * what was found.
 */
export class DeltaTableError extends ConfigError {
  constructor(
    readonly reason: 'unsupported' | 'corrupt',
    message: string,
    hint?: string,
  ) {
    super(message, hint);
  }
}

/**
 * Another writer's Delta commit invalidated this one's plan (it removed a file this commit read,
 * or changed the table's metadata): nothing was committed; plan again on the newer snapshot.
 */
export class DeltaConflictError extends FailedError {
  constructor(
    readonly table: string,
    readonly version: number,
    why: string,
  ) {
    super(`${table}: a concurrent commit (version ${version}) conflicts: ${why}`);
  }
}
