// The emulator's account limits (src/emulator/limits.ts): a quota per key answered 429 without
// Retry-After and met again by the next window, and a key revoked after N requests.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { api, startTestEmulator } from './emulator-support.js';

let emulator: Emulator | undefined;

afterEach(async () => {
  vi.useRealTimers();
  await emulator?.close();
  emulator = undefined;
});

describe('a quota', () => {
  it('answers 429 without Retry-After past N requests of a key per window, and serves again in the next', async () => {
    // The windows follow the wall clock, faked here (Date only: the sockets keep their timers) to
    // start just inside a window and then move on to the next one.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.UTC(2026, 10, 1, 12, 0, 0, 1));
    emulator = await startTestEmulator({ quota: { requests: 3, windowMs: 1_000 } });
    const k1 = api(emulator, 'k1');
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await k1.get('/sites'));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    expect(answers[3].headers.get('retry-after')).toBeNull();
    expect(answers[3].body.errors[0].field).toBe('(server)');
    // Another key has its own quota.
    expect((await api(emulator, 'k2').get('/sites')).status).toBe(200);
    vi.setSystemTime(Date.UTC(2026, 10, 1, 12, 0, 1, 1));
    expect((await k1.get('/sites')).status).toBe(200);
    expect(emulator.stats().throttled).toBe(1);
  });
});

describe('a revoked key', () => {
  it('is served N requests, then answered 401 with the error body; setLimits turns it off', async () => {
    emulator = await startTestEmulator({ revokeAfter: 2 });
    const k1 = api(emulator, 'k1');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await k1.get('/sites')).status);
    expect(statuses).toEqual([200, 200, 401, 401]);
    const refused = await k1.get('/sites');
    expect(refused.body).toEqual({ errors: [{ field: 'Authorization', message: 'the API key has been revoked' }] });
    expect(emulator.stats().revoked).toBe(3);
    emulator.setLimits({ revokeAfter: null });
    expect((await k1.get('/sites')).status).toBe(200);
  });
});
