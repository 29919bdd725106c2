// Forecasts, model outputs and actuals over HTTP: ranges, vintages and as_of, stitching by
// priority with fallback, fill, normalisation, time zones across a DST day, provisional actuals
// that are revised later, and the query errors that name their field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { api, NOON, sitesByKind, startTestEmulator, type Api } from './emulator-support.js';

const HOUR = 3_600_000;
const QUARTER = 900_000;
let clock = NOON;
let emulator: Emulator;
let k1: Api;
let kinds: Awaited<ReturnType<typeof sitesByKind>>;

beforeAll(async () => {
  emulator = await startTestEmulator({ now: () => clock });
  k1 = api(emulator, 'k1');
  kinds = await sitesByKind(k1);
});
afterAll(() => emulator.close());

async function models(siteId: string): Promise<any[]> {
  return (await k1.get<any[]>(`/sites/${siteId}/models`, { extra: 'serving_active' })).body;
}

const times = (texts: string[]) => texts.map((text) => Date.parse(text));

describe('site forecast', () => {
  it('covers [today 00:00 UTC, +2 days] by default, both ends included, in 15-minute steps with equal columns', async () => {
    const { body, status } = await k1.get(`/sites/${kinds.solarFixed.id}/forecast`);
    expect(status).toBe(200);
    expect(body.valid_time).toHaveLength(193);
    expect(body.valid_time[0]).toBe('2026-03-29T00:00:00Z');
    expect(body.valid_time.at(-1)).toBe('2026-03-31T00:00:00Z');
    for (const column of ['forecast', 'capacity', 'model_name', 'model_version', 'update_time']) {
      expect(body[column], column).toHaveLength(193);
    }
    // Interval-beginning: a vintage issued at I forecasts the quarter hours from the one beginning at I.
    const valid = times(body.valid_time),
      issued = times(body.update_time);
    for (let i = 0; i < valid.length; i++) {
      expect(issued[i]).toBeLessThanOrEqual(valid[i]);
      expect(issued[i]).toBeLessThanOrEqual(NOON);
    }
  });

  it("is stitched by priority and falls back to the next model beyond the first one's horizon", async () => {
    const site = kinds.wind.id;
    const { body } = await k1.get(`/sites/${site}/forecast`, {
      start_date: '2026-03-29T12:00Z',
      end_date: '2026-04-01T12:00Z',
    });
    // ai (priority 1) issued last at 09:30 with a 48 h horizon, the quarter hours [09:30, +48 h);
    // physical (priority 2) at 12:00 with 72 h.
    const names = body.model_name as string[];
    expect(names[0]).toBe('ai');
    expect(names.at(-1)).toBe('physical');
    const lastAi = names.lastIndexOf('ai');
    expect(body.valid_time[lastAi]).toBe('2026-03-31T09:15:00Z');
    expect(new Set(names.slice(lastAi + 1))).toEqual(new Set(['physical']));
  });

  it('falls back to the next model when the priority-1 model is deactivated', async () => {
    const site = kinds.load.id;
    const first = (await models(site)).find((m) => m.priority === 1);
    const before = (await k1.get(`/sites/${site}/forecast`)).body;
    expect(new Set(before.model_name)).toEqual(new Set([first.name]));
    await k1.send('PUT', `/models/${first.id}`, { settings: { serving_active: false } });
    const after = (await k1.get(`/sites/${site}/forecast`)).body;
    expect(after.model_name).not.toContain(first.name);
    expect(after.valid_time).toEqual(before.valid_time);
    expect(after.forecast).not.toEqual(before.forecast);
    await k1.send('PUT', `/models/${first.id}`, { settings: { serving_active: true } });
  });

  it('answers as known at as_of: older issues, other values', async () => {
    const site = kinds.solarTracking.id;
    const query = { start_date: '2026-03-30T00:00Z', end_date: '2026-03-31T00:00Z' };
    const now = (await k1.get(`/sites/${site}/forecast`, query)).body;
    const then = (await k1.get(`/sites/${site}/forecast`, { ...query, as_of: '2026-03-28T23:00:00+00:00' })).body;
    expect(Math.max(...times(then.update_time))).toBeLessThanOrEqual(Date.parse('2026-03-28T23:00Z'));
    expect(Math.min(...times(now.update_time))).toBeGreaterThan(Date.parse('2026-03-28T23:00Z'));
    expect(then.forecast).not.toEqual(now.forecast);
  });

  it('serves one model with model_id, and shares of capacity with return_normalized', async () => {
    const site = kinds.solarFixed.id;
    const physical = (await models(site)).find((m) => m.name === 'physical');
    const one = (await k1.get(`/sites/${site}/forecast`, { model_id: physical.id })).body;
    expect(new Set(one.model_name)).toEqual(new Set(['physical']));
    const kw = (await k1.get(`/sites/${site}/forecast`)).body;
    const shares = (await k1.get(`/sites/${site}/forecast`, { return_normalized: 'true' })).body;
    for (let i = 0; i < kw.forecast.length; i++) {
      expect(shares.forecast[i]).toBeCloseTo(kw.forecast[i] / kw.capacity[i], 4);
    }
    expect(Math.max(...shares.forecast)).toBeLessThanOrEqual(1);
  });

  it('gives different errors per model, growing with lead time', async () => {
    const site = kinds.wind.id;
    const truth = (
      await k1.get(`/sites/${site}/actual`, { start_date: '2026-03-15T00:00Z', end_date: '2026-03-29T00:00Z' })
    ).body;
    const actual = new Map<string, number>(truth.valid_time.map((t: string, i: number) => [t, truth.value[i]]));
    const errorAt = async (modelId: string, asOf: string) => {
      const output = (
        await k1.get(`/models/${modelId}/output`, { as_of: asOf, start_date: asOf, end_date: '2026-03-29T00:00Z' })
      ).body;
      const abs = output.valid_time.map((t: string, i: number) =>
        actual.has(t) && actual.get(t) !== null ? Math.abs(output.forecast[i] - (actual.get(t) as number)) : NaN,
      );
      const mean = (values: number[]) =>
        values.filter((v) => !Number.isNaN(v)).reduce((s, v) => s + v, 0) /
        values.filter((v) => !Number.isNaN(v)).length;
      return { near: mean(abs.slice(0, 24)), far: mean(abs.slice(-48)), all: output.forecast as number[] };
    };
    const [ai, physical] = await Promise.all(
      ['ai', 'physical'].map(async (name) => (await models(site)).find((m) => m.name === name)),
    );
    let nearSum = 0,
      farSum = 0;
    for (const day of ['16', '18', '20', '22', '24']) {
      const e = await errorAt(ai.id, `2026-03-${day}T00:00Z`);
      nearSum += e.near;
      farSum += Number.isNaN(e.far) ? 0 : e.far;
      expect((await errorAt(physical.id, `2026-03-${day}T00:00Z`)).all.slice(0, 100)).not.toEqual(e.all.slice(0, 100));
    }
    expect(farSum).toBeGreaterThan(nearSum);
  });

  it('keeps quantile models ordered: p10 <= p50 <= p90', async () => {
    const site = kinds.solarFixed.id;
    const byName = Object.fromEntries((await models(site)).map((m) => [m.name, m.id]));
    const [p10, p50, p90] = await Promise.all(
      ['quantile_p10', 'quantile_p50', 'quantile_p90'].map(
        async (name) => (await k1.get(`/models/${byName[name]}/output`)).body.forecast as number[],
      ),
    );
    expect(p10.length).toBeGreaterThan(100);
    for (let i = 0; i < p10.length; i++) {
      expect(p10[i]).toBeLessThanOrEqual(p50[i]);
      expect(p50[i]).toBeLessThanOrEqual(p90[i]);
    }
    expect(p90.reduce((s, v) => s + v, 0)).toBeGreaterThan(p10.reduce((s, v) => s + v, 0));
  });
});

