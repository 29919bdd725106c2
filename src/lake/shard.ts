/**
 * Shards: which sites one worker of N syncs. A site belongs to shard
 * `jumpHash(fnv1a64(site_id), N)`: stable across processes and machines (no seeds, no Math.random),
 * and when N changes only ~1/N of the sites move (jump consistent hash, Lamping & Veach 2014),
 * where `fnv1a64 % N` would move almost all of them.
 *
 *   parseShard('1/4', '--shard')  → { index: 1, count: 4 }   (index from 0, like a Kubernetes completion index)
 *   shardFromEnv(process.env)     → EFSYNC_SHARD=I/N, else JOB_COMPLETION_INDEX with EFSYNC_SHARDS=N, else undefined
 *   shardOf('site-17', 4)         → 0..3
 *   inShard(sites, shard)         → the sites whose site_id falls in the shard (all when no shard)
 */
import { RequestError } from '../errors.js';

export interface Shard {
  /** From 0 to count - 1. */
  index: number;
  count: number;
}

/** A shard setting that makes no sense: a usage error naming where it came from. */
export class ShardError extends RequestError {}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK_64 = 0xffffffffffffffffn;

/** FNV-1a, 64 bits, over the UTF-8 bytes of `text`. */
export function fnv1a64(text: string): bigint {
  let hash = FNV_OFFSET;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= BigInt(byte);
    hash = (hash * FNV_PRIME) & MASK_64;
  }
  return hash;
}

/** Jump consistent hash: the bucket in [0, buckets) of a 64-bit key. */
export function jumpHash(key: bigint, buckets: number): number {
  let k = key;
  let b = -1;
  let j = 0;
  while (j < buckets) {
    b = j;
    k = (k * 2862933555777941757n + 1n) & MASK_64;
    j = Math.floor(((b + 1) * 2 ** 31) / (Number(k >> 33n) + 1));
  }
  return b;
}

export function shardOf(siteId: string, count: number): number {
  return jumpHash(fnv1a64(siteId), count);
}

export function inShard<T extends { site_id: string }>(sites: T[], shard: Shard | undefined): T[] {
  if (!shard) return sites;
  return sites.filter((site) => shardOf(site.site_id, shard.count) === shard.index);
}

/** `I/N` with 0 <= I < N; `source` names the flag or variable in the error. */
export function parseShard(text: string, source: string): Shard {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  if (!match)
    throw new ShardError(`${source}: not a shard: ${JSON.stringify(text)} (use I/N with I from 0 to N-1, e.g. 0/4)`);
  return checkShard(Number(match[1]), Number(match[2]), source);
}

function checkShard(index: number, count: number, source: string): Shard {
  if (!Number.isSafeInteger(count) || count < 1)
    throw new ShardError(`${source}: the number of shards must be at least 1, got ${count}`);
  if (!Number.isSafeInteger(index) || index >= count)
    throw new ShardError(
      `${source}: shard index ${index} is not below the number of shards ${count} (indexes count from 0)`,
    );
  return { index, count };
}

/**
 * The shard from the environment: EFSYNC_SHARD=I/N, or the completion index of a Kubernetes
 * Indexed Job (JOB_COMPLETION_INDEX) with the number of shards in EFSYNC_SHARDS (the Job's
 * `completions`, which Kubernetes does not pass to the pod).
 */
export function shardFromEnv(env: NodeJS.ProcessEnv): Shard | undefined {
  if (env.EFSYNC_SHARD) return parseShard(env.EFSYNC_SHARD, 'EFSYNC_SHARD');
  const index = env.JOB_COMPLETION_INDEX;
  if (index === undefined || index === '') return undefined;
  const count = env.EFSYNC_SHARDS;
  if (!count)
    throw new ShardError("JOB_COMPLETION_INDEX is set but EFSYNC_SHARDS is not: set it to the Job's completions");
  if (!/^\d+$/.test(index)) throw new ShardError(`JOB_COMPLETION_INDEX: not a number: ${JSON.stringify(index)}`);
  if (!/^\d+$/.test(count)) throw new ShardError(`EFSYNC_SHARDS: not a number: ${JSON.stringify(count)}`);
  return checkShard(Number(index), Number(count), 'JOB_COMPLETION_INDEX/EFSYNC_SHARDS');
}

/** `s1of4`: the shard's tag in file names and lock names. */
export function shardTag(shard: Shard | undefined): string {
  const { index, count } = shard ?? { index: 0, count: 1 };
  return `s${index}of${count}`;
}

export function formatShard(shard: Shard | undefined): string {
  const { index, count } = shard ?? { index: 0, count: 1 };
  return `${index}/${count}`;
}
