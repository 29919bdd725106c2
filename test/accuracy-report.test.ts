// The report: one self-contained HTML file (no script, nothing fetched) with the four plots as
// SVG and the metrics table with a plain-language line per metric.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { METRIC_MEANINGS, renderReport } from '../src/accuracy/report.js';
import { scorePairsFile } from '../src/accuracy/score.js';

const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-report-'));

function pairsCsv(): string {
  const rows = ['valid_time,issue_time,actual,forecast,reference,capacity'];
  for (let h = 0; h < 72; h++) {
    const t = Date.UTC(2026, 5, 1, h);
    const sun = (x: number) => Math.max(0, 500 * Math.sin((Math.PI * ((x % 24) - 6)) / 12));
    rows.push(
      [
        new Date(t).toISOString(),
        new Date(t - ((h % 30) + 1) * 3_600_000).toISOString(),
        sun(h),
        sun(h) * 1.1,
        sun(h - 24) + 5,
        1000,
      ].join(','),
    );
  }
  return `${rows.join('\n')}\n`;
}

describe('report', () => {
  it('is one HTML file with the four plots as inline SVG, the metrics table and what each metric means', async () => {
    const file = join(dir, 'pairs.csv');
    writeFileSync(file, pairsCsv());
    const result = await scorePairsFile(file, 'ending', {
      groups: ['total', 'lead', 'hour'],
      tz: 'UTC',
      leadBuckets: [6 * 3_600_000, 24 * 3_600_000],
      deadbandPct: 0,
      mapeMinActualPct: 1,
      withSeries: true,
    });
    expect(result.series).toHaveLength(72);
    const html = await renderReport({
      title: 'Test report',
      rows: result.rows,
      series: result.series,
      generatedAt: 0,
      notes: ['from a test'],
    });
    for (const heading of [
      'Forecast against actual',
      'Error by lead time',
      'Error by hour of day',
      'Skill against the reference',
    ]) {
      const section = html.slice(html.indexOf(heading));
      expect(section.slice(0, section.indexOf('</section>'))).toContain('<svg');
    }
    expect(html).not.toContain('<script');
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
    expect(html).toContain(METRIC_MEANINGS.nmae);
    expect(html).toContain(METRIC_MEANINGS.skill.replace(/'/g, '&#39;').slice(0, 40));
  });
});
