// The report: one self-contained HTML file (no script, nothing fetched) with the four plots as
// SVG and the metrics table with a plain-language line per metric.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FLAGGED_SITES_SHOWN, METRIC_MEANINGS, renderReport } from '../src/accuracy/output/report.js';
import { plotDrawer } from '../src/accuracy/output/plots.js';
import { scorePairsFile } from '../src/accuracy/score.js';
import { REPORT_SCORING } from './accuracy-support.js';

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
    const result = await scorePairsFile(file, 'ending', REPORT_SCORING);
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

describe('report of quantile models and flagged actuals', () => {
  it('draws the reliability diagram and the flag counts, each plot with a reading aid beneath it', async () => {
    // 3 actuals in 4 at or below the 10% quantile (far too high), 2 in 4 below the 90% one (too low)
    const file = join(dir, 'quantiles.csv');
    writeFileSync(
      file,
      `valid_time,actual,forecast,q10,q90
2026-06-01T01:00:00Z,1,2,2,9
2026-06-01T02:00:00Z,5,5,4,4
2026-06-01T03:00:00Z,6,5,7,5
2026-06-01T04:00:00Z,8,7,9,9
`,
    );
    const result = await scorePairsFile(file, 'ending', {
      groups: ['total', 'hour'],
      tz: 'UTC',
      leadBuckets: [],
      deadbandPct: 0,
      mapeMinActualPct: 1,
    });
    expect([result.rows[0].values.below_q10, result.rows[0].values.below_q90]).toEqual([75, 50]);
    const html = await renderReport({
      title: 'Quantiles',
      rows: result.rows,
      series: [],
      generatedAt: 0,
      notes: [],
      flags: [
        { site: 'North', flag: 'stale', count: 3 },
        { site: 'North', flag: 'night', count: 1 },
        { site: 'South', flag: 'outage', count: 2 },
      ],
    });
    for (const heading of [
      'Error by hour of day',
      'Reliability of the quantile models',
      'Data quality of the actuals',
    ]) {
      const section = html.slice(html.indexOf(`<h2>${heading}</h2>`));
      const body = section.slice(0, section.indexOf('</section>'));
      // the plot, then a one-line reading aid after it
      expect(body, heading).toMatch(/<svg[\s\S]*<\/svg><p class="aid">Read: [^<]+<\/p>/);
    }
    expect(html).toContain('<td>North</td><td>3</td><td>1</td><td>0</td>');
  });
});

describe("the report's flag section at many sites", () => {
  it('draws and lists the most flagged sites only, and says how many have flags and where the rest are', async () => {
    const flags = Array.from({ length: 200 }, (_, i) => ({
      site: `site-${String(i).padStart(3, '0')}`,
      flag: 'stale' as const,
      count: i + 1,
    }));
    const html = await renderReport({ title: 'Fleet', rows: [], series: [], generatedAt: 0, notes: [], flags });
    const section = html.slice(html.indexOf('<h2>Data quality of the actuals</h2>'));
    const rows = [...section.matchAll(/<tr><td>(site-\d+)<\/td><td>(\d+)<\/td><\/tr>/g)].map((m) => [
      m[1],
      Number(m[2]),
    ]);
    expect(rows).toHaveLength(FLAGGED_SITES_SHOWN);
    expect(rows[0]).toEqual(['site-199', 200]);
    expect(rows.at(-1)).toEqual([`site-${200 - FLAGGED_SITES_SHOWN}`, 200 - FLAGGED_SITES_SHOWN + 1]);
    expect(section).toContain(`200 sites have flagged actuals; the ${FLAGGED_SITES_SHOWN} with the most are shown`);
    expect(section).not.toContain('site-000');
  });
});

describe("the report's plot worker", () => {
  const point = {
    data: { values: [{ x: 1 }, { x: 2 }] },
    mark: 'point',
    encoding: { x: { field: 'x', type: 'quantitative' } },
  } as const;

  it('answers a spec it cannot draw with an error, draws the next one, and refuses to draw once closed', async () => {
    const drawer = plotDrawer();
    try {
      await expect(drawer.draw({ ...point, mark: 'no-such-mark' } as never)).rejects.toThrow(
        /^drawing a report plot: /,
      );
      expect(await drawer.draw(point)).toMatch(/^<svg[^>]*>.*<\/svg>$/s);
    } finally {
      await drawer.close();
    }
    await expect(drawer.draw(point)).rejects.toThrow(/plot worker ended/);
  });
});