describe('model resolution', () => {
  it('serves hourly forecasts and outputs to a site whose model_resolution is 1h; actuals stay 15-minute', async () => {
    const body = {
      name: 'Hourly',
      latitude: 52.52,
      longitude: 13.4,
      type: 'solar',
      settings: { model_resolution: '1h' },
      assets: [{ mount: 'fixed', capacity: 800, tilt: 35, azimuth: 180 }],
    };
    const site = (await k1.send('POST', '/sites', body)).body.site_id;
    const forecast = (await k1.get(`/sites/${site}/forecast`)).body;
    expect(forecast.valid_time).toHaveLength(49);
    expect(forecast.valid_time.slice(0, 2)).toEqual(['2026-03-29T00:00:00Z', '2026-03-29T01:00:00Z']);
    expect(forecast.valid_time.at(-1)).toBe('2026-03-31T00:00:00Z');
    expect(Math.max(...forecast.forecast)).toBeGreaterThan(0);
    expect(Math.max(...forecast.forecast)).toBeLessThanOrEqual(800);
    const ai = (await models(site)).find((m) => m.name === 'ai');
    const output = (await k1.get(`/models/${ai.id}/output`)).body;
    expect(output.valid_time[0]).toBe('2026-03-29T10:00:00Z');
    const actuals = (await k1.get(`/sites/${site}/actual`, { start_date: '2026-03-28', end_date: '2026-03-28T23:45Z' }))
      .body;
    expect(actuals.valid_time).toHaveLength(96);
    expect(actuals.valid_time.slice(0, 2)).toEqual(['2026-03-28T00:00:00Z', '2026-03-28T00:15:00Z']);
  });
});

