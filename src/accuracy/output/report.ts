// The report: one self-contained HTML file (inline CSS and SVG, no script, no network) with
// forecast against actual per site, error by lead time per model, error by hour of day, skill
// against the reference, and the metrics table with a plain-language line on each metric.
// Plots are vega-lite specs compiled to vega and rendered to SVG headless, in a worker (plots.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as vl from 'vega-lite';
import { subjectLabel } from './format.js';
import { plotDrawer, type PlotDrawer } from './plots.js';
import { orderedNames, type AccuracyRow, type SqlRunner } from '../compute/metrics.js';
import { FLAGS, type FlagName } from '../../warehouse/flags.js';
import type { FlagCount } from '../input/quality.js';

export interface SeriesPoint {
  site: string | null;
  time: number;
  forecast: number | null;
  actual: number | null;
  reference: number | null;
}

/** Days of forecast against actual shown per site, and the most sites drawn. */
const SERIES_DAYS = 7;
export const SERIES_SITES = 8;

/**
 * The latest days of each site: per valid time the most recently issued site forecast (what was
 * finally served), the actual and the reference, from the pairs relation. The sites drawn and
 * their last valid times come first, from one group per site, so that the per-valid-time groups
 * are those of the drawn days alone: grouped over every pair first, the statement's memory grew
 * with the ledger (a group per site and valid time of the whole window).
 */
export async function reportSeries(sql: SqlRunner, pairs: string): Promise<SeriesPoint[]> {
  const rows = await sql.all<{
    site: string | null;
    time: Date;
    forecast: number | null;
    actual: number | null;
    reference: number | null;
  }>(reportSeriesSql(pairs));
  return rows.map((r) => ({ ...r, time: r.time.getTime() }));
}

/** The report's series as SQL (site, time, forecast, actual, reference), by site id and time. */
export function reportSeriesSql(pairs: string): string {
  return `
    WITH sites AS (
      SELECT site_id, max(valid_time) AS last FROM ${pairs} WHERE subject IN ('forecast', 'pairs')
      GROUP BY site_id ORDER BY site_id NULLS FIRST LIMIT ${SERIES_SITES}
    )
    SELECT p.site_id AS site, p.valid_time AS time, arg_max(p.forecast, coalesce(p.issue_time, p.valid_time)) AS forecast,
      any_value(p.actual) AS actual, arg_max(p.reference, coalesce(p.issue_time, p.valid_time)) AS reference
    FROM ${pairs} p JOIN sites s ON p.site_id IS NOT DISTINCT FROM s.site_id
    WHERE p.subject IN ('forecast', 'pairs') AND p.valid_time > s.last - INTERVAL ${SERIES_DAYS} DAY
    GROUP BY p.site_id, p.valid_time
    ORDER BY site, time`;
}

