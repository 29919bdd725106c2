// The process's memory budget: one size, from --memory, else EFSYNC_MEMORY, else the config's
// resources.memory, else the cgroup's memory limit, else DEFAULT_BUDGET. Every other memory size
// of a command is derived from it (src/resources/sizes.ts); docs/warehouse.md, "Memory budget".
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../errors.js';

/** Without a limit to honour, the 300 MB every benchmark night of this project is held to. */
export const DEFAULT_BUDGET = 300_000_000;

/** Below this the process itself (Node, DuckDB's library, one site's rows) does not fit. */
export const SMALLEST_BUDGET = 128_000_000;

/** Where the budget came from, as `efsync status` and the run's first log line say it. */
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
 * A size as a user writes it (`256MB`, `1GB`, `1.5GiB`) in bytes; the message of the error
 * thrown says what is wrong, for the caller to prefix with the flag, variable or key.
 */
export function parseSize(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(text.trim());
  const unit = match ? UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) throw new Error(`not a size such as 256MB or 1GB: ${JSON.stringify(text)}`);
  const bytes = Math.round(Number(match[1]) * unit);
  if (bytes < SMALLEST_BUDGET) throw new Error(`${text} is below the smallest budget, ${SMALLEST_BUDGET / 1e6}MB`);
  return bytes;
}

/**
 * The memory limit of the cgroup this process runs in (v2's memory.max, else v1's
 * memory/memory.limit_in_bytes, under EFSYNC_CGROUP_ROOT, which only tests set, else
 * /sys/fs/cgroup), or null: no file, `max`, or a limit at or above the machine's memory (v1
 * writes ~2^63 for none), which binds nothing.
 */
export function cgroupLimit(env: NodeJS.ProcessEnv = process.env): number | null {
  const root = env.EFSYNC_CGROUP_ROOT || '/sys/fs/cgroup';
  for (const file of [join(root, 'memory.max'), join(root, 'memory', 'memory.limit_in_bytes')]) {
    const text = readOrNull(file);
    if (text === null) continue;
    const bytes = Number(text);
    return Number.isFinite(bytes) && bytes > 0 && bytes < totalmem() ? bytes : null;
  }
  return null;
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
 * budget is taken as it is: it is the limit the process lives under, not a choice.
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
