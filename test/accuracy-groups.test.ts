// Grouping: an interval-ending value falls into the hour it closes (14:00 ending -> hour 13),
// in UTC and in a report time zone; lead-time buckets; weekday, month and date keys.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { leadBucketLabels, type Group } from '../src/accuracy/compute/groups.js';
import type { IntervalLabel } from '../src/warehouse/rows.js';
import { scorePairsFile } from '../src/accuracy/score.js';

const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-groups-'));
const HOUR = 3_600_000;

async function keys(csv: string, group: Group, label: IntervalLabel, tz = 'UTC') {
  const file = join(dir, `${group}-${label}-${tz.replace('/', '_')}.csv`);
  writeFileSync(file, csv);
  const { rows } = await scorePairsFile(file, label, {
    groups: [group],
    tz,
    leadBuckets: [6 * HOUR, 24 * HOUR],
    deadbandPct: 0,
    mapeMinActualPct: 1,
  });
  return rows.map((r) => [r.key, r.n]);
}

const AT_14 = 'valid_time,actual,forecast\n2026-07-01T14:00:00Z,1,2\n';

describe('groups', () => {
  it('puts 14:00 interval-ending into hour 13, and 14:00 beginning or instant into hour 14', async () => {
    expect(await keys(AT_14, 'hour', 'ending')).toEqual([['13', 1]]);
    expect(await keys(AT_14, 'hour', 'beginning')).toEqual([['14', 1]]);
    expect(await keys(AT_14, 'hour', 'instant')).toEqual([['14', 1]]);
  });

  it('applies the rule in the report time zone: 14:00 Stockholm summer time (12:00Z) ending is hour 13', async () => {
    const at14Stockholm = 'valid_time,actual,forecast\n2026-07-01T14:00:00+02:00,1,2\n';
    expect(await keys(at14Stockholm, 'hour', 'ending', 'Europe/Stockholm')).toEqual([['13', 1]]);
    expect(await keys(AT_14, 'hour', 'ending', 'Europe/Stockholm')).toEqual([['15', 1]]);
    expect(await keys(AT_14, 'hour', 'ending', 'America/New_York')).toEqual([['09', 1]]);
  });

  it('counts midnight interval-ending as the day before, in weekday, month and date', async () => {
    const midnight = 'valid_time,actual,forecast\n2026-08-01T00:00:00Z,1,2\n'; // a Saturday; closes Friday 31 July
    expect(await keys(midnight, 'date', 'ending')).toEqual([['2026-07-31', 1]]);
    expect(await keys(midnight, 'weekday', 'ending')).toEqual([['Fri', 1]]);
    expect(await keys(midnight, 'month', 'ending')).toEqual([['Jul', 1]]);
    expect(await keys(midnight, 'date', 'beginning')).toEqual([['2026-08-01', 1]]);
  });

  it('buckets lead time (valid minus issue time), in bucket order', async () => {
    const csv = `valid_time,issue_time,actual,forecast
2026-07-02T12:00:00Z,2026-07-02T13:00:00Z,1,2
2026-07-02T12:00:00Z,2026-07-02T09:00:00Z,1,2
2026-07-02T12:00:00Z,2026-07-02T06:00:00Z,1,2
2026-07-02T12:00:00Z,2026-07-01T06:00:00Z,1,2
2026-07-02T12:00:00Z,2026-07-01T00:00:00Z,1,2
`;
    expect(leadBucketLabels([6 * HOUR, 24 * HOUR])).toEqual(['<0h', '0-6h', '6-24h', '24h+']);
    expect(await keys(csv, 'lead', 'ending')).toEqual([
      ['<0h', 1],
      ['0-6h', 1],
      ['6-24h', 1],
      ['24h+', 2],
    ]);
  });
});
