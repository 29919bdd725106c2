// Models over HTTP: what creating a site creates, the list filters, and the update-model
// priority rules (strict, auto_increment, swap) and serving switch.
import { describe, expect, it } from 'vitest';
import { CronExpressionParser } from 'cron-parser';
import { k1ForFile, sitesByKind } from './emulator-support.js';

const k1 = k1ForFile();

/** A fresh site with ai, physical and three quantile models, so each test owns its priorities. */
async function freshSite(): Promise<string> {
  const body = {
    name: 'Priority playground',
    latitude: 48.1,
    longitude: 11.6,
    type: 'solar',
    settings: { quantileModels: [0.1, 0.5, 0.9] },
    assets: [{ mount: 'fixed', capacity: 500, tilt: 25, azimuth: 180 }],
  };
  return (await k1.send('POST', '/sites', body)).body.site_id;
}

async function priorities(siteId: string): Promise<Record<string, number>> {
  const models = (await k1.get<any[]>(`/sites/${siteId}/models`)).body;
  return Object.fromEntries(models.map((m) => [m.name, m.priority]));
}

async function modelId(siteId: string, name: string): Promise<string> {
  return (await k1.get<any[]>(`/sites/${siteId}/models`)).body.find((m) => m.name === name).id;
}

describe('list site models', () => {
  it('gives every site a physical and an ai model with cron schedules, training states and unique priorities', async () => {
    const { sites } = await sitesByKind(k1);
    for (const site of sites) {
      const models = (await k1.get<any[]>(`/sites/${site.id}/models`)).body;
      expect(models.map((m) => m.label)).toEqual(expect.arrayContaining(['ai', 'physical']));
      expect(new Set(models.map((m) => m.priority)).size).toBe(models.length);
      for (const model of models) {
        expect(model.schedule.type).toBe('cron');
        expect(() => CronExpressionParser.parse(model.schedule.value)).not.toThrow();
        expect(model.state.map((s: any) => s.state)).toEqual(['queued', 'training', 'complete']);
        const times = model.state.map((s: any) => Date.parse(s.timestamp_utc));
        expect([...times].sort((a, b) => a - b)).toEqual(times);
        expect(Number.isInteger(model.version)).toBe(true);
        expect(model).not.toHaveProperty('serving_active');
      }
    }
  });

  it('names quantile models quantile_p<percent> on the demo fixed solar site', async () => {
    const { solarFixed } = await sitesByKind(k1);
    const names = (await k1.get<any[]>(`/sites/${solarFixed.id}/models`)).body.map((m) => m.name);
    expect(names).toEqual(expect.arrayContaining(['quantile_p10', 'quantile_p50', 'quantile_p90']));
  });

  it('filters by model_type and adds serving_active only when extra asks', async () => {
    const { solarFixed } = await sitesByKind(k1);
    const physical = (await k1.get<any[]>(`/sites/${solarFixed.id}/models`, { model_type: 'physical' })).body;
    expect(physical.map((m) => m.label)).toEqual(['physical']);
    const ai = (await k1.get<any[]>(`/sites/${solarFixed.id}/models`, { model_type: 'ai' })).body;
    expect(ai.every((m) => m.label === 'ai')).toBe(true);
    expect(ai.length).toBe(4);
    const withServing = (await k1.get<any[]>(`/sites/${solarFixed.id}/models`, { extra: 'other,serving_active' })).body;
    expect(withServing.every((m) => m.serving_active === true)).toBe(true);
  });

  it('rejects an unknown model_type with 400 naming it', async () => {
    const { solarFixed } = await sitesByKind(k1);
    const answer = await k1.get(`/sites/${solarFixed.id}/models`, { model_type: 'statistical' });
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].field).toBe('model_type');
  });
});

describe('update model', () => {
  it('strict (the default) refuses a taken priority with 409 and changes nothing', async () => {
    const site = await freshSite();
    const before = await priorities(site);
    const answer = await k1.send('PUT', `/models/${await modelId(site, 'physical')}`, {
      settings: { serving_priority: before.ai },
    });
    expect(answer.status).toBe(409);
    expect(answer.body.errors[0].field).toBe('settings.serving_priority');
    expect(await priorities(site)).toEqual(before);
    const explicit = await k1.send('PUT', `/models/${await modelId(site, 'physical')}`, {
      settings: { serving_priority: before.ai },
      priority_conflict_resolution: 'strict',
    });
    expect(explicit.status).toBe(409);
  });

  it('strict accepts a free priority, answers a message, and the list shows the new priority', async () => {
    const site = await freshSite();
    const answer = await k1.send('PUT', `/models/${await modelId(site, 'physical')}`, {
      settings: { serving_priority: 40 },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ message: 'Model updated successfully' });
    expect((await priorities(site)).physical).toBe(40);
  });

  it('auto_increment shifts the holder and every model it then collides with up by one', async () => {
    const site = await freshSite();
    expect(await priorities(site)).toEqual({ ai: 1, physical: 2, quantile_p10: 3, quantile_p50: 4, quantile_p90: 5 });
    const answer = await k1.send('PUT', `/models/${await modelId(site, 'quantile_p90')}`, {
      settings: { serving_priority: 2 },
      priority_conflict_resolution: 'auto_increment',
    });
    expect(answer.status).toBe(200);
    expect(await priorities(site)).toEqual({ ai: 1, quantile_p90: 2, physical: 3, quantile_p10: 4, quantile_p50: 5 });
  });

  it('swap exchanges the priorities of the target and the holder', async () => {
    const site = await freshSite();
    await k1.send('PUT', `/models/${await modelId(site, 'quantile_p50')}`, {
      settings: { serving_priority: 1 },
      priority_conflict_resolution: 'swap',
    });
    expect(await priorities(site)).toEqual({ quantile_p50: 1, physical: 2, quantile_p10: 3, ai: 4, quantile_p90: 5 });
  });

  it('switches serving_active, which the list then shows', async () => {
    const site = await freshSite();
    const id = await modelId(site, 'ai');
    const answer = await k1.send('PUT', `/models/${id}`, { settings: { serving_active: false } });
    expect(answer.status).toBe(200);
    const listed = (await k1.get<any[]>(`/sites/${site}/models`, { extra: 'serving_active' })).body.find(
      (m) => m.id === id,
    );
    expect(listed.serving_active).toBe(false);
  });

  it('rejects an unknown conflict resolution, an unknown setting and a negative priority with 400 naming the field', async () => {
    const id = await modelId(await freshSite(), 'ai');
    const cases: [unknown, string][] = [
      [{ settings: { serving_priority: 3 }, priority_conflict_resolution: 'bump' }, 'priority_conflict_resolution'],
      [{ settings: { serving_priority: -1 } }, 'settings.serving_priority'],
      [{ settings: { colour: 'red' } }, 'settings.colour'],
    ];
    for (const [body, field] of cases) {
      const answer = await k1.send('PUT', `/models/${id}`, body);
      expect(answer.status).toBe(400);
      expect(answer.body.errors[0].field).toBe(field);
    }
  });
});
