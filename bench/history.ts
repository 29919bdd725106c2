// The history bench (`npm run bench -- --history-days D [--sites N] [--nights 7] [--baseline-days 7]`):
// a warehouse D days deep, then consecutive nightly runs a day apart, each `efsync run nightly` in
// its own process with the emulator's clock (`--now`, its sites kept in `--state`) and efsync's
// (`EFSYNC_NOW`) moved one day before it. Per night: exit code, wall time, each step's seconds and
// peak RSS (the summary lines of the chain and of the publish, src/runner/measure.ts), the
// process's peak RSS, published and writer file sizes, rows. The same at the baseline depth, and
// the ratios. Each depth's finished nights go to a journal (`nights.jsonl` in its folder) as they
// end, so that a bench of hours stopped half-way goes on from where it stopped in the same work
// folder. Prints figures; asserts nothing.
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runMeasured, startEmulatorProcess } from './process.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { writerPathOf } from '../src/warehouse/warehouse.js';
import { NIGHTLY_STEPS } from '../jobs/nightly.js';
import { DAY } from '../src/time.js';
import { DEFAULT_BUDGET, parseSize } from '../src/resources/budget.js';

const API_KEY = 'bench-key';

/** The steps a night reports, in order: the nightly chain's, then the runner's publish after it. */
export const NIGHT_STEPS = [...NIGHTLY_STEPS, 'publish'] as const;

export interface StepFigures {
  status: string;
  seconds: number;
  peakRssMb: number | null;
}

export interface NightFigures {
  /** 0 builds the warehouse (nights a month apart, up to D days of history); 1.. are the measured nights. */
  night: number;
  now: string;
  code: number | null;
  seconds: number;
  peakRssMb: number;
  steps: Record<(typeof NIGHT_STEPS)[number], StepFigures | null>;
  publishedMb: number;
  writerMb: number;
  rowsWritten: number;
  /** Rows in the warehouse after the night: series (forecasts, model outputs, actuals) and ledger pairs. */
  seriesRows: number;
  pairs: number;
  /** The night was stopped part-way by a stop of the bench and run again: its figures are of what was left. */
  rerun?: boolean;
}

export interface DepthFigures {
  days: number;
  sites: number;
  nights: NightFigures[];
  /** Medians over the measured nights (1..): wall time, publish time, peak RSS (max). */
  medianNightS: number;
  medianPublishS: number | null;
  maxPeakRssMb: number;
}

export interface HistoryOptions {
  /** What runs efsync: bin/efsync, or node with tsx and src/cli/main.ts (tests). */
  cli: readonly string[];
  work: string;
  sites: number;
  days: number;
  nights: number;
  /** The instant of the last build night; each measured night after is a day later. */
  start: number;
  /** How the history is built: `monthly`, a night a month (default); `first-sync`, one first night syncing all of it. */
  build?: HistoryBuild;
}

export type HistoryBuild = 'monthly' | 'first-sync';

/**
 * Days of history one monthly build night syncs: the warehouse is built by nights this far apart,
 * as if its user had run efsync once a month until then, so that building costs in proportion to
 * the history. `first-sync` builds it as a new user does, in one first night of all of it.
 */
const BUILD_CHUNK_DAYS = 30;

/** The build nights' clocks, oldest first, the last at `start`, and what the first one syncs. */
export function buildNights(
  start: number,
  days: number,
  build: HistoryBuild = 'monthly',
): { clocks: number[]; firstDays: number } {
  if (build === 'first-sync') return { clocks: [start], firstDays: days };
  const nights = Math.max(1, Math.ceil(days / BUILD_CHUNK_DAYS));
  const clocks = Array.from({ length: nights }, (_, i) => start - (nights - 1 - i) * BUILD_CHUNK_DAYS * DAY);
  return { clocks, firstDays: days - (nights - 1) * BUILD_CHUNK_DAYS };
}

/**
 * The clock of the last build night: `today`, written to `work/history.json` with the bench's
 * parameters; from a bench that ran in `work` before (stopped, or `--work` given again), its
 * clock, if its parameters were the same. `before`: whether there was one.
 */
export function historyStart(
  work: string,
  parameters: Record<string, unknown>,
  today: number,
): { start: number; before: boolean } {
  const path = join(work, 'history.json');
  if (!existsSync(path)) {
    mkdirSync(work, { recursive: true });
    writeFileSync(path, JSON.stringify({ ...parameters, start: today }));
    return { start: today, before: false };
  }
  const before = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  for (const [name, value] of Object.entries(parameters)) {
    if (JSON.stringify(before[name]) !== JSON.stringify(value)) {
      throw new Error(`${path}: a bench of ${name} ${JSON.stringify(before[name])}, not ${JSON.stringify(value)}`);
    }
  }
  return { start: before.start as number, before: true };
}

