// Injected faults: each kind on the wire (500, 503, 429 with Retry-After, a slow answer, a body
// cut off), the fault and malformed rates (deterministic for a seed, about the share asked),
// and one chosen site's data made malformed for a test.
import { afterEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import type { FaultKind } from '../src/emulator/faults.js';
import { ActualsSeries, ForecastSeries } from '../src/api/schemas.js';
import { API, api, sitesByKind, startTestEmulator } from './emulator-support.js';

const started: Emulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((e) => e.close()));
});

async function emulatorWith(options: Parameters<typeof startTestEmulator>[0]): Promise<Emulator> {
  const emulator = await startTestEmulator(options);
  started.push(emulator);
  return emulator;
}

/** What a request ended as: its status, or 'cut' when the body broke off, or 'timeout'. */
async function outcome(url: string, timeoutMs?: number): Promise<string> {
  try {
    const response = await fetch(url, {
      headers: { authorization: 'k1' },
      ...(timeoutMs ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
    });
    await response.text();
    return String(response.status);
  } catch (error) {
    return (error as Error).name === 'TimeoutError' ? 'timeout' : 'cut';
  }
}

describe('each fault on the wire', () => {
  const forceOnce = (kind: FaultKind) => ({
    faultHook: ({ counter }: { counter: number }) => (counter === 1 ? kind : undefined),
  });

  it('500 and 503 carry the error body', async () => {
    for (const [kind, status] of [
      ['http500', 500],
      ['http503', 503],
    ] as const) {
      const emulator = await emulatorWith(forceOnce(kind));
      const answer = await api(emulator, 'k1').get('/sites');
      expect(answer.status).toBe(status);
      expect(answer.body.errors[0]).toEqual({ field: expect.any(String), message: expect.any(String) });
      expect((await api(emulator, 'k1').get('/sites')).status).toBe(200);
    }
  });

  it('429 says Retry-After: 1 (seconds)', async () => {
    const emulator = await emulatorWith(forceOnce('http429'));
    const answer = await api(emulator, 'k1').get('/sites');
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('1');
  });

  it('a slow answer outlasts a short client timeout, and arrives whole to a patient client', async () => {
    const emulator = await emulatorWith({
      slowMs: 1500,
      faultHook: ({ counter }) => (counter <= 2 ? 'slow' : undefined),
    });
    expect(await outcome(`${emulator.url}${API}/sites`, 200)).toBe('timeout');
    expect(await outcome(`${emulator.url}${API}/sites`)).toBe('200');
  });

  it('a cut body announces more bytes than it sends, then the connection closes', async () => {
    const emulator = await emulatorWith(forceOnce('cut'));
    expect(await outcome(`${emulator.url}${API}/sites`)).toBe('cut');
    expect(await outcome(`${emulator.url}${API}/sites`)).toBe('200');
  });
});

describe('fault rate', () => {
  const run = async () => {
    const emulator = await emulatorWith({ faultRate: 0.2, slowMs: 0 });
    const outcomes: string[] = [];
    for (let i = 0; i < 400; i++) outcomes.push(await outcome(`${emulator.url}${API}/sites`));
    return { outcomes, stats: emulator.stats() };
  };

  it('is deterministic for a seed, about the share asked, and uses every kind', async () => {
    const first = await run();
    const second = await run();
    expect(second.outcomes).toEqual(first.outcomes);
    const faults = Object.values(first.stats.faults).reduce((a, b) => a + b, 0);
    expect(faults / 400).toBeGreaterThan(0.14);
    expect(faults / 400).toBeLessThan(0.26);
    for (const kind of Object.keys(first.stats.faults) as FaultKind[])
      expect(first.stats.faults[kind], kind).toBeGreaterThan(0);
    const seen = (what: string) => first.outcomes.filter((o) => o === what).length;
    expect(seen('500')).toBe(first.stats.faults.http500);
    expect(seen('503')).toBe(first.stats.faults.http503);
    expect(seen('429')).toBe(first.stats.faults.http429);
    expect(seen('cut')).toBe(first.stats.faults.cut);
  });

  it('is off by default', async () => {
    const emulator = await emulatorWith({});
    for (let i = 0; i < 100; i++) expect(await outcome(`${emulator.url}${API}/sites`)).toBe('200');
  });
});

describe('malformed data', () => {
  it('breaks about the share asked of data responses, the same for a seed, with unequal arrays or a missing field', async () => {
    const run = async () => {
      const emulator = await emulatorWith({ malformedRate: 0.25 });
      const client = api(emulator, 'k1');
      const { sites } = await sitesByKind(client);
      const verdicts: string[] = [];
      for (let i = 0; i < 200; i++) {
        const site = sites[i % sites.length];
        const answer = await client.get(`/sites/${site.id}/actual`, {
          start_date: '2026-03-28',
          end_date: '2026-03-29',
        });
        const parsed = ActualsSeries.safeParse(answer.body);
        verdicts.push(parsed.success ? 'ok' : parsed.error.issues[0].message.includes('has') ? 'unequal' : 'missing');
      }
      // Metadata endpoints are never malformed.
      expect((await client.get('/sites')).body).toHaveLength(6);
      return { verdicts, stats: emulator.stats() };
    };
    const first = await run();
    expect((await run()).verdicts).toEqual(first.verdicts);
    const broken = first.verdicts.filter((v) => v !== 'ok').length;
    expect(broken).toBe(first.stats.malformed);
    expect(broken / 200).toBeGreaterThan(0.17);
    expect(broken / 200).toBeLessThan(0.33);
    expect(first.verdicts).toContain('unequal');
    expect(first.verdicts).toContain('missing');
  });

  it('can be forced on one site alone', async () => {
    const emulator = await emulatorWith({});
    const client = api(emulator, 'k1');
    const { sites } = await sitesByKind(client);
    emulator.setFaults({ malformedSites: [sites[1].id] });
    for (const site of sites) {
      const forecast = ForecastSeries.safeParse((await client.get(`/sites/${site.id}/forecast`)).body);
      expect(forecast.success, site.name).toBe(site.id !== sites[1].id);
    }
    const model = (await client.get<any[]>(`/sites/${sites[1].id}/models`)).body[0];
    const output = (await client.get(`/models/${model.id}/output`)).body;
    expect(output.as_of === undefined || output.forecast.length !== output.valid_time.length).toBe(true);
    emulator.setFaults({ malformedSites: [] });
    expect(ForecastSeries.safeParse((await client.get(`/sites/${sites[1].id}/forecast`)).body).success).toBe(true);
  });
});
