// The emulator's vintage switches (#29): issue times with microseconds, a kind of model that
// publishes late, and vintages that always answer 400.
import { CronExpressionParser } from 'cron-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issuesBetween } from '../src/emulator/forecasts.js';
import type { Emulator } from '../src/emulator/server.js';
import type { ModelRecord, SiteRecord } from '../src/emulator/store.js';
import { parseInstant } from '../src/time.js';
import { api, startTestEmulator, type Api } from './emulator-support.js';

let emulator: Emulator;
let k1: Api;
let siteId: string;
let physical: string;

beforeAll(async () => {
  emulator = await startTestEmulator({
    sites: 1,
    issueTiming: { fractional: true, delays: { physical: 20 * 60_000 } },
  });
  k1 = api(emulator, 'k1');
  siteId = (await k1.get<any[]>('/sites')).body[0].site_id;
  const models = (await k1.get<any[]>(`/sites/${siteId}/models`)).body;
  physical = models.find((model) => model.name === 'physical').id;
});
afterAll(() => emulator.close());

describe('fractional issue times', () => {
  it('lists issue times with microseconds, a few seconds after the fire', async () => {
    const updates = (await k1.get<string[]>(`/sites/${siteId}/forecast/updates`)).body;
    expect(updates.length).toBeGreaterThan(10);
    for (const text of updates) expect(text).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:0[1-6](\.\d{1,6})?Z$/);
    expect(updates.some((text) => /\.\d{4,6}Z$/.test(text))).toBe(true);
  });

  it('answers an as_of given to the microsecond with that vintage, and one given to the second with the one before', async () => {
    const updates = (await k1.get<string[]>(`/sites/${siteId}/forecast/updates`)).body;
    const issue = updates.at(-1) as string;
    const exact = (await k1.get(`/sites/${siteId}/forecast`, { as_of: issue, start_date: issue })).body;
    expect(exact.update_time[0]).toBe(issue);
    const seconds = `${issue.slice(0, 19)}Z`;
    const early = (await k1.get(`/sites/${siteId}/forecast`, { as_of: seconds, start_date: issue })).body;
    expect(parseInstant(early.update_time[0])).toBeLessThan(parseInstant(issue));
  });
});

describe('late publication', () => {
  it("issues the late kind's vintages its delay after the cron fire", async () => {
    const output = (await k1.get(`/models/${physical}/output`, { as_of: '2026-03-29T06:10:00Z' })).body;
    // physical fires at 00:00, 06:00, ...: at 06:10 the 06:00 vintage is not out yet (06:20).
    expect(output.as_of).toMatch(/^2026-03-29T00:20:0/);
    const later = (await k1.get(`/models/${physical}/output`, { as_of: '2026-03-29T06:30:00Z' })).body;
    expect(later.as_of).toMatch(/^2026-03-29T06:20:0/);
  });
});

describe('failing vintages', () => {
  it('answer 400 for the switched site as_of and model vintage, and only for them', async () => {
    const updates = (await k1.get<string[]>(`/sites/${siteId}/forecast/updates`)).body;
    const output = (await k1.get(`/models/${physical}/output`, { as_of: '2026-03-29T06:30:00Z' })).body;
    emulator.setFaults({ failingVintages: [`${siteId}@${updates.at(-2)}`, `${physical}@${output.as_of}`] });
    try {
      expect((await k1.get(`/sites/${siteId}/forecast`, { as_of: updates.at(-2) as string })).status).toBe(400);
      expect((await k1.get(`/sites/${siteId}/forecast`, { as_of: updates.at(-1) as string })).status).toBe(200);
      const failed = await k1.get(`/models/${physical}/output`, { as_of: '2026-03-29T07:00:00Z' });
      expect(failed.status).toBe(400);
      expect(failed.body.errors[0].field).toBe('as_of');
      expect((await k1.get(`/models/${physical}/output`, { as_of: '2026-03-29T06:10:00Z' })).status).toBe(200);
    } finally {
      emulator.setFaults({ failingVintages: [] });
    }
  });
});

it('keeps the default issue times at the cron fire without the switches', async () => {
  const plain = await startTestEmulator({ sites: 1 });
  try {
    const k = api(plain, 'k1');
    const site = (await k.get<any[]>('/sites')).body[0].site_id;
    const updates = (await k.get<string[]>(`/sites/${site}/forecast/updates`)).body;
    for (const text of updates) expect(text).toMatch(/:00Z$/);
  } finally {
    await plain.close();
  }
});

describe('issue times over a year', () => {
  // issuesBetween reuses an every-day schedule's times of day: it must list what walking the
  // cron expression does, across a leap day, and for a schedule that depends on the weekday.
  const walk = (schedule: string, from: number, to: number) => {
    const cron = CronExpressionParser.parse(schedule, { currentDate: from - 1, tz: 'UTC' });
    const out: number[] = [];
    for (let next = cron.next().getTime(); next <= to; next = cron.next().getTime()) out.push(next);
    return out;
  };
  const from = Date.UTC(2027, 11, 30, 7, 10);
  const to = Date.UTC(2028, 2, 2, 5);
  const site = { dataStart: from + 48 * 3_600_000 } as SiteRecord;
  for (const schedule of ['30 */3 * * *', '0 15 4,16 * * *', '0 6 * * 1-5']) {
    it(`lists the fires of '${schedule}'`, () => {
      const model = { id: 'm', schedule, horizonMs: 48 * 3_600_000 } as ModelRecord;
      const listed = issuesBetween(model, site, from, to, to);
      expect(listed.length).toBeGreaterThan(40);
      expect(listed).toEqual(walk(schedule, from, to));
    });
  }
});
