// The values efsync takes from @duckdb/node-api, required rather than imported. The package is
// CommonJS: imported from ESM, Node first scans its index and every file it re-exports (the
// CommonJS export lexer) for the names it exports, and then requires it all the same; required,
// only the require is paid, at the start of every command (docs/benchmarks.md, session 33).
// Types still come from the package itself (`import type`).
import { createRequire } from 'node:module';

const api: typeof import('@duckdb/node-api') = createRequire(import.meta.url)('@duckdb/node-api');

export const { DuckDBInstance, DuckDBDataChunk, DuckDBResultReader, JSDuckDBValueConverter, DOUBLE, INTEGER, VARCHAR } =
  api;
/**
 * DuckDB's C API as the node-api package calls it: the staging tables take whole columns of
 * numbers through it in one copy (staging.ts), where a node-api vector takes them one value at a time.
 */
export const bindings: typeof import('@duckdb/node-bindings') = createRequire(import.meta.url)('@duckdb/node-bindings');
export type DuckDBInstance = import('@duckdb/node-api').DuckDBInstance;
export type DuckDBResultReader = import('@duckdb/node-api').DuckDBResultReader;
