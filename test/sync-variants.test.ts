// The service answering with a variant its public pages document (docs/interface-assumptions.md):
// the sync takes it, lands every row, and counts what it filled in. A malformed item (a listed
// site, a model, one output vintage) fails alone: recorded with its field path, exit 1, the rest lands.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import type { SiteResponse } from '../src/api/schemas.js';
import { planCapacity } from '../src/capacity/plan.js';
import type { Emulator } from '../src/emulator/server.js';
import { API_KEY, clientFor, emulator, query, runSync, tempDir, testConfig } from './sync-support.js';
import { endpointOf, variantProxy, type Answer, type Rewrite } from './variant-proxy.js';
import { writeFileSync, mkdirSync } from 'node:fs';

type Json = Record<string, unknown>;

let emu: Emulator;
let sites: SiteResponse[];
let firstModel: string;

beforeAll(async () => {
  emu = await emulator({ sites: 4 });
  const client = clientFor(emu);
  sites = [...(await client.listSites())].sort((a, b) => (a.site_id < b.site_id ? -1 : 1));
  firstModel = (await client.listSiteModels(sites[0].site_id))[0].id;
  await client.close();
});

afterAll(async () => {
  await emu?.close();
});

/** Rewrites the JSON body of answers to `endpoint` (see endpointOf) with `change`. */
function on(endpoint: string, change: (body: unknown, path: string) => unknown): Rewrite {
  return ({ path }, answer) =>
    endpointOf(path) === endpoint && answer.status === 200
      ? { status: 200, body: change(answer.body, path) }
      : undefined;
}

function both(...rewrites: Rewrite[]): Rewrite {
  return (request, answer) =>
    rewrites.reduce<Answer | undefined>(
      (current, rewrite) => rewrite(request, current ?? answer) ?? current,
      undefined,
    );
}

const eachSite = (change: (site: Json) => Json) => (body: unknown) => (body as Json[]).map(change);
const dropKey = (key: string) => (body: unknown) => {
  const { [key]: _dropped, ...rest } = body as Json;
  return rest;
};
const withExtra = (body: unknown): unknown => {
  if (Array.isArray(body)) return body.map(withExtra);
  return body !== null && typeof body === 'object'
    ? { ...body, added_by_service: { note: 'a key no page shows' } }
    : body;
};

async function syncThrough(rewrite: Rewrite) {
  const proxy = await variantProxy(emu.url, rewrite);
  try {
    const dir = tempDir();
    const config = testConfig({ dir, url: proxy.url });
    const run = await runSync(config);
    return { run, db: config.warehouse.path };
  } finally {
    await proxy.close();
  }
}

async function counts(db: string): Promise<Record<string, number>> {
  const tables = ['sites', 'site_assets', 'site_capacity', 'models', 'forecasts', 'model_outputs', 'actuals'];
  const rows = await query<{ name: string; n: bigint }>(
    db,
    tables.map((t) => `SELECT '${t}' AS name, count(*) AS n FROM ${t}`).join(' UNION ALL '),
  );
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.n)]));
}

async function defaulted(db: string, runId: string): Promise<Record<string, number>> {
  const [row] = await query<{ defaulted: string | null }>(
    db,
    'SELECT defaulted::VARCHAR AS defaulted FROM runs WHERE run_id = $1',
    [runId],
  );
  return row.defaulted === null ? {} : JSON.parse(row.defaulted);
}

