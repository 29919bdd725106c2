// efsync's DuckDB extension (native/efsync.c, built at install by scripts/build-native.js): the
// accuracy statistics' efsync_point_stats and efsync_bin, and efsync_trim, which the executor's
// handBackPool calls. openDuckDB loads it into every database it opens, so that a database opened
// again (a publish that compacts the writer file) has it too. Where the file is missing (no C
// compiler at install) or DuckDB will not load it, the statistics run in SQL (the same values,
// about 2.5x the time) and the C heap keeps the free memory it would have trimmed.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../package.js';
import { quoteLiteral } from './sql.js';

/** Where the build puts the extension, under the package's root (no root found: no extension). */
export const NATIVE_EXTENSION_PATH = join(packageRoot(), 'dist', 'native', 'efsync.duckdb_extension');

/** A database's statements: a Warehouse, metrics.ts's SqlRunner, or a DuckDB connection. */
export interface Statements {
  run(sql: string): Promise<unknown>;
}

const loaded = new WeakMap<Statements, Promise<boolean>>();

/**
 * Whether the database behind `sql` has the extension's functions, loading it on first use.
 * DuckDB loads an extension once per database (a second LOAD does nothing), and only a database
 * opened with allow_unsigned_extensions (openDuckDB) loads this one.
 */
export function hasNativeExtension(sql: Statements): Promise<boolean> {
  let found = loaded.get(sql);
  if (!found) {
    found = load(sql);
    loaded.set(sql, found);
  }
  return found;
}

async function load(sql: Statements): Promise<boolean> {
  if (!existsSync(NATIVE_EXTENSION_PATH)) return false;
  try {
    await sql.run(`LOAD ${quoteLiteral(NATIVE_EXTENSION_PATH)}`);
    return true;
  } catch {
    return false;
  }
}
