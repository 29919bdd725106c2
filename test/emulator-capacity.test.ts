// Capacity uploads: points hold forward, a later upload merges its points into the timeline, a
// delete takes the points of a range out, and the timeline shows in Get Site Capacity,
// capacity_kw_array, the forecast's capacity column and caps the forecasts (zero capacity, zero
// forecast).
import { describe, expect, it } from 'vitest';
import { k1ForFile } from './emulator-support.js';

const k1 = k1ForFile();

async function windSite(): Promise<string> {
  const body = {
    name: 'Capacity test',
    latitude: 55.5,
    longitude: 8.5,
    type: 'wind',
    assets: [{ turbine_type: 'V126/3000', nr_units: 10, hub_height: 120 }],
  };
  return (await k1.send('POST', '/sites', body)).body.site_id;
}

describe('capacity upload', () => {
  it('answers with a message and shows the timeline as segments in capacity_kw_array', async () => {
    const site = await windSite();
    const answer = await k1.send('POST', `/sites/${site}/capacity`, {
      data: [
        { valid_time: '2026-03-30T06:00Z', value: 15000 },
        { valid_time: '2026-03-29T18:00Z', value: 0 },
      ],
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ message: expect.any(String) });
    const { capacity_kw_array } = (await k1.get(`/sites/${site}`)).body;
    expect(capacity_kw_array).toEqual([
      { value: 30000, dateStart: '2026-03-15T00:00:00Z', dateEnd: '2026-03-29T18:00:00Z' },
      { value: 0, dateStart: '2026-03-29T18:00:00Z', dateEnd: '2026-03-30T06:00:00Z' },
      { value: 15000, dateStart: '2026-03-30T06:00:00Z', dateEnd: null },
    ]);
  });

  it('follows the timeline in the forecast capacity column and caps forecasts; zero capacity gives zero', async () => {
    const site = await windSite();
    await k1.send('POST', `/sites/${site}/capacity`, {
      data: [
        { valid_time: '2026-03-29T18:00Z', value: 0 },
        { valid_time: '2026-03-30T06:00Z', value: 1500 },
      ],
    });
    const { body } = await k1.get(`/sites/${site}/forecast`);
    const at = (time: string) => body.valid_time.indexOf(time);
    expect(body.capacity[at('2026-03-29T17:45:00Z')]).toBe(30000);
    expect(body.capacity[at('2026-03-29T18:00:00Z')]).toBe(0);
    expect(body.capacity[at('2026-03-30T05:45:00Z')]).toBe(0);
    expect(body.capacity[at('2026-03-30T06:00:00Z')]).toBe(1500);
    body.forecast.forEach((value: number, i: number) => {
      expect(value).toBeLessThanOrEqual(body.capacity[i]);
    });
    expect(
      body.forecast.slice(at('2026-03-29T18:00:00Z'), at('2026-03-30T06:00:00Z')).every((v: number) => v === 0),
    ).toBe(true);
    expect(body.forecast.slice(at('2026-03-30T06:00:00Z')).some((v: number) => v === 1500)).toBe(true);
    const ai = (await k1.get<any[]>(`/sites/${site}/models`)).body.find((m) => m.name === 'ai');
    const output = (await k1.get(`/models/${ai.id}/output`)).body;
    output.forecast.forEach((value: number, i: number) => {
      expect(value).toBeLessThanOrEqual(output.capacity[i]);
    });
    expect(output.capacity).toContain(0);
  });

  it('merges a later upload into the timeline: its points replace those at the same times, the others stay', async () => {
    const site = await windSite();
    await k1.send('POST', `/sites/${site}/capacity`, {
      data: [
        { valid_time: '2026-04-01T00:00Z', value: 100 },
        { valid_time: '2026-04-05T00:00Z', value: 200 },
      ],
    });
    await k1.send('POST', `/sites/${site}/capacity`, {
      data: [
        { valid_time: '2026-04-03T00:00Z', value: 300 },
        { valid_time: '2026-04-05T00:00Z', value: 250 },
      ],
    });
    const values = (await k1.get(`/sites/${site}`)).body.capacity_kw_array;
    expect(values).toEqual([
      { value: 30000, dateStart: '2026-03-15T00:00:00Z', dateEnd: '2026-04-01T00:00:00Z' },
      { value: 100, dateStart: '2026-04-01T00:00:00Z', dateEnd: '2026-04-03T00:00:00Z' },
      { value: 300, dateStart: '2026-04-03T00:00:00Z', dateEnd: '2026-04-05T00:00:00Z' },
      { value: 250, dateStart: '2026-04-05T00:00:00Z', dateEnd: null },
    ]);
    const timeline = await k1.get(`/sites/${site}/capacity`, {
      freq: '1h',
      start_date: '2026-04-02T23:00Z',
      end_date: '2026-04-03T01:00Z',
    });
    expect(timeline.status).toBe(200);
    expect(timeline.body).toEqual({
      meta: { site_name: 'Capacity test', site_id: site, unit: 'kW' },
      data: {
        valid_time: ['2026-04-02T23:00:00Z', '2026-04-03T00:00:00Z', '2026-04-03T01:00:00Z'],
        value: [100, 300, 300],
      },
    });
    expect((await k1.get(`/sites/${site}/capacity`, { start_date: '2026-04-02T23:00Z' })).status).toBe(400);
  });

  it('deletes the points of a range, both ends included, answering with a message', async () => {
    const site = await windSite();
    await k1.send('POST', `/sites/${site}/capacity`, {
      data: [
        { valid_time: '2026-04-01T00:00Z', value: 100 },
        { valid_time: '2026-04-05T00:00Z', value: 200 },
      ],
    });
    const answer = await k1.send(
      'DELETE',
      `/sites/${site}/capacity?start_date=2026-04-01T00:00Z&end_date=2026-04-05T00:00Z`,
    );
    expect(answer).toMatchObject({ status: 200, body: { message: expect.any(String) } });
    expect((await k1.get(`/sites/${site}`)).body.capacity_kw_array).toEqual([
      { value: 30000, dateStart: '2026-03-15T00:00:00Z', dateEnd: null },
    ]);
    const missing = await k1.send('DELETE', `/sites/${site}/capacity?start_date=2026-04-01T00:00Z`);
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].field).toBe('end_date');
  });

  it('rejects empty data, a valid_time not in YYYY-MM-DDTHH:MMZ and a negative value, naming the field', async () => {
    const site = await windSite();
    const cases: [unknown, string][] = [
      [{ data: [] }, 'data'],
      [{ data: [{ valid_time: '2026-04-01T00:00+01:00', value: 1 }] }, 'data.0.valid_time'],
      [
        {
          data: [
            { valid_time: '2026-04-01T00:00Z', value: 1 },
            { valid_time: '2026-04-01 02:00', value: 1 },
          ],
        },
        'data.1.valid_time',
      ],
      [{ data: [{ valid_time: '2026-04-01T00:00Z', value: -5 }] }, 'data.0.value'],
      [{}, 'data'],
    ];
    for (const [body, field] of cases) {
      const answer = await k1.send('POST', `/sites/${site}/capacity`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.errors[0].field).toBe(field);
    }
    expect((await k1.get(`/sites/${site}`)).body.capacity_kw_array).toHaveLength(1);
  });
});
