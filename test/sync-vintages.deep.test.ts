// Exact vintages, one bad read costs one item, late model vintages (#29): the sync against the
// emulator's switches for fractional issue times, failing vintages and late publication.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { issuesBetween, resolutionOf } from '../src/emulator/forecasts.js';
import { ServiceError } from '../src/api/errors.js';
import type { Emulator } from '../src/emulator/server.js';
import type { SiteRecord } from '../src/emulator/store.js';
import { JobRegistry } from '../src/runner/registry.js';
import { collectStatus, formatStatus } from '../src/runner/status.js';
import syncJob from '../jobs/sync.js';
import { readEach } from '../src/sync/vintages.js';
import { DAY, formatExactInstant, HOUR } from '../src/time.js';
import { emulator, NOW, query, runSync, tempDir, testConfig } from './sync-support.js';

const open: Emulator[] = [];
afterAll(async () => {
  for (const emu of open) await emu.close();
});

/** An emulator whose clock the test moves (a night is a day later). */
async function clocked(options: Parameters<typeof emulator>[0] = {}) {
  let clock = NOW;
  const emu = await emulator({ sites: 2, now: () => clock, ...options });
  open.push(emu);
  return { emu, at: (now: number) => (clock = now) };
}

const us = (ms: number) => Math.round(ms * 1000);