/** What each metric means, in a line a planner can read. */
export const METRIC_MEANINGS: Record<string, string> = {
  n: 'Number of forecast points scored (after alignment and the inner join).',
  dropped: 'Forecast points left out because the actual, the forecast, the reference or a quantile was missing.',
  dropped_flagged:
    'Of the dropped points, those whose actual failed a data-quality check (see Data quality of the actuals).',
  mape_skipped: 'Points MAPE left out because the actual was (near) zero, e.g. solar at night.',
  mae: 'Mean absolute error (kW): the typical size of a miss, whatever its sign.',
  mbe: 'Mean bias error (kW): positive means the forecast is too high on average, negative too low.',
  rmse: 'Root mean square error (kW): like MAE but large misses weigh more.',
  mape: 'Mean absolute percentage error (%): the miss as a share of what was measured.',
  nmae: 'MAE as a percentage of the capacity at each time: comparable across sites of different size.',
  nmbe: 'MBE as a percentage of capacity.',
  nrmse: 'RMSE as a percentage of capacity.',
  skill:
    'Forecast skill against the naive reference (persistence): 1 - RMSE/RMSE_ref; 0 means no better than persistence, 1 perfect, negative worse.',
  rmse_ref: "RMSE (kW) of the reference: yesterday's (solar, wind) or last week's (load) actuals at the same time.",
  r: 'Pearson correlation of forecast and actual: 1 means they rise and fall together.',
  r2: "Coefficient of determination: the share of the actual's variation the forecast explains (1 is perfect, below 0 worse than the mean).",
  crmse: 'Centred RMSE (kW): the RMSE left after removing the bias; the error in the shape.',
  red: "Relative Euclidean distance: how far the forecast's mean, spread and correlation are from the actual's, in one number (0 is perfect).",
  ksi: 'Kolmogorov-Smirnov integral (kW): how far the distribution of forecasts is from that of actuals, regardless of timing.',
  over: 'OVER (kW): the part of KSI beyond what chance allows (1.63/sqrt(n)).',
  cpi: 'Combined performance index (kW): (KSI + OVER + 2 RMSE) / 4.',
  pinball: 'Pinball loss (kW) at one quantile level: how well that quantile is placed; lower is better.',
  crps: 'Continuous ranked probability score (kW) of the distribution the quantiles describe, by trapezoids over the quantiles as SFA; lower is better.',
  crps_pinball: 'CRPS approximated as twice the mean pinball loss over the levels.',
  qss: 'Quantile skill score at one level: 1 - pinball/pinball of the reference (persistence as a single value); above 0 is better than persistence.',
  below: 'Share of actuals (%) at or below the quantile: equals the level if the quantile is calibrated.',
  bs: 'Brier score of "actual at or below the quantile", forecast with the level as probability (0 is perfect).',
  rel: 'Reliability of that probability (0 when the quantile is calibrated), from the Brier decomposition.',
  res: 'Resolution from the Brier decomposition (0 for a single probability per level).',
  unc: 'Uncertainty from the Brier decomposition: base rate × (1 - base rate).',
  crps_ref: 'CRPS (kW) of the reference, a single value: its mean absolute error.',
  crpss: 'CRPS skill score: 1 - CRPS/CRPS of the reference; above 0 is better than persistence.',
  coverage: 'Share of actuals (%) inside the range from the lowest to the highest quantile.',
  coverage_nominal: 'The share (%) that range should hold if the quantiles are right.',
};

const EVENT_MEANINGS: Record<string, string> = {
  tp: 'Hits: forecast and observed event',
  fp: 'False alarms: forecast event that was not observed',
  tn: 'Correct negatives: neither forecast nor observed',
  fn: 'Misses: observed event that was not forecast',
  pod: 'Probability of detection: share of observed events that were forecast',
  far: 'False alarm ratio: share of forecast events that did not happen',
  pofd: 'Probability of false detection: share of non-events forecast as events',
  csi: 'Critical success index: hits / (hits + misses + false alarms)',
  ebias: 'Event bias: forecast events per observed event (1 is unbiased)',
  ea: 'Event accuracy: share of pairs judged right',
};

/** A field's meaning: per-level fields (pinball_q10) by their metric, event fields (pod_high) with the event named. */
const SUMMARY_MEANINGS: Record<string, string> = {
  mean: 'Mean',
  min: 'Smallest',
  max: 'Largest',
  median: 'Median',
  std: 'Standard deviation (population)',
};

function meaningOf(name: string): string {
  const summary = /^(actual|forecast)_(mean|min|max|median|std)$/.exec(name);
  if (summary) return `${SUMMARY_MEANINGS[summary[2]]} of the scored ${summary[1]}s (kW), to read the errors against.`;
  const level = /^([a-z]+)_q[0-9.]+$/.exec(name);
  if (level && METRIC_MEANINGS[level[1]]) return METRIC_MEANINGS[level[1]];
  const event = /^([a-z]+)_(.+)$/.exec(name);
  if (event && EVENT_MEANINGS[event[1]] && !METRIC_MEANINGS[name])
    return `${EVENT_MEANINGS[event[1]]} (event "${event[2]}"; docs/accuracy.md, Events).`;
  return METRIC_MEANINGS[name] ?? '';
}

const finite = (v: number | undefined): v is number => v !== undefined && Number.isFinite(v);

function seriesSpec(series: SeriesPoint[]): vl.TopLevelSpec {
  const values = series.flatMap((p) =>
    (['forecast', 'actual', 'reference'] as const)
      .filter((s) => p[s] !== null)
      .map((s) => ({ site: p.site ?? 'all', time: p.time, series: s, kW: p[s] })),
  );
  return {
    data: { values },
    facet: {
      row: {
        field: 'site',
        type: 'nominal',
        title: null,
        header: { labelAngle: 0, labelAlign: 'left', labelFontWeight: 'bold' },
      },
    },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 980,
      height: 160,
      mark: { type: 'line', strokeWidth: 1.2 },
      encoding: {
        x: { field: 'time', type: 'temporal', title: 'valid time (UTC)' },
        y: { field: 'kW', type: 'quantitative', title: 'kW' },
        color: {
          field: 'series',
          type: 'nominal',
          scale: { domain: ['actual', 'forecast', 'reference'], range: ['#222', '#1f77b4', '#bbb'] },
        },
      },
    },
  };
}

