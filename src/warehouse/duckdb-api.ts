// The values efsync takes from @duckdb/node-api, required rather than imported. The package is
// CommonJS: imported from ESM, Node first scans its index and every file it re-exports (the
// CommonJS export lexer) for the names it exports, and then requires it all the same; required,
// only the require is paid, at the start of every command (docs/benchmarks.md, session 33).
// Types still come from the package itself (`import type`).
import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);
const api: typeof import('@duckdb/node-api') = requireHere('@duckdb/node-api');

export const { DuckDBInstance, DuckDBDataChunk, DuckDBResultReader, JSDuckDBValueConverter, DOUBLE, INTEGER, VARCHAR } =
  api;
/**
 * DuckDB's C API, the layer node-api calls: the staging tables take whole columns of numbers
 * through it in one copy (staging.ts), where a node-api vector takes them a value at a time.
 * Required from node-api's own folder, so that it is the copy node-api loaded: a chunk or a
 * vector is a handle into one loaded library, and another copy's functions must not be given it.
 */
export const bindings: typeof import('@duckdb/node-bindings') = createRequire(requireHere.resolve('@duckdb/node-api'))(
  '@duckdb/node-bindings',
);
export type DuckDBInstance = import('@duckdb/node-api').DuckDBInstance;
export type DuckDBResultReader = import('@duckdb/node-api').DuckDBResultReader;