/**
 * The depths built one after the other, then their measured nights in turn (night 1 of each, then
 * night 2 of each, ...): a change in the machine's load while the bench runs falls on both sides
 * of a ratio alike, where depth after depth put it on one side (a bench of hours at 365 days).
 */
export async function benchHistories(
  o: Omit<HistoryOptions, 'days'>,
  days: readonly number[],
  say: (line: string) => void,
): Promise<DepthFigures[]> {
  const depths = days.map((d) => new HistoryDepth({ ...o, days: d }, say));
  for (const depth of depths) await depth.build();
  for (let night = 1; night <= o.nights; night++) for (const depth of depths) await depth.night(night);
  return depths.map((depth) => depth.figures());
}

/**
 * One depth, in `work/<days>d`: its build nights, then its measured nights one at a time; a night
 * its journal already holds is not run again.
 */
export class HistoryDepth {
  readonly nights: NightFigures[];
  private readonly dir: string;
  private readonly journal: string;
  /** The night under way, written before it starts and removed once the journal holds it. */
  private readonly underWay: string;
  private readonly clocks: number[];
  private readonly env: NodeJS.ProcessEnv;

  constructor(
    private readonly o: HistoryOptions,
    private readonly say: (line: string) => void,
  ) {
    this.dir = join(o.work, `${o.days}d`);
    mkdirSync(this.dir, { recursive: true });
    this.journal = join(this.dir, 'nights.jsonl');
    this.underWay = join(this.dir, 'night-under-way');
    this.nights = readJournal(this.journal);
    if (this.nights.length > 0) say(`${o.days} days: ${this.nights.length} nights done before (${this.journal})`);
    const { clocks, firstDays } = buildNights(o.start, o.days, o.build);
    this.clocks = clocks;
    this.env = nightEnv(this.dir, firstDays);
  }

  /** The nights that make the warehouse `days` deep at `start`. */
  async build(): Promise<void> {
    for (const now of this.clocks) await this.run(0, now);
  }

  /** Measured night `night` (1, 2, ...): `night` days after `start`. */
  async night(night: number): Promise<void> {
    await this.run(night, this.o.start + night * DAY);
  }

  /** Medians over the measured nights. */
  figures(): DepthFigures {
    const measured = this.nights.filter((n) => n.night > 0);
    const publishes = measured.map((n) => n.steps.publish?.seconds).filter((s): s is number => s !== undefined);
    return {
      days: this.o.days,
      sites: this.o.sites,
      nights: this.nights,
      medianNightS: median(measured.map((n) => n.seconds)),
      medianPublishS: publishes.length > 0 ? median(publishes) : null,
      maxPeakRssMb: Math.max(...measured.map((n) => n.peakRssMb)),
    };
  }

  /** Runs the night unless the journal holds it, then adds it there once the emulator saved its state. */
  private async run(night: number, now: number): Promise<void> {
    const { o } = this;
    if (this.nights.some((n) => n.night === night && n.now === iso(now))) return;
    const rerun = existsSync(this.underWay) && readFileSync(this.underWay, 'utf8') === iso(now);
    const again = rerun ? ' again, after a stop part-way' : '';
    this.say(`${o.days} days: ${night === 0 ? 'building the warehouse' : `night ${night}`} at ${iso(now)}${again} ...`);
    writeFileSync(this.underWay, iso(now));
    const emulator = await startEmulatorProcess(o.cli, {
      apiKey: API_KEY,
      sites: o.sites,
      historyDays: o.days,
      now,
      state: join(this.dir, 'emulator-state.json'),
    });
    let figures: NightFigures;
    try {
      figures = await runNight(o.cli, { ...this.env, EFSYNC_BASE_URL: emulator.url, EFSYNC_NOW: iso(now) }, night, now);
    } finally {
      await stop(emulator.process);
    }
    if (rerun) figures.rerun = true;
    this.nights.push(figures);
    appendFileSync(this.journal, `${JSON.stringify(figures)}\n`);
    rmSync(this.underWay);
    // as it happens too: a bench of hours stopped half-way still told what it measured
    this.say(`  ${nightLine(figures)}`);
  }
}

/**
 * The nights a journal holds. A last line cut short by a stop mid-write is a night not finished:
 * it is cut from the file, so that the next night's line starts a line of its own.
 */
function readJournal(path: string): NightFigures[] {
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
  const nights = lines.flatMap((line, i) => {
    try {
      return [JSON.parse(line) as NightFigures];
    } catch (error) {
      if (i === lines.length - 1) return [];
      throw new Error(`${path}, line ${i + 1}: not a night's figures (${(error as Error).message})`);
    }
  });
  if (nights.length < lines.length) writeFileSync(path, nights.map((n) => `${JSON.stringify(n)}\n`).join(''));
  return nights;
}

