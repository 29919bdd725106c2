// How an error ends a run or a command: its outcome (src/outcome.ts), by the error's type, never
// by its message text; anything untyped is `internal`, a bug. The run ledger records it, and the
// command line's boundary (src/cli/boundary.ts) says it and exits with its code.
import { ServiceError } from '../api/errors.js';
import { EfsyncError } from '../errors.js';
import type { Outcome } from '../outcome.js';
import { WarehouseBusyError } from '../warehouse/lock.js';
import { InputFileError } from '../yaml.js';

/** A system error (node:fs and friends): its code and, when it concerns a file, the path. */
export interface SystemError extends Error {
  code: string;
  syscall?: string;
  path?: string;
}

export function isSystemError(error: unknown): error is SystemError {
  return (
    error instanceof Error &&
    typeof (error as SystemError).code === 'string' &&
    typeof (error as SystemError).syscall === 'string'
  );
}

/** A path the user can fix (it does not exist, is not a folder, may not be written). */
export const PATH_CODES: Record<string, string> = {
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
  if (error instanceof InputFileError) return 'config';
  if (error instanceof WarehouseBusyError) return 'busy';
  if (error instanceof ServiceError) return error.kind === 'aborted' ? 'interrupted' : 'service';
  if (isSystemError(error)) return error.code in PATH_CODES ? 'config' : 'failed';
  return 'internal';
}
