// Every DuckDB database efsync opens goes through here, so that every connection reads and
// writes instants in UTC whatever the machine's time zone, and so that a signal can interrupt
// whatever statement runs before the process exits.
import type { DuckDBConnection } from '@duckdb/node-api';
import { DuckDBInstance } from './duckdb-api.js';
import { ConfigError } from '../errors.js';
import { hasNativeExtension } from './native.js';
import { WRITER_SETTINGS } from './settings.js';
import { quoteLiteral } from './sql.js';

const open = new Set<DuckDBConnection>();

/**
 * Interrupts the statement running on every open connection (it fails and its transaction rolls
 * back). process.exit() waits for a running DuckDB statement to end, which for an accuracy pass
 * can be minutes: the signal handler calls this first (src/runner/signals.ts).
 */
export function interruptAll(): void {
  for (const connection of open) connection.interrupt();
}

export interface DuckDBHandle {
  instance: DuckDBInstance;
  connection: DuckDBConnection;
  /** Closes the connection, then the database. */
  close(): void;
}

/**
 * Opens `path` (a file, or `:memory:`) with one connection whose time zone is UTC.
 *
 * DuckDB takes its TimeZone setting from the OS (the TZ variable), and with ICU linked in it
 * casts offset-less text to TIMESTAMPTZ, and takes hour(), date parts and casts to DATE of a
 * TIMESTAMPTZ, in that zone: under TZ=America/New_York a pairs file's `2026-01-31 14:00` became
 * 19:00 UTC. `SET GLOBAL` pins it for the database, so connections opened later on the same
 * instance are UTC too (a plain SET would hold for this connection only). It cannot go into the
 * instance's config: ICU is not loaded yet when the config is read.
 *
 * `fileSearchPath`: the folders a relative file path is read from, first to last (DuckDB's
 * file_search_path); a reader of the published file puts its folder first (publishedSearchPath).
 * `writer`: the writer file's instance, or a draft that replaces it, with WRITER_SETTINGS.
 * efsync's extension is loaded where it can be (src/warehouse/native.ts).
 */
export async function openDuckDB(
  path: string,
  options: {
    readOnly?: boolean;
    memoryLimit?: string | null;
    fileSearchPath?: readonly string[];
    writer?: boolean;
  } = {},
): Promise<DuckDBHandle> {
  const instance = await DuckDBInstance.create(path, {
    ...(options.readOnly ? { access_mode: 'READ_ONLY' } : {}),
    ...(options.memoryLimit ? { memory_limit: options.memoryLimit } : {}),
    ...(options.writer ? WRITER_SETTINGS : {}),
    // efsync's own extension is built at install, so it carries no signature (src/warehouse/native.ts)
    allow_unsigned_extensions: 'true',
    // DuckDB caches what it reads of Parquet files in its buffer pool, by default; the cold store's
    // files are local, and the kernel's page cache holds them already, so the cache only adds to
    // the RSS and costs time (docs/benchmarks.md, session 12).
    enable_external_file_cache: 'false',
  });
  try {
    const connection = await instance.connect();
    try {
      await connection.run(`SET GLOBAL TimeZone = 'UTC'`);
      if (options.fileSearchPath) {
        await connection.run(`SET GLOBAL file_search_path = ${quoteLiteral(options.fileSearchPath.join(','))}`);
      }
      await hasNativeExtension(connection);
    } catch (error) {
      connection.closeSync();
      throw error;
    }
    open.add(connection);
    return {
      instance,
      connection,
      close() {
        open.delete(connection);
        connection.closeSync();
        instance.closeSync();
      },
    };
  } catch (error) {
    instance.closeSync();
    throw error;
  }
}

/**
 * Whether DuckDB failed for lack of memory within its memory_limit: a statement that a smaller
 * piece of work, or a checkpoint first, can get through. A commit that runs out (its transaction
 * rolled back) says so without the prefix: `TransactionContext Error: Failed to commit: failed to
 * allocate data of size 512.0 KiB (60.8 MiB/61.0 MiB used)`.
 */
export function isOutOfMemory(error: unknown): boolean {
  return error instanceof Error && OUT_OF_MEMORY.test(error.message);
}

const OUT_OF_MEMORY = /^(Out of Memory Error|TransactionContext Error: Failed to commit: failed to (allocate|pin) )/;

/**
 * DuckDB's error for a Parquet file that is not one (damaged or cut short: a file of the lake or
 * of the cold store) as a ConfigError naming the file in one line; undefined for any other error.
 * DuckDB says which file only in its message, and adds the statement's text after it.
 */
export function damagedParquetError(error: unknown): ConfigError | undefined {
  const found = error instanceof Error ? DAMAGED_PARQUET.exec(error.message) : null;
  if (!found) return undefined;
  return new ConfigError(`${found[1] ?? found[2]}: not a Parquet file (damaged?)`, 'restore it from a backup');
}

const DAMAGED_PARQUET = /No magic bytes found at end of file '([^']+)'|File '([^']+)' too small to be a Parquet file/;