/** The nights' config: `firstDays`, the first build night's initial history. */
function nightEnv(dir: string, firstDays: number): NodeJS.ProcessEnv {
  const config = join(dir, 'efsync.yaml');
  writeFileSync(
    config,
    [
      'sync:',
      `  initial_history: ${firstDays}d`,
      '  concurrency: 16',
      'service:',
      '  connections: 32',
      'accuracy:',
      `  report: ${join(dir, 'report.html')}`,
    ].join('\n'),
  );
  return {
    ...process.env,
    EFSYNC_API_KEY: API_KEY,
    EFSYNC_CONFIG: config,
    EFSYNC_DB: join(dir, 'warehouse.duckdb'),
    EFSYNC_LOG_LEVEL: 'warn',
  };
}

async function runNight(
  cli: readonly string[],
  env: NodeJS.ProcessEnv,
  night: number,
  now: number,
): Promise<NightFigures> {
  const run = await runMeasured(cli, ['run', 'nightly'], env, { keepStdout: true });
  const steps = stepsOf(run.stdout);
  const db = env.EFSYNC_DB!;
  const stepPeaks = Object.values(steps).map((s) => s?.peakRssMb ?? 0);
  return {
    night,
    now: iso(now),
    code: run.code,
    seconds: run.seconds,
    // The chain resets the kernel's high-water mark at each step: the process's peak is the
    // highest of what the bench sampled and what each step reported.
    peakRssMb: Math.max(run.peakRssMb, ...stepPeaks),
    steps,
    publishedMb: sizeMb(db),
    writerMb: sizeMb(writerPathOf(db)),
    ...(await rowsOf(db)),
  };
}

/** The steps' lines of a nightly summary: `accuracy: ok (41.20 s, peak RSS 262 MB)`, `publish: (0.42 s, ...)`. */
export function stepsOf(stdout: string): NightFigures['steps'] {
  const found = new Map<string, StepFigures>();
  for (const m of stdout.matchAll(/^([a-z-]+): ?([a-z]*) \((\d+(?:\.\d+)?) s(?:, peak RSS (\d+) MB)?\)$/gm)) {
    found.set(m[1], {
      status: m[2] || 'ok',
      seconds: Number(m[3]),
      peakRssMb: m[4] === undefined ? null : Number(m[4]),
    });
  }
  return Object.fromEntries(NIGHT_STEPS.map((step) => [step, found.get(step) ?? null])) as NightFigures['steps'];
}

/** Rows the night wrote (its run's row) and rows the warehouse holds, hot and cold (the published file's views). */
async function rowsOf(path: string): Promise<{ rowsWritten: number; seriesRows: number; pairs: number }> {
  const file = existsSync(path) ? path : writerPathOf(path);
  const db = await openDuckDB(file, { readOnly: true });
  try {
    const reader = await db.connection.runAndReadAll(`SELECT
        (SELECT rows_written::VARCHAR FROM runs WHERE job = 'nightly' ORDER BY started_at DESC LIMIT 1) AS written,
        (SELECT count(*) FROM forecasts) + (SELECT count(*) FROM model_outputs) + (SELECT count(*) FROM actuals) AS series,
        (SELECT count(*) FROM accuracy_pairs) AS pairs`);
    const row = reader.getRowObjectsJS()[0] as { written: string | null; series: bigint; pairs: bigint };
    const written = JSON.parse(row.written ?? '{}') as Record<string, number>;
    return {
      rowsWritten: Object.values(written).reduce((a, b) => a + Number(b), 0),
      seriesRows: Number(row.series),
      pairs: Number(row.pairs),
    };
  } finally {
    db.close();
  }
}