/** Rows of one group as plot data: one point per subject and key, with the metric that is finite. */
function groupValues(rows: AccuracyRow[], group: string, metric: string) {
  return rows
    .filter((r) => r.group === group && finite(r.values[metric]))
    .map((r) => ({ subject: subjectLabel(r), key: r.key, order: r.keyOrder, value: r.values[metric] }));
}

const DISPLAY_NAMES: Record<string, string> = { nrmse: 'nRMSE', nmae: 'nMAE', rmse: 'RMSE', mae: 'MAE' };

/** The normalised metric when capacities are known, else the plain one. */
function errorMetric(rows: AccuracyRow[], normalised: string, plain: string): { name: string; title: string } {
  return rows.some((r) => finite(r.values[normalised]))
    ? { name: normalised, title: `${DISPLAY_NAMES[normalised]} (% of capacity)` }
    : { name: plain, title: `${DISPLAY_NAMES[plain]} (kW)` };
}

function lineByKeySpec(values: ReturnType<typeof groupValues>, xTitle: string, yTitle: string): vl.TopLevelSpec {
  return {
    data: { values },
    width: 520,
    height: 260,
    mark: { type: 'line', point: true },
    encoding: {
      // min: a key some subjects lack must not sort earlier by a smaller sum
      x: { field: 'key', type: 'ordinal', sort: { field: 'order', op: 'min' }, title: xTitle },
      y: { field: 'value', type: 'quantitative', title: yTitle },
      color: { field: 'subject', type: 'nominal', title: null },
    },
  };
}

function skillSpec(values: ReturnType<typeof groupValues>, xTitle: string): vl.TopLevelSpec {
  return {
    data: { values },
    width: 520,
    height: 260,
    mark: 'bar',
    encoding: {
      // min: a key some subjects lack must not sort earlier by a smaller sum
      x: { field: 'key', type: 'ordinal', sort: { field: 'order', op: 'min' }, title: xTitle },
      xOffset: { field: 'subject' },
      y: { field: 'value', type: 'quantitative', title: 'skill vs persistence (1 - RMSE/RMSE_ref)' },
      color: { field: 'subject', type: 'nominal', title: null },
    },
  };
}

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function formatCell(value: number | undefined): string {
  if (value === undefined) return '';
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(1) : value.toPrecision(4);
}

/** Group total as a table with one row per metric, one column per forecast, and what the metric means. */
function metricsTableHtml(rows: AccuracyRow[]): string {
  const totals = rows.filter((r) => r.group === 'total');
  const names = ['n', ...new Set(totals.flatMap((r) => orderedNames(r.values)))].filter(
    (n) => !n.startsWith('dropped_') || n === 'dropped_flagged',
  );
  const value = (r: AccuracyRow, name: string) => formatCell(name === 'n' ? r.n : r.values[name]);
  const header = ['metric', ...totals.map(subjectLabel), 'what it means']
    .map((h) => `<th>${escapeHtml(h)}</th>`)
    .join('');
  const body = names.map(
    (name) =>
      `<tr><td>${escapeHtml(name)}</td>${totals.map((r) => `<td>${value(r, name)}</td>`).join('')}<td class="meaning">${escapeHtml(meaningOf(name))}</td></tr>`,
  );
  return `<div class="wide"><table><thead><tr>${header}</tr></thead><tbody>${body.join('')}</tbody></table></div>`;
}

export interface ReportInput {
  title: string;
  rows: AccuracyRow[];
  series: SeriesPoint[];
  generatedAt: number;
  /** Lines under the title: source, window, time zone, labels, skipped sites. */
  notes: string[];
  /** Flagged actuals in the window per site and flag (a warehouse report); absent for a pairs file. */
  flags?: FlagCount[];
  /** Whether flagged actuals were scored (--include-flagged). */
  includeFlagged?: boolean;
}