describe('a documented variant loses nothing', () => {
  const variants: [string, () => Rewrite, (db: string, filled: Record<string, number>) => Promise<void>][] = [
    [
      'assets: null (List Sites types it PVAsset[] | null)',
      () =>
        both(
          on(
            'sites',
            eachSite((site) => (site.site_id === sites[0].site_id ? { ...site, assets: null } : site)),
          ),
          on('site', (site) => ({ ...(site as Json), assets: null })),
        ),
      async (db, filled) => {
        expect(filled['sites.assets']).toBe(1);
        const [row] = await query<{ n: bigint }>(db, 'SELECT count(*) AS n FROM site_assets WHERE site_id = $1', [
          sites[0].site_id,
        ]);
        expect(Number(row.n)).toBe(0);
      },
    ],
    [
      'no site_id, only id (the get-site-info guide)',
      () =>
        on(
          'sites',
          eachSite((site) => dropKey('site_id')(site) as Json),
        ),
      async (db, filled) => {
        expect(filled['sites.site_id']).toBe(sites.length);
        const ids = await query<{ site_id: string }>(db, 'SELECT site_id FROM sites ORDER BY site_id');
        expect(ids.map((r) => r.site_id)).toEqual(sites.map((s) => s.site_id));
      },
    ],
    [
      'no capacity column in forecasts and outputs (older reference page, the guides)',
      () => both(on('forecast', dropKey('capacity')), on('output', dropKey('capacity'))),
      async (db, filled) => {
        expect(filled['forecasts.capacity']).toBeGreaterThan(0);
        expect(filled['outputs.capacity']).toBeGreaterThan(0);
        const [row] = await query<{ n: bigint }>(db, 'SELECT count(*) AS n FROM forecasts WHERE capacity IS NOT NULL');
        expect(Number(row.n)).toBe(0);
      },
    ],
    [
      'as_of: null for a model with no output yet',
      () =>
        on('output', (body, path) =>
          path.includes(firstModel)
            ? { ...(body as Json), as_of: null, forecast: [], valid_time: [], capacity: [] }
            : body,
        ),
      async (db) => {
        const rows = await query<{ model_id: string }>(db, 'SELECT DISTINCT model_id FROM model_outputs');
        expect(rows.map((r) => r.model_id)).not.toContain(firstModel);
        expect(rows.length).toBeGreaterThan(1);
      },
    ],
    [
      'model state entries that are empty objects (the reference example [{}])',
      () => on('models', (body) => (body as Json[]).map((model) => ({ ...model, state: [{}] }))),
      async (db, filled) => {
        expect(filled['models.state[]']).toBeGreaterThan(0);
        const [row] = await query<{ n: bigint; states: bigint }>(
          db,
          'SELECT count(*) AS n, (SELECT count(*) FROM model_states) AS states FROM models WHERE latest_state IS NULL',
        );
        expect(Number(row.n)).toBeGreaterThan(0);
        expect(Number(row.states)).toBe(0);
      },
    ],
    [
      'model state entries of unknown shapes',
      () =>
        on('models', (body) =>
          (body as Json[]).map((model) => ({ ...model, state: ['complete', { phase: 'x' }, 42] })),
        ),
      async (db) => {
        const rows = await query<{ latest_state: string | null }>(db, 'SELECT DISTINCT latest_state FROM models');
        expect(rows.map((r) => r.latest_state)).toEqual([null]);
      },
    ],
    [
      'keys no page shows, on every object',
      () => (_request, answer) => (answer.status === 200 ? { status: 200, body: withExtra(answer.body) } : undefined),
      async (db) => {
        const [row] = await query<{ details: string }>(db, 'SELECT details::VARCHAR AS details FROM sites LIMIT 1');
        expect(JSON.parse(row.details)).toMatchObject({ added_by_service: { note: 'a key no page shows' } });
      },
    ],
  ];

  it.each(variants)('%s', async (_name, rewrite, check) => {
    const { run, db } = await syncThrough(rewrite());
    expect(run.failures).toEqual([]);
    expect(run.exitCode).toBe(0);
    const rows = await counts(db);
    for (const table of ['sites', 'site_capacity', 'models', 'forecasts', 'model_outputs', 'actuals'])
      expect(rows[table], table).toBeGreaterThan(0);
    await check(db, await defaulted(db, run.runId));
  });
});

