// The window and vintage plan: what a sync reads, from the clock and the sync state.
import { describe, expect, it } from 'vitest';
import { DAY, HOUR } from '../src/time.js';
import { planActuals, planForecastUpdates, planVintages, type WindowSettings } from '../src/sync/windows.js';

const settings: WindowSettings = { lookback: 6 * HOUR, initialHistory: 3 * DAY, horizon: 2 * DAY, vintageStep: DAY };
const MIDNIGHT = Date.UTC(2026, 10, 18);
const NOW = MIDNIGHT + 14 * HOUR;

const asOfs = (plan: ReturnType<typeof planVintages>) => plan.reads.map((r) => r.asOf);

describe('planVintages', () => {
  it('first sync: one as_of per day at 00:00 UTC from the start of history, then the current forecast', () => {
    const plan = planVintages(NOW, null, settings);
    expect(asOfs(plan)).toEqual([MIDNIGHT - 2 * DAY, MIDNIGHT - DAY, MIDNIGHT, null]);
    expect(plan.reads[0]).toEqual({ asOf: MIDNIGHT - 2 * DAY, start: MIDNIGHT - 2 * DAY, end: MIDNIGHT });
    expect(plan.reads.at(-1)).toEqual({ asOf: null, start: NOW - 3 * DAY, end: NOW + 2 * DAY });
    expect(plan.mark).toEqual({ syncedTo: NOW, lastAsOf: MIDNIGHT });
  });

  it('rerun at the same clock: no past vintage again, the current forecast from synced_to minus the lookback', () => {
    const plan = planVintages(NOW, { syncedTo: NOW, lastAsOf: MIDNIGHT }, settings);
    expect(plan.reads).toEqual([{ asOf: null, start: NOW - 6 * HOUR, end: NOW + 2 * DAY }]);
    expect(plan.mark).toEqual({ syncedTo: NOW, lastAsOf: MIDNIGHT });
  });

  it('after three missed days: one vintage per missed day', () => {
    const later = NOW + 3 * DAY;
    const plan = planVintages(later, { syncedTo: NOW, lastAsOf: MIDNIGHT }, settings);
    expect(asOfs(plan)).toEqual([MIDNIGHT + DAY, MIDNIGHT + 2 * DAY, MIDNIGHT + 3 * DAY, null]);
    expect(plan.reads.at(-1)).toEqual({ asOf: null, start: NOW - 6 * HOUR, end: later + 2 * DAY });
    expect(plan.mark).toEqual({ syncedTo: later, lastAsOf: MIDNIGHT + 3 * DAY });
  });

  it('a 6-hour step puts the vintages at 00, 06, 12 and 18 UTC', () => {
    const plan = planVintages(NOW, { syncedTo: NOW - 12 * HOUR, lastAsOf: MIDNIGHT - 6 * HOUR }, { ...settings, vintageStep: 6 * HOUR });
    expect(asOfs(plan)).toEqual([MIDNIGHT, MIDNIGHT + 6 * HOUR, MIDNIGHT + 12 * HOUR, null]);
  });

  it('backfill: one as_of per UTC day in the window, none in the future, no current forecast, no new sync state', () => {
    const plan = planVintages(NOW, { syncedTo: NOW, lastAsOf: MIDNIGHT }, settings, { from: MIDNIGHT - 4 * DAY - HOUR, to: MIDNIGHT + 5 * DAY });
    expect(asOfs(plan)).toEqual([MIDNIGHT - 4 * DAY, MIDNIGHT - 3 * DAY, MIDNIGHT - 2 * DAY, MIDNIGHT - DAY, MIDNIGHT]);
    expect(plan.reads[0]).toEqual({ asOf: MIDNIGHT - 4 * DAY, start: MIDNIGHT - 4 * DAY, end: MIDNIGHT - 2 * DAY });
    expect(plan.mark).toBeNull();
  });
});

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
    expect(planForecastUpdates(NOW, mark, settings, updates).reads.map((r) => r.asOf)).toEqual([4, 3, 2, 1, 0].map((h) => NOW - h * HOUR));
    const rerun = planForecastUpdates(NOW, { syncedTo: NOW, lastAsOf: NOW }, settings, updates);
    expect(rerun).toEqual({ reads: [], mark: { syncedTo: NOW, lastAsOf: NOW } });
  });

  it('backfill: the issue times of the window, none in the future, no new sync state; repeats read once', () => {
    const plan = planForecastUpdates(NOW, null, settings, [...updates, NOW - HOUR], { from: NOW - 3 * HOUR, to: NOW + DAY });
    expect(plan.reads.map((r) => r.asOf)).toEqual([3, 2, 1, 0].map((h) => NOW - h * HOUR));
    expect(plan.mark).toBeNull();
  });
});

describe('planActuals', () => {
  it('reads from the start of history, then from synced_to minus the lookback, up to now', () => {
    expect(planActuals(NOW, null, settings)).toEqual({ window: { start: NOW - 3 * DAY, end: NOW }, mark: { syncedTo: NOW, lastAsOf: null } });
    expect(planActuals(NOW + DAY, { syncedTo: NOW, lastAsOf: null }, settings).window).toEqual({ start: NOW - 6 * HOUR, end: NOW + DAY });
  });

  it('backfill reads its window and leaves the sync state', () => {
    expect(planActuals(NOW, null, settings, { from: 1, to: 2 })).toEqual({ window: { start: 1, end: 2 }, mark: null });
  });
});
