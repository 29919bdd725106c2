// Builds native/efsync.c into dist/native/efsync.duckdb_extension (run by build.js,
// so by `npm ci`): compiled with the system's C compiler ($CC, else cc) against the libduckdb of
// the installed @duckdb/node-bindings, and given the 512-byte footer DuckDB reads before it loads
// an extension (its platform, the C API version it needs, the C_STRUCT ABI; unsigned). Where it
// cannot be built (no compiler, a platform without a libduckdb.so) it says so and stops without
// failing the install: the accuracy statistics then run in SQL, about 2.5x slower (docs/accuracy.md),
// and the C heap keeps the free memory it would have trimmed.
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = `${root}native/efsync.c`;
/** Where it goes: dist/native, unless named (`node scripts/build-native.js <file>`, as a test does). */
const target = process.argv[2] ?? `${root}dist/native/efsync.duckdb_extension`;
/** The oldest DuckDB C API with everything the file calls (aggregate functions came in 1.1, C extensions in 1.2). */
const C_API_VERSION = 'v1.2.0';
const EXTENSION_VERSION = 'v1';

/** The directory of the libduckdb.so that @duckdb/node-api runs on. */
function libduckdbDir() {
  const require = createRequire(createRequire(import.meta.url).resolve('@duckdb/node-api'));
  const bindings = createRequire(require.resolve('@duckdb/node-bindings'));
  return dirname(bindings.resolve(`@duckdb/node-bindings-${process.platform}-${process.arch}/package.json`));
}

/** DuckDB's name for this platform (linux_amd64, ...), which the footer must match. */
async function duckdbPlatform() {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const [[platform]] = (await connection.runAndReadAll('PRAGMA platform')).getRows();
    return String(platform);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Eight 32-byte fields, read by DuckDB in reverse (magic value last), then an empty 256-byte signature. */
function footer(platform) {
  const field = (text) => {
    const bytes = Buffer.alloc(32);
    bytes.write(text, 'utf8');
    return bytes;
  };
  const fields = ['', '', '', 'C_STRUCT', EXTENSION_VERSION, C_API_VERSION, platform, '4'].map(field);
  return Buffer.concat([...fields, Buffer.alloc(256)]);
}

async function build() {
  if (process.platform !== 'linux') throw new Error(`no build for ${process.platform}`);
  const lib = libduckdbDir();
  const partial = `${target}.partial`;
  mkdirSync(dirname(target), { recursive: true });
  // -ffp-contract=off: no fused multiply-adds, so each product rounds as DuckDB's SQL rounds it
  const flags = ['-std=c11', '-O2', '-ffp-contract=off', '-fPIC', '-shared', '-Wall', '-Wextra', '-Werror'];
  execFileSync(
    process.env.CC ?? 'cc',
    [...flags, '-o', partial, source, `-L${lib}`, '-lduckdb', `-Wl,-rpath,${lib}`, '-lm'],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  appendFileSync(partial, footer(await duckdbPlatform()));
  renameSync(partial, target);
}

try {
  await build();
} catch (error) {
  rmSync(target, { force: true });
  console.warn(
    `efsync: the native extension was not built (${error instanceof Error ? error.message : error}); accuracy computes its statistics in SQL instead`,
  );
}