describe('model output', () => {
  it('answers one vintage, the latest issue at or before as_of, and names it in as_of', async () => {
    const ai = (await models(kinds.wind.id)).find((m) => m.name === 'ai');
    const latest = (await k1.get(`/models/${ai.id}/output`)).body;
    expect(latest).toMatchObject({
      model_id: ai.id,
      model_name: 'ai',
      model_label: 'ai',
      model_version: 1,
      priority: ai.priority,
      as_of: '2026-03-29T09:30:00Z',
    });
    expect(latest.valid_time[0]).toBe('2026-03-29T09:30:00Z');
    expect(latest.valid_time.at(-1)).toBe('2026-03-31T00:00:00Z');
    const older = (await k1.get(`/models/${ai.id}/output`, { as_of: '2026-03-29T05:00:00Z' })).body;
    expect(older.as_of).toBe('2026-03-29T03:30:00Z');
    expect(older.valid_time[0]).toBe('2026-03-29T03:30:00Z');
    expect(older.forecast.length).toBe(older.valid_time.length);
    expect(older.capacity.length).toBe(older.valid_time.length);
  });

  it('answers as_of null and empty columns before the model issued anything (as_of is date-time | null)', async () => {
    const ai = (await models(kinds.wind.id)).find((m) => m.name === 'ai');
    const none = (await k1.get(`/models/${ai.id}/output`, { as_of: '2026-01-01T00:00:00Z' })).body;
    expect(none).toMatchObject({ as_of: null, forecast: [], valid_time: [], capacity: [] });
  });

  it('fills earlier valid times from earlier vintages with fill=auto', async () => {
    const ai = (await models(kinds.wind.id)).find((m) => m.name === 'ai');
    const alone = (await k1.get(`/models/${ai.id}/output`, { fill: 'disabled' })).body;
    const filled = (await k1.get(`/models/${ai.id}/output`, { fill: 'auto' })).body;
    expect(filled.as_of).toBe(alone.as_of);
    expect(filled.valid_time[0]).toBe('2026-03-29T00:00:00Z');
    expect(filled.valid_time.slice(-alone.valid_time.length)).toEqual(alone.valid_time);
    expect(filled.forecast.slice(-alone.forecast.length)).toEqual(alone.forecast);
  });

  it('serves the clear-sky power of a solar site, at least the forecast', async () => {
    const ai = (await models(kinds.solarFixed.id)).find((m) => m.name === 'ai');
    const forecast = (await k1.get(`/models/${ai.id}/output`)).body.forecast as number[];
    const clear = (await k1.get(`/models/${ai.id}/output`, { output_type: 'clearsky' })).body.forecast as number[];
    clear.forEach((value, i) => {
      expect(value).toBeGreaterThanOrEqual(forecast[i]);
    });
  });
});

describe('actuals', () => {
  it('needs start_date and end_date, and stops at the last quarter hour that has ended', async () => {
    const site = kinds.load.id;
    const missing = await k1.get(`/sites/${site}/actual`, { start_date: '2026-03-28' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].field).toBe('end_date');
    expect((await k1.get(`/sites/${site}/actual`, { end_date: '2026-03-28' })).body.errors[0].field).toBe('start_date');
    const { body } = await k1.get(`/sites/${site}/actual`, {
      start_date: '2026-03-29T00:00Z',
      end_date: '2026-03-30T00:00Z',
    });
    expect(body.valid_time[0]).toBe('2026-03-29T00:00:00Z');
    // At 12:00 the quarter hour [11:45, 12:00) has ended, [12:00, 12:15) has not.
    expect(body.valid_time.at(-1)).toBe('2026-03-29T11:45:00Z');
    expect(body.value).toHaveLength(body.valid_time.length);
  });

  it('revises provisional values of the last hours once they are older', async () => {
    const site = kinds.wind.id;
    const query = { start_date: '2026-03-29T06:00Z', end_date: '2026-03-29T11:45Z' };
    const first = (await k1.get(`/sites/${site}/actual`, query)).body;
    clock = NOON + 6 * HOUR;
    const later = (await k1.get(`/sites/${site}/actual`, query)).body;
    clock = NOON;
    expect(later.valid_time).toEqual(first.valid_time);
    const changed = first.valid_time.filter((_: string, i: number) => first.value[i] !== later.value[i]);
    expect(changed.length).toBeGreaterThan(0);
    // Only the quarter hours that had ended less than three hours before the first read were provisional.
    expect(Math.min(...times(changed)) + QUARTER).toBeGreaterThan(NOON - 3 * HOUR);
  });
});

