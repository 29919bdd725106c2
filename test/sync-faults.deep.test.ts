// A sync through transient faults (500, 503, 429 with Retry-After, slow answers, cut bodies)
// ends with the same warehouse as a clean one: the client retries, the loader is idempotent.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from './client-support.js';
import { emuForFile, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const served = emuForFile({ sites: 3, slowMs: 400 });

describe('a sync through faultRate 0.15', () => {
  it('ends ok with the same data as a clean sync', async () => {
    const dir = tempDir();
    const clean = testConfig({ dir, url: served.emu.url, db: join(dir, 'clean.duckdb') });
    expect((await runSync(clean)).status).toBe('ok');

    served.emu.setFaults({ faultRate: 0.15 });
    const faulty = testConfig({
      dir,
      url: served.emu.url,
      db: join(dir, 'faulty.duckdb'),
      service: {
        timeouts: { connect: '2s', headers: '150ms', body: '2s' },
        retries: { attempts: 12, base_delay: '5ms', max_delay: '40ms', retry_after_max: '2s' },
      },
    });
    const log = memoryLogger('debug');
    const run = await runSync(faulty, {}, undefined, log.log);
    served.emu.setFaults({ faultRate: 0 });
    const retried = log.lines().filter((line) => line.msg === 'service request' && Number(line.attempt) > 1);
    expect(retried.length, 'requests retried after an injected fault').toBeGreaterThan(0);
    expect(run.failures).toEqual([]);
    expect(run.status).toBe('ok');
    expect(await tableHashes(faulty.warehouse.path)).toEqual(await tableHashes(clean.warehouse.path));
  }, 120_000);
});
