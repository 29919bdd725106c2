// A full disk, said in one line: which file, how many bytes it needed (when known), how many
// are free. DuckDB's own words ("Could not write file …: No space left on device", or after a
// failed COMMIT "cannot rollback - no transaction is active") do not say the last two.
import { closeSync, fsyncSync, openSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';

export class DiskFullError extends Error {
  constructor(
    readonly path: string,
    readonly bytesNeeded: number | null,
    readonly bytesFree: number | null,
    options?: { cause?: unknown },
  ) {
    const free = bytesFree === null ? 'free space unknown' : `${bytesFree} bytes free`;
    super(
      bytesNeeded === null
        ? `disk full: cannot write ${path} (${free})`
        : `disk full: ${path} needs ${bytesNeeded} bytes, ${free}`,
      options,
    );
    this.name = 'DiskFullError';
  }
}

export function freeBytes(path: string): number | null {
  try {
    const stats = statfsSync(dirname(path));
    return Number(stats.bavail) * Number(stats.bsize);
  } catch {
    return null;
  }
}

/** A DiskFullError if `error` is one (ENOSPC, or DuckDB's message), else `error` itself. */
export function explainDiskFull(error: unknown, path: string, bytesNeeded: number | null = null): unknown {
  if (error instanceof DiskFullError) return error;
  const message = String((error as Error)?.message ?? error);
  if ((error as NodeJS.ErrnoException)?.code !== 'ENOSPC' && !/No space left on device/i.test(message)) return error;
  const written = /Could not (?:write|truncate|fsync) file "([^"]+)"/.exec(message)?.[1] ?? path;
  return new DiskFullError(written, bytesNeeded, freeBytes(written), { cause: error });
}

/** Makes a file's (or, opened 'r', a folder's) written data durable. */
export function fsyncPath(path: string, flags: 'r' | 'r+'): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