/** Flagged actuals per site as bars, stacked by flag in bit order, the sites in the order given. */
function flagsSpec(flags: FlagCount[], sites: string[]): vl.TopLevelSpec {
  const order = Object.keys(FLAGS);
  return {
    data: { values: flags.map((f) => ({ ...f, order: order.indexOf(f.flag) })) },
    width: 520,
    height: { step: 22 },
    mark: 'bar',
    encoding: {
      y: { field: 'site', type: 'nominal', title: null, sort: sites },
      x: {
        field: 'count',
        type: 'quantitative',
        title: 'flagged actuals',
        stack: 'zero',
        axis: { format: 'd', tickMinStep: 1 },
      },
      color: { field: 'flag', type: 'nominal', title: null, sort: order },
      order: { field: 'order' },
    },
  };
}

/**
 * The sites whose actuals the report's flag section shows, most flagged first: a plot and a
 * table of every site would grow with the fleet (a bar per site); the rest are in the
 * warehouse's actual_flag_counts view.
 */
export const FLAGGED_SITES_SHOWN = 20;

/** Flag counts of the most flagged sites as a plot and a table, one row per site and a column per flag seen. */
async function flagsHtml(draw: PlotDrawer['draw'], flags: FlagCount[], included: boolean): Promise<string> {
  const reading = included
    ? 'Actuals that failed a data-quality check, per site: scored anyway (--include-flagged).'
    : 'Actuals that failed a data-quality check, per site: left out of every score above (column dropped_flagged counts the forecast points that lost their actual this way).';
  if (flags.length === 0)
    return `<section><h2>Data quality of the actuals</h2><p>${escapeHtml(reading)}</p><p>No actual in the window was flagged.</p></section>`;
  const totals = new Map<string, number>();
  for (const f of flags) totals.set(f.site, (totals.get(f.site) ?? 0) + f.count);
  const sites = [...totals.keys()]
    .sort((a, b) => totals.get(b)! - totals.get(a)! || (a < b ? -1 : 1))
    .slice(0, FLAGGED_SITES_SHOWN);
  const shown = flags.filter((f) => sites.includes(f.site));
  const names = (Object.keys(FLAGS) as FlagName[]).filter((f) => shown.some((c) => c.flag === f));
  const count = (site: string, flag: FlagName) => shown.find((f) => f.site === site && f.flag === flag)?.count ?? 0;
  const header = ['site', ...names].map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = sites.map(
    (site) => `<tr><td>${escapeHtml(site)}</td>${names.map((f) => `<td>${count(site, f)}</td>`).join('')}</tr>`,
  );
  const scope =
    totals.size > sites.length
      ? ` ${totals.size} sites have flagged actuals; the ${sites.length} with the most are shown (scored from a warehouse, every site's counts are in its view actual_flag_counts).`
      : '';
  const aid =
    'Read: a long bar is a site whose actuals often fail a check, so its scores rest on fewer points; the flag names the likely cause (a frozen meter is stale, an inverter limit clipping).';
  return `<section><h2>Data quality of the actuals</h2><p>${escapeHtml(reading)}${escapeHtml(scope)} Each flag is defined in docs/accuracy.md and in the warehouse table quality_flags.</p>
${await draw(flagsSpec(shown, sites))}<p class="aid">${escapeHtml(aid)}</p>
<div class="wide"><table><thead><tr>${header}</tr></thead><tbody>${body.join('')}</tbody></table></div></section>`;
}

/** A plot under its title and what it shows, with a one-line reading aid beneath. */
async function section(
  draw: PlotDrawer['draw'],
  title: string,
  shows: string,
  spec: vl.TopLevelSpec | null,
  aid: string,
): Promise<string> {
  const body = spec
    ? await draw(spec)
    : '<p class="empty">No data for this plot (its group was not scored or has no values).</p>';
  return `<section><h2>${escapeHtml(title)}</h2><p>${escapeHtml(shows)}</p>${body}<p class="aid">${escapeHtml(aid)}</p></section>`;
}

/** Per quantile subject of group total: the share of actuals at or below each quantile against its level. */
function reliabilityValues(rows: AccuracyRow[]) {
  return rows
    .filter((r) => r.group === 'total')
    .flatMap((r) =>
      Object.entries(r.values).flatMap(([name, observed]) => {
        const level = /^below_q([0-9.]+)$/.exec(name);
        return level && finite(observed) ? [{ subject: subjectLabel(r), level: Number(level[1]), observed }] : [];
      }),
    );
}

