// The plan of a full alignment (src/accuracy/input/day-plan.ts): the window's days in order,
// consecutive days together while their points stay within batch_points, and within a group
// batches of the sites with points there, whatever the sites' spans.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planDayGroups, planGroupBatches } from '../src/accuracy/input/day-plan.js';
import type { AlignOptions } from '../src/accuracy/input/align.js';
import { DAY } from '../src/time.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { openTestWarehouse } from './accuracy-fixture.js';

const D0 = Date.parse('2026-03-01T00:00:00Z');
const day = (n: number) => D0 + n * DAY;
const iso = (ms: number) => new Date(ms).toISOString();

let wh: Warehouse;

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-day-plan');
});
afterAll(async () => {
  await wh?.close();
});

/** acc_vintages of sites, each one vintage of `points` spread from its first to its last day (inclusive). */
async function vintages(sites: { id: string; first: number; last: number; points: number }[]): Promise<void> {
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_vintages (site_id VARCHAR, issue_time TIMESTAMPTZ,
    old_points BIGINT, points BIGINT, new_points BIGINT, first_valid TIMESTAMPTZ, last_valid TIMESTAMPTZ)`);
  await wh.run('CREATE OR REPLACE TEMP TABLE acc_site AS SELECT site_id FROM acc_vintages');
  for (const s of sites) {
    await wh.run(
      `INSERT INTO acc_vintages VALUES ('${s.id}', TIMESTAMPTZ '${iso(day(s.first))}', 0, ${s.points}, ${s.points},
        TIMESTAMPTZ '${iso(day(s.first) + 3_600_000)}', TIMESTAMPTZ '${iso(day(s.last) + 20 * 3_600_000)}')`,
    );
    await wh.run(`INSERT INTO acc_site VALUES ('${s.id}')`);
  }
}

/** A group as its first day and the day after its last, counted from D0. */
const daysOf = (g: { from?: number; to?: number }) => [(g.from! - D0) / DAY, (g.to! - D0) / DAY];

const options = (batchPoints: number | undefined, from = day(0), to = day(10)): AlignOptions => ({
  from,
  to,
  batchPoints,
  forecastLabel: 'beginning',
  actualLabel: 'beginning',
  maxMissingPct: 10,
});

async function batchesOf(plan: AlignOptions, group: { from?: number; to?: number }): Promise<string[][]> {
  const batches = await planGroupBatches(wh, plan, group);
  const rows = await wh.all<{ site_id: string; batch: bigint }>('SELECT site_id, batch FROM acc_site_batch');
  return batches.map((b) =>
    rows
      .filter((r) => Number(r.batch) === b)
      .map((r) => r.site_id)
      .sort(),
  );
}

describe('the plan of a full alignment', () => {
  it('groups consecutive days within batch_points, a day with more alone, and leaves out days with no points', async () => {
    // A: 100 points a day on days 0-9; B: 300 a day on days 5-6; none has day 10 or later
    await vintages([
      { id: 'A', first: 0, last: 9, points: 1000 },
      { id: 'B', first: 5, last: 6, points: 600 },
    ]);
    const groups = await planDayGroups(wh, options(250));
    expect(groups.map(daysOf)).toEqual([
      [0, 2],
      [2, 4],
      [4, 5],
      [5, 6],
      [6, 7],
      [7, 9],
      [9, 10],
    ]);
    // day 5 holds 400 points: A's 100 and B's 300, in batches cut where a site starts past 50
    expect(await batchesOf(options(50), groups[3])).toEqual([['A'], ['B']]);
    // days 0-1: only A
    expect(await batchesOf(options(250), groups[0])).toEqual([['A']]);
    expect(await batchesOf(options(1000), groups[3])).toEqual([['A', 'B']]);
  });

  it('clips the sites to the window, and without batch_points is one group of every site', async () => {
    await vintages([
      { id: 'A', first: 0, last: 9, points: 1000 },
      { id: 'C', first: 8, last: 12, points: 500 },
    ]);
    const groups = await planDayGroups(wh, options(10_000, day(3), day(10)));
    expect(groups.map(daysOf)).toEqual([[3, 10]]);
    expect(await batchesOf(options(10_000), groups[0])).toEqual([['A', 'C']]);
    expect(await planDayGroups(wh, options(undefined))).toEqual([{}]);
    expect(await batchesOf(options(undefined), {})).toEqual([['A', 'C']]);
  });

  it('does not group days across days with no points', async () => {
    await vintages([
      { id: 'D', first: 0, last: 1, points: 20 },
      { id: 'E', first: 5, last: 6, points: 20 },
    ]);
    const groups = await planDayGroups(wh, options(10_000));
    expect(groups.map(daysOf)).toEqual([
      [0, 2],
      [5, 7],
    ]);
    expect(await batchesOf(options(10_000), groups[1])).toEqual([['E']]);
  });
});
