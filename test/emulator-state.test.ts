// The state file: accounts, sites (demo and created), models with their serving settings and
// capacity timelines survive a restart; without a file, a restart starts afresh.
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { api, startTestEmulator } from './emulator-support.js';

describe('state file', () => {
  it('keeps sites, models and capacity across a restart, written atomically, without the keys', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'efsync-emulator-state-'));
    const statePath = join(folder, 'state.json');
    const first = await startTestEmulator({ statePath });
    const k1 = api(first, 'k1');
    const created = (
      await k1.send('POST', '/sites', {
        name: 'Kept',
        latitude: 60,
        longitude: 15,
        type: 'load',
        settings: { forecast_max_value: 700 },
      })
    ).body.site_id;
    await k1.send('POST', `/sites/${created}/capacity`, { data: [{ valid_time: '2026-04-01T00:00Z', value: 350 }] });
    const ai = (await k1.get<any[]>(`/sites/${created}/models`)).body.find((m) => m.name === 'ai');
    await k1.send('PUT', `/models/${ai.id}`, { settings: { serving_active: false, serving_priority: 9 } });
    const sitesBefore = (await k1.get('/sites')).body;
    const modelsBefore = (await k1.get(`/sites/${created}/models`, { extra: 'serving_active' })).body;
    const forecastBefore = (await k1.get(`/sites/${created}/forecast`)).body;
    await first.close();

    expect(readdirSync(folder)).toEqual(['state.json']);
    const text = readFileSync(statePath, 'utf8');
    expect(text).not.toContain('"k1"');

    const second = await startTestEmulator({ statePath });
    const again = api(second, 'k1');
    expect((await again.get('/sites')).body).toEqual(sitesBefore);
    expect((await again.get(`/sites/${created}/models`, { extra: 'serving_active' })).body).toEqual(modelsBefore);
    expect((await again.get(`/sites/${created}/forecast`)).body).toEqual(forecastBefore);
    // A new site after the restart gets a new id, not one of the earlier ones.
    const next = (await again.send('POST', '/sites', { name: 'Next', latitude: 60, longitude: 15, type: 'load' })).body
      .site_id;
    expect(sitesBefore.map((s: any) => s.id)).not.toContain(next);
    expect((await again.get<any[]>('/sites')).body).toHaveLength(sitesBefore.length + 1);
    await second.close();
  });

  it('keeps nothing without a state file', async () => {
    const first = await startTestEmulator();
    await api(first, 'k1').send('POST', '/sites', { name: 'Gone', latitude: 60, longitude: 15, type: 'load' });
    await first.close();
    const second = await startTestEmulator();
    expect((await api(second, 'k1').get<any[]>('/sites')).body.map((s) => s.name)).not.toContain('Gone');
    await second.close();
  });
});