/** The reliability diagram of quantile forecasts: observed share below each quantile against its level, and the diagonal. */
function reliabilitySpec(values: ReturnType<typeof reliabilityValues>): vl.TopLevelSpec {
  const axis = (title: string) => ({ type: 'quantitative' as const, title, scale: { domain: [0, 100] } });
  return {
    width: 360,
    height: 360,
    layer: [
      {
        data: {
          values: [
            { level: 0, observed: 0 },
            { level: 100, observed: 100 },
          ],
        },
        mark: { type: 'line', color: '#bbb', strokeDash: [4, 4] },
        encoding: { x: { field: 'level', ...axis('quantile level (%)') }, y: { field: 'observed', ...axis('') } },
      },
      {
        data: { values },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'level', ...axis('quantile level (%)') },
          y: { field: 'observed', ...axis('actuals at or below the quantile (%)') },
          color: { field: 'subject', type: 'nominal', title: null },
        },
      },
    ],
  };
}

/** The report as one HTML string. */
export async function renderReport(input: ReportInput): Promise<string> {
  const drawer = plotDrawer();
  try {
    return await reportHtml(input, drawer.draw);
  } finally {
    await drawer.close();
  }
}

async function reportHtml(input: ReportInput, draw: PlotDrawer['draw']): Promise<string> {
  const { rows } = input;
  const err = errorMetric(rows, 'nrmse', 'rmse');
  const hourErr = errorMetric(rows, 'nmae', 'mae');
  const lead = groupValues(rows, 'lead', err.name);
  const hour = groupValues(rows, 'hour', hourErr.name);
  const skillByLead = groupValues(rows, 'lead', 'skill');
  const skill = skillByLead.length ? skillByLead : groupValues(rows, 'total', 'skill');
  const reliability = reliabilityValues(rows);
  const sections = [
    await section(
      draw,
      'Forecast against actual',
      `The last ${SERIES_DAYS} days per site: the latest issued forecast, the actual and the persistence reference.`,
      input.series.length ? seriesSpec(input.series) : null,
      'Read: where the blue forecast leaves the black actual it missed; the grey persistence is the bar to beat.',
    ),
    await section(
      draw,
      'Error by lead time',
      `${err.title} per forecast and model, by time between issue and valid time.`,
      lead.length ? lineByKeySpec(lead, 'lead time', err.title) : null,
      'Read: lower is better; a line that climbs to the right is a forecast that degrades further ahead, so compare at the lead times you act on.',
    ),
    await section(
      draw,
      'Error by hour of day',
      `${hourErr.title} per forecast, by hour of the day (an interval-ending value counts in the hour it closes).`,
      hour.length ? lineByKeySpec(hour, 'hour of day', hourErr.title) : null,
      'Read: lower is better; solar errors peak where output does (midday), while a peak at dawn or dusk points at timing.',
    ),
    await section(
      draw,
      'Skill against the reference',
      'Skill against persistence (1 - RMSE/RMSE_ref) per forecast, by lead time.',
      skill.length ? skillSpec(skill, skillByLead.length ? 'lead time' : 'total') : null,
      'Read: above 0 the forecast beats persistence, 1 would be perfect, below 0 persistence did better.',
    ),
    await section(
      draw,
      'Reliability of the quantile models',
      'Per quantile level, the share of actuals at or below the quantile (all points), against the level; the dashed diagonal is perfect calibration.',
      reliability.length ? reliabilitySpec(reliability) : null,
      'Read: on the diagonal the quantiles are calibrated; above it actuals fell below the quantile too often (it is too high), below it too rarely (too low).',
    ),
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(input.title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; max-width: 1250px; }
h1 { margin-bottom: .2rem; } .notes { color: #555; margin-top: 0; }
section { margin: 2rem 0; } table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, td.meaning, th:last-child { text-align: left; }
td.meaning { white-space: normal; color: #444; min-width: 28rem; }
.empty { color: #999; } .aid { color: #555; font-style: italic; margin-top: .3rem; }
svg.marks { max-width: 100%; height: auto; } .wide { overflow-x: auto; }
</style></head><body>
<h1>${escapeHtml(input.title)}</h1>
<p class="notes">${input.notes.map(escapeHtml).join('<br>')}<br>Generated ${new Date(input.generatedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC</p>
<section><h2>Metrics (all points)</h2>${metricsTableHtml(rows)}</section>
${sections.join('\n')}
${input.flags ? await flagsHtml(draw, input.flags, input.includeFlagged === true) : ''}
</body></html>
`;
}

export async function writeReport(path: string, input: ReportInput): Promise<void> {
  const html = await renderReport(input);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, html);
}
