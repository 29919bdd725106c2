// The values efsync takes from @duckdb/node-api, required rather than imported. The package is
// CommonJS: imported from ESM, Node first scans its index and every file it re-exports (the
// CommonJS export lexer) for the names it exports, and then requires it all the same; required,
// only the require is paid, at the start of every command (docs/benchmarks.md, session 33).
// Types still come from the package itself (`import type`).
import { createRequire } from 'node:module';

const api: typeof import('@duckdb/node-api') = createRequire(import.meta.url)('@duckdb/node-api');

export const { DuckDBInstance, DuckDBDataChunk, DuckDBResultReader, JSDuckDBValueConverter, DOUBLE, INTEGER, VARCHAR } =
  api;
export type DuckDBInstance = import('@duckdb/node-api').DuckDBInstance;
export type DuckDBResultReader = import('@duckdb/node-api').DuckDBResultReader;
