// The days markStale reads of the ledger (staleDays): a bound that holds every row its conditions
// can choose, so that a night reads the day leaving the window and the last days, not the month.
import { describe, expect, it } from 'vitest';
import { staleDays } from '../src/accuracy/input/incremental.js';
import { DAY } from '../src/time.js';

const d = (n: number) => n * DAY;
const ledger = (from: number | null, to: number | null, staleFromUs: number | null | 'all') => ({
  fingerprint: '',
  from,
  to,
  actualsSeenTo: 0,
  nextPid: 0,
  dirtyFromUs: null,
  staleFromUs,
});

describe('staleDays', () => {
  it('a night: the day leaving, and from the first stale valid time to the end of the window', () => {
    const days = staleDays({ from: d(31), to: d(61) }, ledger(d(30), d(60), d(53) * 1000));
    expect(days).toEqual({ leaving: { from: d(30), to: d(31) }, changing: { from: d(53), to: d(61) } });
  });

  it('nothing stale inside the old window: from its end', () => {
    expect(staleDays({ from: d(31), to: d(61) }, ledger(d(30), d(60), null)).changing).toEqual({
      from: d(60),
      to: d(61),
    });
  });

  it('a window reaching back before the old one: from its own start', () => {
    expect(staleDays({ from: d(20), to: d(61) }, ledger(d(30), d(60), d(53) * 1000)).changing).toEqual({
      from: d(20),
      to: d(61),
    });
  });

  it('a window ending before the old one: every day may leave', () => {
    expect(staleDays({ from: d(31), to: d(50) }, ledger(d(30), d(60), null)).leaving).toBe('all');
  });

  it('every row stale: the whole window', () => {
    expect(staleDays({ from: d(31), to: d(61) }, ledger(d(30), d(60), 'all')).changing).toEqual({
      from: d(31),
      to: d(61),
    });
  });

  it('open windows: no day leaves, and an old window open at its end changes nothing but what is stale', () => {
    const days = staleDays({}, ledger(null, null, null));
    expect(days.leaving).toEqual({ from: 0, to: 0 });
    expect(days.changing).toEqual({ from: null, to: null });
    expect(staleDays({ from: d(31) }, ledger(d(31), null, null)).changing).toEqual({ from: 0, to: 0 });
  });
});