describe('a malformed item fails alone', () => {
  it('a site of List Sites with a latitude that is no number: that site fails, the others land', async () => {
    const bad = sites[1];
    const { run, db } = await syncThrough(
      on(
        'sites',
        eachSite((site) => (site.site_id === bad.site_id ? { ...site, latitude: 'north' } : site)),
      ),
    );
    expect(run.exitCode).toBe(1);
    expect(run.failures).toEqual([
      expect.objectContaining({ siteId: bad.site_id, resource: 'sites', fieldPath: 'latitude' }),
    ]);
    const recorded = await query<{ site_id: string; item: string; field_path: string }>(
      db,
      'SELECT site_id, item, field_path FROM run_failures WHERE run_id = $1',
      [run.runId],
    );
    expect(recorded).toEqual([{ site_id: bad.site_id, item: 'site [1]', field_path: 'latitude' }]);
    const synced = await query<{ site_id: string }>(db, 'SELECT DISTINCT site_id FROM forecasts ORDER BY 1');
    expect(synced.map((r) => r.site_id)).toEqual(sites.filter((s) => s !== bad).map((s) => s.site_id));
  });

  it('a model with a version that is no integer: that model fails, its siblings land', async () => {
    const { run, db } = await syncThrough(
      on('models', (body) =>
        (body as Json[]).map((model) => (model.id === firstModel ? { ...model, version: 'one' } : model)),
      ),
    );
    expect(run.exitCode).toBe(1);
    expect(run.failures).toEqual([
      expect.objectContaining({ siteId: sites[0].site_id, resource: 'models', fieldPath: 'version' }),
    ]);
    const models = await query<{ model_id: string }>(db, 'SELECT model_id FROM models WHERE site_id = $1', [
      sites[0].site_id,
    ]);
    expect(models.length).toBeGreaterThan(0);
    expect(models.map((m) => m.model_id)).not.toContain(firstModel);
  });

  it("one output vintage with an unreadable as_of: that vintage fails, the model's other vintages land", async () => {
    let broken = 0;
    const { run, db } = await syncThrough(
      on('output', (body, path) => {
        if (!path.includes(firstModel) || broken > 0) return body;
        broken += 1;
        return { ...(body as Json), as_of: 'yesterday' };
      }),
    );
    expect(run.exitCode).toBe(1);
    expect(run.failures).toEqual([
      expect.objectContaining({ siteId: sites[0].site_id, resource: 'outputs', fieldPath: 'as_of' }),
    ]);
    expect(run.failures[0].item).toMatch(new RegExp(`^model ${firstModel} `));
    const vintages = await query<{ n: bigint }>(
      db,
      'SELECT count(DISTINCT as_of) AS n FROM model_outputs WHERE model_id = $1',
      [firstModel],
    );
    expect(Number(vintages[0].n)).toBeGreaterThan(0);
  });
});

describe('capacity plan against documented variants', () => {
  it('plans for a site whose assets are null (no stack trace)', async () => {
    const proxy = await variantProxy(
      emu.url,
      on(
        'sites',
        eachSite((site) => ({ ...site, assets: null })),
      ),
    );
    const client = new ServiceClient({ baseUrl: proxy.url, apiKey: API_KEY });
    try {
      const dir = join(tempDir(), 'capacity');
      mkdirSync(dir);
      const site = sites.find((s) => s.type === 'solar')!;
      writeFileSync(
        join(dir, 'site.yaml'),
        `site: ${site.site_id}\nunit: kW\npoints:\n  - valid_time: 2026-12-01T00:00Z\n    value: 100\n`,
      );
      const plan = await planCapacity(dir, client, null, 1000);
      expect(plan.sites.map((s) => s.timeline.siteId)).toEqual([site.site_id]);
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});

describe('FastAPI error bodies', () => {
  it('reads {"detail": "..."} as the error message', async () => {
    const proxy = await variantProxy(emu.url, ({ path }) =>
      endpointOf(path) === 'site' ? { status: 404, body: { detail: 'Not Found' } } : undefined,
    );
    const client = new ServiceClient({ baseUrl: proxy.url, apiKey: API_KEY });
    try {
      const error = await client.getSite(sites[0].site_id).catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 404, errors: [{ field: '(detail)', message: 'Not Found' }] });
      expect((error as Error).message).toContain('Not Found');
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  it('reads {"detail": [{loc, msg}]} (a 422) field by field', async () => {
    const proxy = await variantProxy(emu.url, ({ path }) =>
      endpointOf(path) === 'forecast'
        ? {
            status: 422,
            body: { detail: [{ loc: ['query', 'start_date'], msg: 'invalid datetime format', type: 'value_error' }] },
          }
        : undefined,
    );
    const client = new ServiceClient({ baseUrl: proxy.url, apiKey: API_KEY });
    try {
      const error = await client.getSiteForecast(sites[0].site_id).catch((e: unknown) => e);
      expect(error).toMatchObject({
        status: 422,
        errors: [{ field: 'query.start_date', message: 'invalid datetime format' }],
      });
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});
