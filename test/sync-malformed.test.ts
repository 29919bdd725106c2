// A site whose data responses break the interface fails alone: every other site syncs fully,
// the run ends partial (exit 1), and the site and reason are in run_failures.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SiteResponse } from '../src/api/schemas.js';
import type { Emulator } from '../src/emulator/server.js';
import { clientFor, emulator, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

let emu: Emulator;
let sites: SiteResponse[];

beforeAll(async () => {
  emu = await emulator({ sites: 4 });
  const client = clientFor(emu);
  sites = await client.listSites();
  await client.close();
});

afterAll(async () => {
  await emu?.close();
});

describe('a malformed response for one site', () => {
  it('fails that site alone; the others land as in a clean sync', async () => {
    const broken = sites[1];
    const others = sites.filter((s) => s !== broken).map((s) => s.site_id);
    const dir = tempDir();
    const clean = testConfig({ dir, url: emu.url, db: join(dir, 'clean.duckdb') });
    expect((await runSync(clean, { sites: others })).status).toBe('ok');

    emu.setFaults({ malformedSites: [broken.site_id] });
    const config = testConfig({ dir, url: emu.url, db: join(dir, 'partial.duckdb') });
    const run = await runSync(config);
    emu.setFaults({ malformedSites: [] });

    expect(run.status).toBe('partial');
    expect(run.exitCode).toBe(1);
    expect(new Set(run.failures.map((f) => f.siteId))).toEqual(new Set([broken.site_id]));
    expect(new Set(run.failures.map((f) => f.resource))).toEqual(new Set(['actuals', 'forecasts', 'outputs']));
    expect(run.summary.join('\n')).toContain(broken.site_id);

    const db = config.warehouse.path;
    const recorded = await query<{
      site_id: string;
      resource: string;
      item: string | null;
      field_path: string | null;
      error: string;
    }>(
      db,
      'SELECT site_id, resource, item, field_path, error FROM run_failures WHERE run_id = $1 ORDER BY resource, item',
      [run.runId],
    );
    expect(recorded.every((r) => r.site_id === broken.site_id)).toBe(true);
    for (const r of recorded) expect(r.error).toMatch(/malformed|has \d+ values|expected|required/i);
    // Actuals fail as a whole; the site forecast and model outputs fail vintage by vintage (#29),
    // each recorded with its issue time (outputs: model and cron fire) and the field that broke.
    expect(recorded.filter((r) => r.resource === 'actuals')).toHaveLength(1);
    const forecasts = recorded.filter((r) => r.resource === 'forecasts');
    expect(forecasts.length).toBeGreaterThan(1);
    for (const r of forecasts) {
      expect(r.item).toMatch(/^as_of \d{4}-\d{2}-\d{2}T/);
      expect(r.field_path).not.toBeNull();
    }
    const outputs = recorded.filter((r) => r.resource === 'outputs');
    expect(outputs.length).toBeGreaterThan(1);
    for (const r of outputs) {
      expect(r.item).toMatch(/^model \S+ fire \d{4}-\d{2}-\d{2}T/);
      expect(r.field_path).not.toBeNull();
    }
    const ledger = await query<{ status: string }>(db, 'SELECT status FROM runs WHERE run_id = $1', [run.runId]);
    expect(ledger[0].status).toBe('partial');

    // The broken site has its site row and models (those responses were fine) but no series; its
    // forecasts and outputs moved past the failed vintages (kept pending in vintage_reads), its actuals did not.
    const series = await query<{ n: bigint }>(
      db,
      `SELECT (SELECT count(*) FROM forecasts WHERE site_id = $1) + (SELECT count(*) FROM actuals WHERE site_id = $1)
            + (SELECT count(*) FROM model_outputs WHERE site_id = $1) AS n`,
      [broken.site_id],
    );
    expect(Number(series[0].n)).toBe(0);
    const states = await query<{ resource: string }>(
      db,
      'SELECT resource FROM sync_state WHERE site_id = $1 ORDER BY resource',
      [broken.site_id],
    );
    expect(states.map((r) => r.resource)).toEqual(['forecasts', 'outputs']);
    const pending = await query<{ n: bigint }>(
      db,
      `SELECT count(*) AS n FROM vintage_reads WHERE site_id = $1 AND status = 'pending'`,
      [broken.site_id],
    );
    expect(Number(pending[0].n)).toBe(forecasts.length + outputs.length);

    // Every other site is exactly as a clean sync of those sites left it.
    const without = (table: string) => `(SELECT * FROM ${table} WHERE site_id <> '${broken.site_id}')`;
    const compare = async (path: string) => {
      const rows = await query<{ n: bigint; h: string }>(
        path,
        ['forecasts', 'model_outputs', 'actuals', 'site_assets']
          .map(
            (t) =>
              `SELECT count(*) AS n, md5(string_agg(x::VARCHAR, '|' ORDER BY x::VARCHAR)) AS h FROM ${without(t)} x`,
          )
          .join(' UNION ALL '),
      );
      return rows.map((r) => `${r.n}:${r.h}`);
    };
    expect(await compare(db)).toEqual(await compare(clean.warehouse.path));
    const cleanHashes = await tableHashes(clean.warehouse.path, ['forecasts', 'model_outputs', 'actuals']);
    expect(Object.values(cleanHashes).every((h) => !h.startsWith('0 rows'))).toBe(true);
  }, 120_000);
});
