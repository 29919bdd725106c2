// What the accuracy tests share.
import { expect } from 'vitest';
import type { AccuracyRow } from '../src/accuracy/compute/metrics.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import type { MetricOptions } from '../src/accuracy/compute/options.js';
import type { ScoreExtras } from '../src/accuracy/score.js';

/** The same rows in the same order, every metric equal within 1e-9 relative (NaN and Infinity as text). */
export function expectSameMetrics(a: AccuracyRow[], b: AccuracyRow[]): void {
  expect(a.map((r) => [r.subject, r.model, r.group, r.key])).toEqual(
    b.map((r) => [r.subject, r.model, r.group, r.key]),
  );
  for (const [i, row] of a.entries()) {
    const other = b[i];
    expect(Object.keys(row.values).sort()).toEqual(Object.keys(other.values).sort());
    for (const [metric, value] of Object.entries(row.values)) {
      const expected = other.values[metric];
      if (!Number.isFinite(value) || !Number.isFinite(expected)) expect(String(value)).toBe(String(expected));
      else
        expect(Math.abs(value - expected), `${row.subject} ${row.group} ${row.key} ${metric}`).toBeLessThanOrEqual(
          1e-9 * Math.max(1, Math.abs(expected)),
        );
    }
  }
}

/** The ledger, hot and cold, as a sorted list of rows, each quantile set with its levels (pids differ between runs). */
export async function ledgerRows(wh: Warehouse): Promise<string[]> {
  // hot and cold: a ledger's closed days are in the cold store once a publish moved them
  const rows = await wh.cold.withHistory(undefined, () =>
    wh.all<{ row: string }>(`
    SELECT concat_ws('/', p.subject, p.model, p.site_id, p.served_model, p.issue_time, p.valid_time, p.group_time,
      p.reference_time, p.forecast, p.actual, p.reference, p.capacity, p.drop_reason) || coalesce((SELECT list((q.level, q.q) ORDER BY q.level)::VARCHAR
      FROM accuracy_pair_quantiles q WHERE q.pid = p.pid), '') AS row
    FROM accuracy_pairs p ORDER BY row`),
  );
  return rows.map((r) => r.row);
}

/** How the report tests score their pairs files: total, lead time and hour, with the series drawn. */
export const REPORT_SCORING: MetricOptions & ScoreExtras = {
  groups: ['total', 'lead', 'hour'],
  tz: 'UTC',
  leadBuckets: [6 * 3_600_000, 24 * 3_600_000],
  deadbandPct: 0,
  mapeMinActualPct: 1,
  withSeries: true,
};
