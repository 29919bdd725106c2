// The native accuracy statistics (native/efsync_stats.c, built at install by
// scripts/build-native.js): efsync_point_stats and efsync_bin, loaded into a database before its
// statistics are computed. Where the file is missing (no C compiler at install) or DuckDB will
// not load it, the statistics run in SQL: the same values, about 2.5x the time.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { quoteLiteral } from '../../warehouse/sql.js';

/** How a database computes the statistics: the native functions, or plain SQL. */
export type StatsEngine = 'native' | 'sql';

/**
 * The package's root: the first folder up from this module (in src/ or dist/src/) with a
 * package.json; the filesystem's root if none has one (then no extension is found: SQL).
 */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

export const NATIVE_STATS_PATH = join(packageRoot(), 'dist', 'native', 'efsync_stats.duckdb_extension');

/** A database's statements (metrics.ts's SqlRunner, which imports this module). */
interface Statements {
  run(sql: string): Promise<void>;
}

const engines = new WeakMap<Statements, Promise<StatsEngine>>();

/**
 * The engine for the database behind `sql`, loading the native functions on first use. DuckDB
 * loads an extension once per database, and only a database opened with
 * allow_unsigned_extensions (openDuckDB) loads this one.
 */
export function statsEngine(sql: Statements): Promise<StatsEngine> {
  let engine = engines.get(sql);
  if (!engine) {
    engine = loadNative(sql);
    engines.set(sql, engine);
  }
  return engine;
}

async function loadNative(sql: Statements): Promise<StatsEngine> {
  if (!existsSync(NATIVE_STATS_PATH)) return 'sql';
  try {
    await sql.run(`LOAD ${quoteLiteral(NATIVE_STATS_PATH)}`);
    return 'native';
  } catch {
    return 'sql';
  }
}