describe('fractional issue times', () => {
  it('land every vintage under its own issue time, to the microsecond, with its earliest lead rows', async () => {
    const { emu } = await clocked({ issueTiming: { fractional: true } });
    const dir = tempDir();
    const config = testConfig({ dir, url: emu.url });
    const run = await runSync(config);
    expect(run.status).toBe('ok');
    const db = config.warehouse.path;
    let checked = 0;
    for (const site of emu.store.sites.values() as Iterable<SiteRecord>) {
      const step = resolutionOf(site);
      const models = emu.store.modelsOf(site.id);
      // Every output vintage issued in the initial history (3 d) is stored under its issue time,
      // from the first valid time at or after it.
      for (const model of models) {
        const issues = issuesBetween(model, site, NOW - 3 * DAY + 10_000, NOW, NOW);
        const stored = await query<{ as_of: bigint; first: bigint }>(
          db,
          `SELECT epoch_us(as_of) AS as_of, epoch_ms(min(valid_time)) AS first FROM model_outputs
            WHERE model_id = $1 GROUP BY as_of`,
          [model.id],
        );
        const byIssue = new Map(stored.map((row) => [Number(row.as_of), Number(row.first)]));
        for (const issue of issues) {
          expect(issue % 1000, 'a fractional issue time').not.toBe(0);
          expect(byIssue.get(us(issue)), `${model.name} ${formatExactInstant(issue)}`).toBe(
            Math.ceil(issue / step) * step,
          );
          checked += 1;
        }
      }
      // The site forecast: every vintage of the first-priority model, under its update_time.
      const first = models.filter((m) => m.serving_active).sort((a, b) => a.priority - b.priority)[0];
      const rows = await query<{ update_time: bigint; first: bigint }>(
        db,
        `SELECT epoch_us(update_time) AS update_time, epoch_ms(min(valid_time)) AS first FROM forecasts
          WHERE site_id = $1 AND model_name = $2 GROUP BY update_time`,
        [site.id, first.name],
      );
      const forecasts = new Map(rows.map((row) => [Number(row.update_time), Number(row.first)]));
      for (const issue of issuesBetween(first, site, NOW - 3 * DAY + 10_000, NOW, NOW)) {
        expect(forecasts.get(us(issue)), `forecast ${formatExactInstant(issue)}`).toBe(Math.ceil(issue / step) * step);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(50);
  }, 120_000);
});

describe('a vintage that always fails', () => {
  it('costs only that item, named with its issue time; the sync moves on, retries it a bounded number of times and gives it up in status', async () => {
    const faulty = await clocked();
    const clean = await clocked();
    const [siteA, siteB] = [...faulty.emu.store.sites.values()].map((site) => site.id);
    const updates = (await faulty.emu.store.modelsOf(siteA))
      .filter((m) => m.serving_active)
      .flatMap((m) => issuesBetween(m, faulty.emu.store.sites.get(siteA) as SiteRecord, NOW - DAY, NOW, NOW))
      .sort((a, b) => a - b);
    const badAsOf = updates.at(-3) as number;
    const model = faulty.emu.store.modelsOf(siteB).find((m) => m.name === 'physical');
    if (!model) throw new Error('no physical model');
    const badFire = Date.UTC(2026, 10, 18, 6);
    faulty.emu.setFaults({
      failingVintages: [`${siteA}@${formatExactInstant(badAsOf)}`, `${model.id}@${formatExactInstant(badFire)}`],
    });
    const dir = tempDir();
    const config = testConfig({ dir, url: faulty.emu.url, db: join(dir, 'faulty.duckdb') });
    const cleanConfig = testConfig({ dir, url: clean.emu.url, db: join(dir, 'clean.duckdb') });

    const requests: { faulty: number; clean: number }[] = [];
    const runs = [];
    for (let night = 0; night < 4; night++) {
      const now = NOW + night * DAY;
      faulty.at(now);
      clean.at(now);
      const before = { faulty: faulty.emu.stats().requests, clean: clean.emu.stats().requests };
      runs.push(await runSync(config, {}, now));
      if (night < 3) expect((await runSync(cleanConfig, {}, now)).status).toBe('ok');
      requests.push({
        faulty: faulty.emu.stats().requests - before.faulty,
        clean: clean.emu.stats().requests - before.clean,
      });
    }

    // Night 1: two failures, each named with its issue time; everything else landed.
    const first = runs[0];
    expect(first.status).toBe('partial');
    expect(first.failures.map((f) => `${f.siteId} ${f.resource} ${f.item}`).sort()).toEqual(
      [
        `${siteA} forecasts as_of ${formatExactInstant(badAsOf)}`,
        `${siteB} outputs model ${model.id} fire ${formatExactInstant(badFire)}`,
      ].sort(),
    );
    expect(first.failures.every((f) => /400/.test(f.reason) && /read 1 of 4/.test(f.reason))).toBe(true);
    const db = config.warehouse.path;
    const stored = await query<{ n: bigint }>(
      db,
      `SELECT count(DISTINCT update_time) AS n FROM forecasts WHERE site_id = $1 AND update_time >= to_timestamp($2)`,
      [siteA, (NOW - 6 * HOUR) / 1000],
    );
    expect(Number(stored[0].n)).toBeGreaterThan(1);
    const marks = await query<{ resource: string; last: bigint }>(
      db,
      `SELECT resource, epoch_ms(synced_to) AS last FROM sync_state WHERE site_id IN ($1, $2) AND resource <> 'actuals'`,
      [siteA, siteB],
    );
    // Night 4's clock: the sync state moved every night, past the failing vintages.
    expect(marks.map((row) => Number(row.last))).toEqual(marks.map(() => NOW + 3 * DAY));

    // Nights 2 and 3 read the two failing vintages again, and cost about what a clean night does.
    for (const night of [1, 2]) {
      expect(runs[night].failures).toHaveLength(2);
      expect(requests[night].faulty).toBeLessThanOrEqual(1.5 * requests[night].clean);
    }
    expect(runs[2].failures.every((f) => /read 3 of 4/.test(f.reason))).toBe(true);
    // Night 4: the fourth read fails and gives them up.
    expect(runs[3].failures.every((f) => /given up after 4 reads/.test(f.reason))).toBe(true);

    const status = await collectStatus(config, new JobRegistry().add(syncJob), NOW + 3 * DAY);
    expect(status.vintages.pending).toBe(0);
    expect(
      status.vintages.givenUp.map((v) => `${v.siteId} ${v.resource} ${v.modelId ?? '-'} ${v.issue}`).sort(),
    ).toEqual(
      [
        `${siteA} forecasts - ${formatExactInstant(badAsOf)}`,
        `${siteB} outputs ${model.id} ${formatExactInstant(badFire)}`,
      ].sort(),
    );
    expect(formatStatus(status).join('\n')).toContain(`vintages given up (2; 0 pending`);

    // A fifth night reads them no more.
    faulty.at(NOW + 4 * DAY);
    expect((await runSync(config, {}, NOW + 4 * DAY)).status).toBe('ok');
  }, 300_000);
});

describe('a model that publishes late', () => {
  it('has its late vintage read on the next night', async () => {
    // The physical model fires at 12:00 and publishes at 14:30; the sync runs at 14:10.
    const { emu, at } = await clocked({ issueTiming: { delays: { physical: 150 * 60_000 } } });
    const dir = tempDir();
    const config = testConfig({ dir, url: emu.url });
    const late = Date.UTC(2026, 10, 18, 14, 30);
    const physical = [...emu.store.sites.keys()].map(
      (siteId) => emu.store.modelsOf(siteId).find((m) => m.name === 'physical')?.id as string,
    );
    const vintages = async () =>
      query<{ model_id: string }>(
        config.warehouse.path,
        `SELECT DISTINCT model_id FROM model_outputs WHERE as_of = to_timestamp($1) ORDER BY model_id`,
        [late / 1000],
      );

    const first = await runSync(config);
    expect(first.status).toBe('ok'); // not out yet is no failure
    expect(await vintages()).toEqual([]);
    const pending = await query<{ n: bigint }>(
      config.warehouse.path,
      // awaited, no read counted: its next fire (18:00) has not come
      `SELECT count(*) AS n FROM vintage_reads
        WHERE status = 'pending' AND attempts = 0 AND resource = 'outputs' AND issue = to_timestamp($1)`,
      [Date.UTC(2026, 10, 18, 12) / 1000],
    );
    expect(Number(pending[0].n)).toBe(physical.length);

    at(NOW + DAY);
    expect((await runSync(config, {}, NOW + DAY)).status).toBe('ok');
    expect((await vintages()).map((row) => row.model_id)).toEqual([...physical].sort());
    const left = await query<{ n: bigint }>(
      config.warehouse.path,
      `SELECT count(*) AS n FROM vintage_reads WHERE issue = to_timestamp($1)`,
      [Date.UTC(2026, 10, 18, 12) / 1000],
    );
    expect(Number(left[0].n)).toBe(0);
  }, 120_000);
});

describe('newest first', () => {
  it('reads the newest vintage first and, once the run is stopped, starts no more: the rest stay for the next run', async () => {
    const abort = new AbortController();
    const order: number[] = [];
    const items = [1, 3, 2, 5, 4].map((issue) => ({ modelId: '', issue }));
    const results = await readEach(items, 1, abort.signal, async (item) => {
      order.push(item.issue);
      if (order.length === 2) abort.abort();
      return { item, value: item.issue };
    });
    expect(order).toEqual([5, 4]);
    expect(
      results.map((r) => `${'value' in r ? 'read' : 'skipped' in r ? 'skipped' : 'failed'} ${r.item.issue}`),
    ).toEqual(['read 5', 'read 4', 'skipped 3', 'skipped 2', 'skipped 1']);
  });

  it('once a read fails the whole call, starts no more: their answers would go nowhere', async () => {
    const started: number[] = [];
    const items = [1, 2, 3, 4, 5, 6].map((issue) => ({ modelId: '', issue }));
    const gone = new ServiceError({
      kind: 'network',
      endpoint: 'GET /x',
      detail: 'connection failed',
      retryable: true,
    });
    const call = readEach(items, 2, new AbortController().signal, async (item) => {
      started.push(item.issue);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (item.issue === 6) throw gone;
      return { item, value: item.issue };
    });
    await expect(call).rejects.toBe(gone);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The newest failed; the one beside it, in flight, ends; no other starts.
    expect(started).toEqual([6, 5]);
  });
});
