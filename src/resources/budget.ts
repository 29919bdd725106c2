// The process's memory budget: one size, from --memory, else EFSYNC_MEMORY, else the config's
// resources.memory, else the cgroup's memory limit, else DEFAULT_BUDGET. Every other memory size
// of a command is derived from it (src/resources/sizes.ts); docs/warehouse.md, "Memory budget".
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../errors.js';

/** Without a limit to honour, the 300 MB every benchmark night of this project is held to. */
export const DEFAULT_BUDGET = 300_000_000;

/**
 * What a step takes with the warehouse open before its own work, whatever its budget: Node and
 * its modules, DuckDB's library and the open warehouse (a nightly chain's steps start at 170–180
 * MiB, docs/decisions/memory-budget.md). The sizes share out the rest.
 */
export const PROCESS_BYTES = 180_000_000;

/** The least budget: where every size is 40% of its value at the default (DuckDB's limits 26 and 38MB, 80,000 rows in memory). */
export const SMALLEST_BUDGET = Math.round(PROCESS_BYTES + 0.4 * (DEFAULT_BUDGET - PROCESS_BYTES));

/** Where the budget came from, as `efsync status` and a run's log say it. */
export type BudgetSource = '--memory' | 'EFSYNC_MEMORY' | 'resources.memory' | 'cgroup' | 'default';

export interface Budget {
  bytes: number;
  source: BudgetSource;
}

/** Decimal units as DuckDB reads them (MB: 10^6 bytes), binary ones with an i (MiB: 2^20). */
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/**
 * A budget as a user writes it (`256MB`, `1GB`, `1.5GiB`) in bytes; the message of the error
 * thrown says what is wrong, for the caller to prefix with the flag, variable or key.
 */
export function parseSize(text: string): number {
  const bytes = bytesIn(text);
  if (bytes < SMALLEST_BUDGET) throw new Error(`${text} is below the smallest budget, ${SMALLEST_BUDGET / 1e6}MB`);
  return bytes;
}

/** A size (`256MB`, `1.5GiB`, a DuckDB memory_limit) in bytes, whatever its size. */
export function bytesIn(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(text.trim());
  const unit = match ? UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) throw new Error(`not a size such as 256MB or 1GB: ${JSON.stringify(text)}`);
  return Math.round(Number(match[1]) * unit);
}

/**
 * The memory limit of the cgroup this process runs in, the least of its own and its ancestors'
 * (as the kernel enforces each): v2's memory.max and v1's memory/memory.limit_in_bytes along the
 * paths /proc/self/cgroup names, under EFSYNC_CGROUP_ROOT (which only tests set) or
 * /sys/fs/cgroup. Null when none binds: no file, `max`, or a limit at or above the machine's
 * memory (v1 writes ~2^63 for none).
 */
export function cgroupLimit(env: NodeJS.ProcessEnv = process.env): number | null {
  const root = env.EFSYNC_CGROUP_ROOT || '/sys/fs/cgroup';
  const own = ownCgroups();
  const files = [
    ...ancestors(own.v2).map((path) => join(root, path, 'memory.max')),
    ...ancestors(own.v1).map((path) => join(root, 'memory', path, 'memory.limit_in_bytes')),
  ];
  const limits = files
    .map((file) => Number(readOrNull(file) ?? Number.NaN))
    .filter((bytes) => Number.isFinite(bytes) && bytes > 0 && bytes < totalmem());
  return limits.length === 0 ? null : Math.min(...limits);
}

/** This process's cgroup paths, v2's (`0::/path`) and v1's memory controller's (`N:memory:/path`); `/` when not named. */
function ownCgroups(): { v2: string; v1: string } {
  const lines = (readOrNull('/proc/self/cgroup') ?? '').split('\n');
  const pathOf = (match: (line: string) => boolean) => lines.find(match)?.split(':').slice(2).join(':') || '/';
  return {
    v2: pathOf((line) => line.startsWith('0::')),
    v1: pathOf((line) => line.split(':')[1]?.split(',').includes('memory') ?? false),
  };
}

/** `/a/b` and every folder above it: `/a/b`, `/a`, `/`. */
function ancestors(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.map((_, i) => `/${parts.slice(0, parts.length - i).join('/')}`).concat('/');
}

function readOrNull(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * The budget by precedence: the flag, the variable, the config (already parsed and checked by
 * its schema, in bytes or null), the cgroup, the default. A cgroup limit below the smallest
 * budget is taken as it is, the limit the process lives under, not a choice; its sizes are the
 * smallest budget's (sizesFor).
 */
export function resolveBudget(
  sources: { flag?: string; configured: number | null },
  env: NodeJS.ProcessEnv = process.env,
): Budget {
  if (sources.flag !== undefined) return { bytes: sizeOf('--memory', sources.flag), source: '--memory' };
  if (env.EFSYNC_MEMORY) return { bytes: sizeOf('EFSYNC_MEMORY', env.EFSYNC_MEMORY), source: 'EFSYNC_MEMORY' };
  if (sources.configured !== null) return { bytes: sources.configured, source: 'resources.memory' };
  const limit = cgroupLimit(env);
  return limit === null ? { bytes: DEFAULT_BUDGET, source: 'default' } : { bytes: limit, source: 'cgroup' };
}

/** A flag's or variable's size, or an error naming it (exit 2). */
function sizeOf(name: string, text: string): number {
  try {
    return parseSize(text);
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
}