/** SIGTERM, then the exit: the emulator saves its state before the next night loads it. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

function sizeMb(path: string): number {
  return existsSync(path) ? statSync(path).size / 2 ** 20 : 0;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const iso = (t: number) => new Date(t).toISOString();

/** The table of one depth: a line per night. */
export function printHistory(f: DepthFigures): void {
  const head = [
    'night',
    'exit',
    'wall s',
    'peak MB',
    ...NIGHT_STEPS.map(short),
    'pub MB',
    'wr MB',
    'written',
    'series',
    'pairs',
  ];
  console.log(
    `${f.sites} sites, ${f.days} days of history (step cells: seconds/peak RSS MB; - where the chain has no such step)`,
  );
  const rows = f.nights.map((n) => [
    `${n.night === 0 ? 'build' : String(n.night)}${n.rerun ? '*' : ''}`,
    String(n.code),
    n.seconds.toFixed(1),
    n.peakRssMb.toFixed(0),
    ...NIGHT_STEPS.map((step) => stepCell(n.steps[step])),
    n.publishedMb.toFixed(0),
    n.writerMb.toFixed(0),
    String(n.rowsWritten),
    String(n.seriesRows),
    String(n.pairs),
  ]);
  for (const row of [head, ...rows]) console.log(row.map((c) => c.padStart(10)).join(' '));
  if (f.nights.some((n) => n.rerun))
    console.log('* run again after a stop of the bench part-way: figures of what was left');
  const pub = f.medianPublishS === null ? '-' : `${f.medianPublishS.toFixed(2)} s`;
  console.log(
    `median night ${f.medianNightS.toFixed(2)} s, median publish ${pub}, highest peak RSS ${f.maxPeakRssMb.toFixed(0)} MB`,
  );
  const { budgetMib, highestMib, within } = budgetCheck(f);
  console.log(
    `memory budget ${budgetMib.toFixed(0)} MiB (the peaks above are MiB): every night's peak within it, the build's too: ${within ? 'yes' : 'no'} (highest ${highestMib.toFixed(0)})`,
  );
}

/**
 * Whether every night's peak RSS, build nights included, stayed within the memory budget the
 * bench gave efsync (--memory, else the default): both in MiB, as the kernel counts the peaks.
 */
function budgetCheck(f: DepthFigures): { budgetMib: number; highestMib: number; within: boolean } {
  const given = process.env.EFSYNC_MEMORY;
  const budgetMib = (given ? parseSize(given) : DEFAULT_BUDGET) / 2 ** 20;
  const highestMib = Math.max(...f.nights.map((n) => n.peakRssMb));
  return { budgetMib, highestMib, within: highestMib <= budgetMib };
}

/** `12.3/262`: a step's seconds and peak RSS in MB; `-` where the chain has no such step. */
function stepCell(s: StepFigures | null): string {
  return s === null ? '-' : `${s.seconds.toFixed(1)}/${s.peakRssMb ?? '?'}`;
}

/** One night in a line: `night 1: exit 0, 23.4 s, peak 294 MB; s-sites 1.1/180 ...; published 120 MB, writer 400 MB`. */
function nightLine(n: NightFigures): string {
  const steps = NIGHT_STEPS.map((step) => `${short(step)} ${stepCell(n.steps[step])}`).join(' ');
  const name = `${n.night === 0 ? 'build' : `night ${n.night}`}${n.rerun ? ' (run again after a stop)' : ''}`;
  return `${name}: exit ${n.code}, ${n.seconds.toFixed(1)} s, peak ${n.peakRssMb.toFixed(0)} MB; ${steps}; published ${n.publishedMb.toFixed(0)} MB, writer ${n.writerMb.toFixed(0)} MB`;
}

function short(step: string): string {
  return step.replace(/^sync-/, 's-');
}

/** The JSON of a depth: every night, as measured (seconds and MB rounded to ms and 0.1 MB). */
export function historyJson(f: DepthFigures): Record<string, unknown> {
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    days: f.days,
    sites: f.sites,
    median_night_s: r(f.medianNightS),
    median_publish_s: f.medianPublishS === null ? null : r(f.medianPublishS),
    max_peak_rss_mb: Math.round(f.maxPeakRssMb),
    within_budget: budgetCheck(f).within,
    nights: f.nights.map((n) => ({
      night: n.night,
      now: n.now,
      exit: n.code,
      seconds: r(n.seconds),
      peak_rss_mb: Math.round(n.peakRssMb),
      steps: Object.fromEntries(
        NIGHT_STEPS.map((s) => {
          const step = n.steps[s];
          return [
            s,
            step === null ? null : { status: step.status, seconds: step.seconds, peak_rss_mb: step.peakRssMb },
          ];
        }),
      ),
      published_mb: Math.round(n.publishedMb * 10) / 10,
      writer_mb: Math.round(n.writerMb * 10) / 10,
      rows_written: n.rowsWritten,
      series_rows: n.seriesRows,
      pairs: n.pairs,
      ...(n.rerun ? { rerun: true } : {}),
    })),
  };
}

/** Deep against shallow: median nightly wall time and median publish time. */
export function ratios(deep: DepthFigures, shallow: DepthFigures): { night: number; publish: number | null } {
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    night: r(deep.medianNightS / shallow.medianNightS),
    publish:
      deep.medianPublishS === null || shallow.medianPublishS === null || shallow.medianPublishS === 0
        ? null
        : r(deep.medianPublishS / shallow.medianPublishS),
  };
}
