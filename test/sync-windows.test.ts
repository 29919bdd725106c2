// The window and vintage plan: what a sync reads, from the clock and the sync state.
import { describe, expect, it } from 'vitest';
import { DAY, HOUR } from '../src/time.js';
import {
  cronFires,
  planActuals,
  planForecastUpdates,
  planModelOutputs,
  planOutputWindow,
  type WindowSettings,
} from '../src/sync/windows.js';

const settings: WindowSettings = { lookback: 6 * HOUR, initialHistory: 3 * DAY, horizon: 2 * DAY };
const MIDNIGHT = Date.UTC(2026, 10, 18);
const NOW = MIDNIGHT + 14 * HOUR;

describe('planForecastUpdates', () => {
  // Hourly issues from four days ago to two hours from now (a list may run ahead of the clock).
  const updates = Array.from({ length: 24 * 4 + 3 }, (_, i) => NOW - 4 * DAY + i * HOUR).reverse();

  it('first sync: every issue time within the initial history up to now, each read over its horizon', () => {
    const plan = planForecastUpdates(NOW, null, settings, updates);
    expect(plan.reads).toHaveLength(3 * 24 + 1);
    expect(plan.reads[0]).toEqual({ asOf: NOW - 3 * DAY, start: NOW - 3 * DAY, end: NOW - DAY });
    expect(plan.reads.at(-1)).toEqual({ asOf: NOW, start: NOW, end: NOW + 2 * DAY });
    expect(plan.mark).toEqual({ syncedTo: NOW, lastAsOf: NOW });
  });

  it('later: only the issue times after the last one read; a rerun reads none and keeps the mark', () => {
    const mark = { syncedTo: NOW - 5 * HOUR, lastAsOf: NOW - 5 * HOUR };
    expect(planForecastUpdates(NOW, mark, settings, updates).reads.map((r) => r.asOf)).toEqual(
      [4, 3, 2, 1, 0].map((h) => NOW - h * HOUR),
    );
    const rerun = planForecastUpdates(NOW, { syncedTo: NOW, lastAsOf: NOW }, settings, updates);
    expect(rerun).toEqual({ reads: [], mark: { syncedTo: NOW, lastAsOf: NOW } });
  });

  it('backfill: the issue times of the window, none in the future, no new sync state; repeats read once', () => {
    const plan = planForecastUpdates(NOW, null, settings, [...updates, NOW - HOUR], {
      from: NOW - 3 * HOUR,
      to: NOW + DAY,
    });
    expect(plan.reads.map((r) => r.asOf)).toEqual([3, 2, 1, 0].map((h) => NOW - h * HOUR));
    expect(plan.mark).toBeNull();
  });
});

describe('planModelOutputs', () => {
  // The site's listed issue times: every 30 minutes; the model fires at :00 every 6 hours.
  const updates = Array.from({ length: 48 * 4 }, (_, i) => NOW - 4 * DAY + i * 30 * 60_000);
  const window = planOutputWindow(NOW, { syncedTo: NOW - DAY, lastAsOf: MIDNIGHT - 6 * HOUR }, settings);

  it("reads each cron fire as of just before the next fire (a late vintage is its fire's), the last as of now", () => {
    const reads = planModelOutputs(window, '0 */6 * * *', updates, NOW, settings.horizon);
    expect(reads.map((r) => r.fire)).toEqual([0, 6, 12].map((h) => MIDNIGHT + h * HOUR));
    expect(reads.map((r) => r.asOf)).toEqual([MIDNIGHT + 6 * HOUR - 0.001, MIDNIGHT + 12 * HOUR - 0.001, NOW]);
    expect(reads[0]).toMatchObject({ start: MIDNIGHT, end: MIDNIGHT + 6 * HOUR - 0.001 + settings.horizon });
    expect(window.mark).toEqual({ syncedTo: NOW, lastAsOf: NOW });
  });

  it('without a readable schedule, every listed issue time, exactly', () => {
    expect(cronFires('not a cron')).toBeNull();
    const late = planOutputWindow(NOW, { syncedTo: NOW, lastAsOf: NOW - 2 * HOUR }, settings);
    const reads = planModelOutputs(late, 'not a cron', updates, NOW, settings.horizon);
    expect(reads.map((r) => r.asOf)).toEqual([NOW - 90 * 60_000, NOW - HOUR, NOW - 30 * 60_000]);
    expect(reads.every((r) => r.fire === null)).toBe(true);
  });
});

describe('planActuals', () => {
  it('reads from the start of history, then from synced_to minus the lookback, up to now', () => {
    expect(planActuals(NOW, null, settings)).toEqual({
      window: { start: NOW - 3 * DAY, end: NOW },
      mark: { syncedTo: NOW, lastAsOf: null },
    });
    expect(planActuals(NOW + DAY, { syncedTo: NOW, lastAsOf: null }, settings).window).toEqual({
      start: NOW - 6 * HOUR,
      end: NOW + DAY,
    });
  });

  it('keeps a later synced_to when the clock is set back, as sync_state does', () => {
    const plan = planActuals(NOW - HOUR, { syncedTo: NOW, lastAsOf: null }, settings);
    expect(plan.mark?.syncedTo).toBe(NOW);
    expect(planActuals(NOW - HOUR, plan.mark, settings).window.start).toBe(NOW - 6 * HOUR);
  });

  it('backfill reads its window and leaves the sync state', () => {
    expect(planActuals(NOW, null, settings, { from: 1, to: 2 })).toEqual({ window: { start: 1, end: 2 }, mark: null });
  });
});
