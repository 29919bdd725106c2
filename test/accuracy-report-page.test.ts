// The report as a person opens it: in Debian's headless chromium, at a laptop's width and at a
// narrow one. It fetches nothing but itself, runs and logs nothing, draws every plot, and the page
// never scrolls sideways: a plot shrinks to the page, a table wider than it scrolls in its own box.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeReport } from '../src/accuracy/output/report.js';
import { scorePairsFile } from '../src/accuracy/score.js';
import { REPORT_SCORING } from './accuracy-support.js';
import { type Browser, startBrowser } from './chromium.js';
import { needTool, titled } from './tools.js';

const hasChromium = needTool('chromium');
const dir = mkdtempSync(join(tmpdir(), 'efsync-report-page-'));

/** Three days of hourly pairs of two models at eight sites, with lead times from one to thirty hours. */
function pairsCsv(): string {
  const rows = ['site,model,valid_time,issue_time,actual,forecast,reference,capacity'];
  const sun = (h: number) => Math.max(0, 500 * Math.sin((Math.PI * ((h % 24) - 6)) / 12));
  for (let site = 0; site < 8; site++)
    for (const [model, bias] of [
      ['persistence plus', 1.1],
      ['numerical weather', 0.95],
    ] as const)
      for (let h = 0; h < 72; h++) {
        const t = Date.UTC(2026, 5, 1, h);
        const issue = new Date(t - ((h % 30) + 1) * 3_600_000).toISOString();
        const actual = sun(h) * (1 + site / 20);
        const row = [
          `site-${site}`,
          model,
          new Date(t).toISOString(),
          issue,
          actual,
          actual * bias,
          sun(h - 24) + 5,
          1000,
        ];
        rows.push(row.join(','));
      }
  return `${rows.join('\n')}\n`;
}

interface Layout {
  scripts: number;
  scrollWidth: number;
  innerWidth: number;
  plots: { section: string; left: number; right: number; height: number }[];
}

const LAYOUT = `(() => ({
  scripts: document.scripts.length,
  scrollWidth: document.documentElement.scrollWidth,
  innerWidth,
  plots: [...document.querySelectorAll('section svg')].map((svg) => {
    const box = svg.getBoundingClientRect();
    return { section: svg.closest('section').querySelector('h2').textContent, left: box.left, right: box.right, height: box.height };
  }),
}))()`;

describe.skipIf(!hasChromium)(titled('the report in chromium', 'chromium', hasChromium), () => {
  let browser: Browser;
  const report = join(dir, 'report.html');

  beforeAll(async () => {
    const pairs = join(dir, 'pairs.csv');
    writeFileSync(pairs, pairsCsv());
    const result = await scorePairsFile(pairs, 'ending', REPORT_SCORING);
    const flags = Array.from({ length: 30 }, (_, i) => ({
      site: `a site with a long name, number ${i}`,
      flag: i % 2 ? ('stale' as const) : ('clipping' as const),
      count: i + 1,
    }));
    await writeReport(report, {
      title: 'Eight sites',
      rows: result.rows,
      series: result.series,
      generatedAt: 0,
      notes: [],
      flags,
    });
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it.each([1280, 800])(
    'at %i CSS pixels wide: every plot drawn within the page, nothing fetched, run or logged',
    async (width) => {
      const load = await browser.open(report, width);
      expect(load.requests).toEqual([`file://${report}`]);
      expect(load.logged).toEqual([]);
      const layout = await browser.evaluate<Layout>(LAYOUT);
      expect(layout.scripts).toBe(0);
      expect(layout.innerWidth).toBe(width);
      expect(layout.scrollWidth).toBeLessThanOrEqual(width);
      expect(layout.plots.map((p) => p.section)).toEqual([
        'Forecast against actual',
        'Error by lead time',
        'Error by hour of day',
        'Skill against the reference',
        'Data quality of the actuals',
      ]);
      for (const plot of layout.plots) {
        expect(plot.left, plot.section).toBeGreaterThanOrEqual(0);
        expect(plot.right, plot.section).toBeLessThanOrEqual(width);
        expect(plot.height, plot.section).toBeGreaterThan(100);
      }
    },
  );
});
