// The history bench end to end at a tiny size: a warehouse two days deep and one a day deep, each
// built and then run one night later, every nightly run in its own process against the emulator,
// both clocks moved a day. Checks exit codes and the JSON's shape; times are never asserted.
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  buildNights,
  HistoryDepth,
  historyJson,
  historyStart,
  NIGHT_STEPS,
  ratios,
  stepsOf,
} from '../bench/history.js';
import { CLI } from './fixtures/runner-child.js';

vi.setConfig({ testTimeout: 180_000 });

const work = mkdtempSync(join(tmpdir(), 'efsync-bench-history-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the history bench', () => {
  it('builds two depths, runs a night on each, and reports every step', async () => {
    const start = Date.UTC(2026, 10, 20, 2);
    const options = { cli: [process.execPath, ...CLI], work, sites: 2, nights: 1, start };
    // the two depths at once (the bench takes them in turn): the test stays under a minute
    const said: string[] = [];
    const depths = [
      new HistoryDepth({ ...options, days: 2 }, (line) => said.push(line)),
      new HistoryDepth({ ...options, days: 1 }, () => undefined),
    ];
    await Promise.all(depths.map((depth) => depth.build()));
    await Promise.all(depths.map((depth) => depth.night(1)));
    const [deep, shallow] = depths.map((depth) => depth.figures());
    for (const depth of [deep, shallow]) {
      expect(depth.nights.map((n) => [n.night, n.code])).toEqual([
        [0, 0],
        [1, 0],
      ]);
      const json = historyJson(depth);
      expect(json).toMatchObject({ days: depth.days, sites: 2 });
      const [, night] = json.nights as Record<string, unknown>[];
      expect(night).toMatchObject({ night: 1, now: '2026-11-21T02:00:00.000Z', exit: 0 });
      expect(Object.keys(night.steps as object)).toEqual([...NIGHT_STEPS]);
      const steps = night.steps as Record<string, { seconds: number; peak_rss_mb: number } | null>;
      for (const step of ['sync-actuals', 'accuracy', 'publish']) {
        expect(steps[step]?.seconds).toBeGreaterThan(0);
        expect(steps[step]?.peak_rss_mb).toBeGreaterThan(0);
      }
      expect(night.published_mb).toBeGreaterThan(0);
      expect(night.series_rows).toBeGreaterThan(0);
      expect(night.pairs).toBeGreaterThan(0);
    }
    // each night's figures as soon as it ends, for a bench of hours stopped half-way
    expect(
      said.filter((line) =>
        /^ {2}(build|night 1): exit 0, [\d.]+ s, peak \d+ MB; .*accuracy [\d.]+\/\d+ .*publish [\d.]+\/\d+; published \d+ MB, writer \d+ MB$/.test(
          line,
        ),
      ),
    ).toHaveLength(2);
    // a day more of history and a night later: more rows in the deeper warehouse
    expect(deep.nights[1].seriesRows).toBeGreaterThan(shallow.nights[1].seriesRows);
    expect(Object.keys(ratios(deep, shallow))).toEqual(['night', 'publish']);
  });

  it('goes on from its journal: a night it holds is not run again, a night stopped part-way is run again and marked', async () => {
    const start = Date.UTC(2026, 10, 20, 2);
    const said: string[] = [];
    const depth = new HistoryDepth(
      { cli: [process.execPath, ...CLI], work, sites: 2, nights: 2, start, days: 2 },
      (line) => said.push(line),
    );
    expect(depth.nights.map((n) => n.night)).toEqual([0, 1]);
    await depth.build();
    await depth.night(1);
    expect(said).toEqual([`2 days: 2 nights done before (${join(work, '2d', 'nights.jsonl')})`]);
    // a bench stopped during night 2: the night under way is marked, the journal cut mid-line
    writeFileSync(join(work, '2d', 'night-under-way'), '2026-11-22T02:00:00.000Z');
    appendFileSync(join(work, '2d', 'nights.jsonl'), '{"night":2,"now":"2026-11');
    const resumed = new HistoryDepth(
      { cli: [process.execPath, ...CLI], work, sites: 2, nights: 2, start, days: 2 },
      (line) => said.push(line),
    );
    await resumed.night(2);
    expect(resumed.nights.map((n) => [n.night, n.code, n.rerun ?? false])).toEqual([
      [0, 0, false],
      [1, 0, false],
      [2, 0, true],
    ]);
    expect(said.at(-1)).toMatch(/^ {2}night 2 \(run again after a stop\): exit 0, /);
    expect(historyJson(resumed.figures()).nights).toMatchObject([{}, {}, { night: 2, rerun: true }]);
    expect(existsSync(join(work, '2d', 'night-under-way'))).toBe(false);
    // the cut line gone, the night after it on a line of its own
    const again = new HistoryDepth({ cli: [], work, sites: 2, nights: 2, start, days: 2 }, () => undefined);
    expect(again.nights.map((n) => n.night)).toEqual([0, 1, 2]);
  });

  it('keeps its clock and parameters in its work folder, and goes on only with the same ones', () => {
    const folder = join(work, 'resumed');
    const parameters = { sites: 100, depths: [365, 7], nights: 7, build: 'monthly', memory: '256MB' };
    const today = Date.UTC(2026, 11, 2, 2);
    expect(historyStart(folder, parameters, today)).toEqual({ start: today, before: false });
    expect(historyStart(folder, parameters, today + 86_400_000)).toEqual({ start: today, before: true });
    expect(() => historyStart(folder, { ...parameters, memory: '1GB' }, today)).toThrow(
      `${join(folder, 'history.json')}: a bench of memory "256MB", not "1GB"`,
    );
  });

  it('reads the steps of a summary, a step the chain does not have as null', () => {
    const steps = stepsOf(
      [
        'sync-sites: ok (0.42 s, peak RSS 150 MB)',
        '  2 sites',
        'accuracy: partial (12.00 s, peak RSS 260 MB)',
        'publish: (0.30 s)',
      ].join('\n'),
    );
    expect(steps['sync-sites']).toEqual({ status: 'ok', seconds: 0.42, peakRssMb: 150 });
    expect(steps.accuracy).toEqual({ status: 'partial', seconds: 12, peakRssMb: 260 });
    expect(steps.publish).toEqual({ status: 'ok', seconds: 0.3, peakRssMb: null });
    expect(steps.retention).toBeNull();
  });

  it('builds a deep warehouse by nights a month apart that together sync exactly D days', () => {
    const start = Date.UTC(2026, 10, 20, 2);
    const day = 86_400_000;
    for (const days of [1, 7, 30, 31, 60, 365]) {
      const { clocks, firstDays } = buildNights(start, days);
      expect(clocks.at(-1)).toBe(start);
      expect(clocks[0] - firstDays * day).toBe(start - days * day);
      expect(firstDays).toBeGreaterThan(0);
      expect(clocks.slice(1).every((t, i) => t - clocks[i] === 30 * day)).toBe(true);
    }
    expect(buildNights(start, 365).clocks).toHaveLength(13);
    expect(buildNights(start, 7)).toEqual({ clocks: [start], firstDays: 7 });
    // as a new user builds it: one first night of all of it
    expect(buildNights(start, 365, 'first-sync')).toEqual({ clocks: [start], firstDays: 365 });
  });
});
