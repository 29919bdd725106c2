// Shards: every site in exactly one shard, stable across processes and releases, and when the
// number of shards changes only the sites that must move do; a sharded sync writes only its sites.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobOptions } from '../src/cli/runner.js';
import { fnv1a64, inShard, parseShard, shardFromEnv, shardOf } from '../src/lake/shard.js';
import type { Emulator } from '../src/emulator/server.js';
import { clientFor, emulator, query, runSync, tempDir, testConfig } from './sync-support.js';

const ids = Array.from({ length: 2000 }, (_, i) => ({ site_id: `site-${i}` }));

describe('shard hashing', () => {
  it('is FNV-1a 64 (published test vectors)', () => {
    expect(fnv1a64('')).toBe(0xcbf29ce484222325n);
    expect(fnv1a64('a')).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64('foobar')).toBe(0x85944171f73967e8n);
  });

  it('puts every site in exactly one shard, about evenly', () => {
    const shards = [0, 1, 2, 3].map((index) => inShard(ids, { index, count: 4 }));
    expect(
      shards
        .flat()
        .map((s) => s.site_id)
        .sort(),
    ).toEqual(ids.map((s) => s.site_id).sort());
    for (const shard of shards) expect(shard.length).toBeGreaterThan(400);
  });

  it('keeps the assignment of these ids (a change would reshuffle every lake)', () => {
    expect(
      ['site-0', 'site-1', 'site-2', 'site-3', 'site-4', 'site-5'].map((id) => shardOf(id, 4)),
    ).toMatchInlineSnapshot(`
      [
        0,
        1,
        1,
        2,
        0,
        1,
      ]
    `);
  });

  it('moves only the sites of the removed shard when 4 shards become 3', () => {
    const moved = ids.filter((s) => shardOf(s.site_id, 4) !== shardOf(s.site_id, 3));
    expect(moved.every((s) => shardOf(s.site_id, 4) === 3)).toBe(true);
    expect(moved.length).toBe(inShard(ids, { index: 3, count: 4 }).length);
  });
});

describe('shard settings', () => {
  it('reads --shard, EFSYNC_SHARD, or a Kubernetes completion index with EFSYNC_SHARDS', () => {
    expect(parseShard('1/4', '--shard')).toEqual({ index: 1, count: 4 });
    expect(jobOptions({ shard: '2/3' }, {}).shard).toEqual({ index: 2, count: 3 });
    expect(jobOptions({}, { EFSYNC_SHARD: '0/2' }).shard).toEqual({ index: 0, count: 2 });
    expect(jobOptions({}, { JOB_COMPLETION_INDEX: '3', EFSYNC_SHARDS: '4' }).shard).toEqual({ index: 3, count: 4 });
    expect(jobOptions({}, {}).shard).toBeUndefined();
  });

  it('refuses a shard outside its count, naming where it came from', () => {
    expect(() => parseShard('4/4', '--shard')).toThrow(/--shard: shard index 4 is not below the number of shards 4/);
    expect(() => parseShard('x', '--shard')).toThrow(/--shard: not a shard: "x"/);
    expect(() => shardFromEnv({ JOB_COMPLETION_INDEX: '1' })).toThrow(/EFSYNC_SHARDS is not/);
    expect(() => shardFromEnv({ JOB_COMPLETION_INDEX: '4', EFSYNC_SHARDS: '4' })).toThrow(
      /JOB_COMPLETION_INDEX\/EFSYNC_SHARDS/,
    );
  });
});

describe('a sharded sync', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await emulator({ sites: 6 });
  });
  afterAll(async () => {
    await emu?.close();
  });

  it('writes only the sites of its shard, and the shards together write every site', async () => {
    const dir = tempDir();
    const seen: string[] = [];
    for (const index of [0, 1]) {
      const config = testConfig({ dir, url: emu.url, db: `${dir}/shard-${index}.duckdb` });
      const result = await runSync(config, { shard: { index, count: 2 }, only: ['sites', 'actuals'] });
      expect(result.status).toBe('ok');
      const sites = await query<{ site_id: string }>(
        config.warehouse.path,
        'SELECT DISTINCT site_id FROM actuals UNION SELECT site_id FROM sites',
      );
      for (const { site_id } of sites) expect(shardOf(site_id, 2)).toBe(index);
      seen.push(...sites.map((s) => s.site_id));
    }
    const all = (await clientFor(emu).listSites()).map((s) => s.site_id).sort();
    expect(seen.sort()).toEqual(all);
    expect(all).toHaveLength(6);
  }, 60_000);
});