describe('time zones', () => {
  it('answers Europe/Stockholm with +01:00 before and +02:00 after the switch on 2026-03-29', async () => {
    const site = kinds.solarFixed.id;
    const { body } = await k1.get(`/sites/${site}/actual`, {
      start_date: '2026-03-28T23:00:00Z',
      end_date: '2026-03-29T02:00:00Z',
      tz: 'Europe/Stockholm',
    });
    expect(body.valid_time[0]).toBe('2026-03-29T00:00:00+01:00');
    // 01:00 UTC is 02:00 in winter time and 03:00 in summer time: the clocks jump at that instant.
    expect(body.valid_time).toContain('2026-03-29T01:45:00+01:00');
    expect(body.valid_time).not.toContain('2026-03-29T02:00:00+01:00');
    expect(body.valid_time).toContain('2026-03-29T03:00:00+02:00');
    expect(body.valid_time.at(-1)).toBe('2026-03-29T04:00:00+02:00');
    const utc = (
      await k1.get(`/sites/${site}/actual`, { start_date: '2026-03-28T23:00:00Z', end_date: '2026-03-29T02:00:00Z' })
    ).body;
    expect(times(body.valid_time)).toEqual(times(utc.valid_time));
    const forecast = (await k1.get(`/sites/${site}/forecast`, { tz: 'Europe/Stockholm' })).body;
    expect(forecast.valid_time[0]).toBe('2026-03-29T01:00:00+01:00');
    expect(forecast.update_time[0]).toMatch(/\+0[12]:00$/);
    const ai = (await models(site)).find((m) => m.name === 'ai');
    expect((await k1.get(`/models/${ai.id}/output`, { tz: 'Europe/Stockholm' })).body.as_of).toBe(
      '2026-03-29T11:30:00+02:00',
    );
  });
});

describe('query errors', () => {
  it('name the field: a bad date, a bad tz, a huge range, an end before the start', async () => {
    const site = kinds.solarFixed.id;
    const ai = (await models(site)).find((m) => m.name === 'ai');
    const cases: [string, Record<string, string>, string][] = [
      [`/sites/${site}/forecast`, { start_date: 'yesterday' }, 'start_date'],
      [`/sites/${site}/forecast`, { as_of: '2026-02-30T00:00Z' }, 'as_of'],
      [`/sites/${site}/forecast`, { tz: 'Mars/Olympus' }, 'tz'],
      [`/sites/${site}/forecast`, { start_date: '2025-01-01', end_date: '2026-03-01' }, 'end_date'],
      [`/sites/${site}/forecast`, { start_date: '2026-03-02', end_date: '2026-03-01' }, 'end_date'],
      [`/sites/${site}/forecast`, { return_normalized: 'yes' }, 'return_normalized'],
      [`/sites/${site}/actual`, { start_date: '2026-03-01', end_date: '03/02/2026' }, 'end_date'],
      [`/models/${ai.id}/output`, { fill: 'sometimes' }, 'fill'],
      [`/models/${ai.id}/output`, { output_type: 'ensemble' }, 'output_type'],
      [`/models/${ai.id}/output`, { start_date: '2026-13-01' }, 'start_date'],
    ];
    for (const [path, query, field] of cases) {
      const answer = await k1.get(path, query);
      expect(answer.status, `${path} ${JSON.stringify(query)}`).toBe(400);
      expect(answer.body.errors[0].field, `${path} ${JSON.stringify(query)}`).toBe(field);
    }
  });

  it('accepts dates with +0000, +00:00, Z and no time', async () => {
    const site = kinds.load.id;
    const forms = ['2026-03-28T00:00:00+0000', '2026-03-28T00:00:00+00:00', '2026-03-28T00:00Z', '2026-03-28'];
    const answers = await Promise.all(
      forms.map((start) => k1.get(`/sites/${site}/actual`, { start_date: start, end_date: '2026-03-28T06:00:00Z' })),
    );
    for (const answer of answers) expect(answer.body).toEqual(answers[0].body);
    // Both ends included: 00:00 to 06:00.
    expect(answers[0].body.valid_time).toHaveLength(25);
    expect(answers[0].body.valid_time.at(-1)).toBe('2026-03-28T06:00:00Z');
  });
});
