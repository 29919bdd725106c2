// Daylight saving in Europe/Stockholm: a nightly at 02:30 local, a time that does not exist on
// 2026-03-29 and exists twice on 2026-10-25, runs exactly once each night: at 03:00 (the end
// of the gap) in spring, at the first 02:30 in autumn. cron-parser given the zone would run the
// spring night an hour after the gap.
import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { nextSlots } from '../src/runner/slots.js';
import { formatInZone } from '../src/time.js';
import {
  ledgerLines,
  manualClock,
  publishedRuns,
  tableJob,
  tempConfig,
  testScheduler,
} from './fixtures/runner-setup.js';

const TZ = 'Europe/Stockholm';
const NIGHTLY = '30 2 * * *';
const MINUTE = 60_000;
const local = (slots: number[]) => slots.map((ms) => formatInZone(ms, TZ));

describe('slots across a DST change', () => {
  it.each([
    [
      'spring forward: the 02:30 that does not exist runs once, at 03:00',
      {
        from: Date.UTC(2026, 2, 27),
        to: Date.UTC(2026, 2, 31),
        slots: [
          '2026-03-27T02:30:00+01:00',
          '2026-03-28T02:30:00+01:00',
          '2026-03-29T03:00:00+02:00',
          '2026-03-30T02:30:00+02:00',
        ],
      },
    ],
    [
      'fall back: the 02:30 that exists twice runs once, at the first',
      {
        from: Date.UTC(2026, 9, 23),
        to: Date.UTC(2026, 9, 27),
        slots: [
          '2026-10-23T02:30:00+02:00',
          '2026-10-24T02:30:00+02:00',
          '2026-10-25T02:30:00+02:00',
          '2026-10-26T02:30:00+01:00',
        ],
      },
    ],
  ])('%s', (_night, { from, to, slots }) => {
    expect(local(nextSlots(NIGHTLY, TZ, from, to))).toEqual(slots);
  });

  it('a half-hourly schedule runs each wall time once: the gap collapses to 03:00, the repeated hour runs once', () => {
    expect(local(nextSlots('*/30 * * * *', TZ, Date.UTC(2026, 2, 29, 0, 15), Date.UTC(2026, 2, 29, 1, 45)))).toEqual([
      '2026-03-29T01:30:00+01:00',
      '2026-03-29T03:00:00+02:00',
      '2026-03-29T03:30:00+02:00',
    ]);
    expect(local(nextSlots('*/30 * * * *', TZ, Date.UTC(2026, 9, 24, 23, 45), Date.UTC(2026, 9, 25, 2, 15)))).toEqual([
      '2026-10-25T02:00:00+02:00',
      '2026-10-25T02:30:00+02:00',
      '2026-10-25T03:00:00+01:00',
    ]);
  });
});

describe("cron-parser's own behaviour in the zone on those nights (why slots.ts places slots itself)", () => {
  const inZone = (from: string) =>
    local(
      CronExpressionParser.parse(NIGHTLY, { tz: TZ, currentDate: new Date(from) })
        .take(2)
        .map((date) => date.getTime()),
    );

  it('runs the spring night at 03:30, an hour after the gap, and the autumn one at its first 02:30', () => {
    expect(inZone('2026-03-28T12:00:00Z')).toEqual(['2026-03-29T03:30:00+02:00', '2026-03-30T02:30:00+02:00']);
    expect(inZone('2026-10-24T12:00:00Z')).toEqual(['2026-10-25T02:30:00+02:00', '2026-10-26T02:30:00+01:00']);
  });
});

describe('the daemon ticking every minute through the DST nights', () => {
  async function tickThrough(from: number, to: number) {
    const config = tempConfig({ schedule: { timezone: TZ } });
    const clock = manualClock(from);
    const scheduler = testScheduler(config, [tableJob('nightly')], [{ name: 'nightly', expr: NIGHTLY }], clock.now);
    scheduler.start(new Map());
    for (let t = from + MINUTE; t <= to; t += MINUTE) {
      clock.set(t);
      scheduler.tick();
      await scheduler.idle();
    }
    return ledgerLines(await publishedRuns(config));
  }

  it('spring: one run, for 03:00 local', async () => {
    expect(await tickThrough(Date.UTC(2026, 2, 28, 22), Date.UTC(2026, 2, 29, 4))).toEqual([
      ['nightly', 'schedule', '2026-03-29T01:00:00.000Z', 1, 'ok'],
    ]);
  });

  it('autumn: one run, for the first 02:30 local (00:30 UTC), none in the repeated hour', async () => {
    expect(await tickThrough(Date.UTC(2026, 9, 24, 22), Date.UTC(2026, 9, 25, 4))).toEqual([
      ['nightly', 'schedule', '2026-10-25T00:30:00.000Z', 1, 'ok'],
    ]);
  });

  it('a second daemon ticking the same slot does not run it again (the ledger holds scheduled_for)', async () => {
    const config = tempConfig({ schedule: { timezone: TZ } });
    const slot = Date.UTC(2026, 9, 25, 0, 30); // the first 02:30
    const results = [];
    for (let daemon = 0; daemon < 2; daemon++) {
      const clock = manualClock(slot - MINUTE);
      const scheduler = testScheduler(config, [tableJob('nightly')], [{ name: 'nightly', expr: NIGHTLY }], clock.now);
      scheduler.start(new Map());
      clock.set(slot);
      scheduler.tick();
      await scheduler.idle();
      results.push(...scheduler.results.map((r) => [r.status, r.error]));
    }
    expect(results).toEqual([
      ['ok', null],
      ['skipped', expect.stringMatching(/^slot 2026-10-25T00:30:00.000Z already run/)],
    ]);
    expect(ledgerLines(await publishedRuns(config))).toEqual([
      ['nightly', 'schedule', '2026-10-25T00:30:00.000Z', 1, 'ok'],
    ]);
  });
});
