// `npm run bench [-- --sites N] [-- --days D] [-- --json] [-- --shards N]`: the sync against the emulator in its own process,
// beside the two raw limits on the same data (fetch-and-parse; data-chunk append), and accuracy
// scoring beside a plain DuckDB scan. With `--history-days D [--nights 7] [--baseline-days 7]
// [--build monthly|first-sync]` instead the history bench (bench/history.ts): nightly runs on a
// warehouse D days deep (built a month a night, or in one first sync), and on one of the baseline
// depth; `--work DIR` keeps its warehouses there, and the same command given the same DIR again
// goes on from the last night that ended. `--keep` leaves the work dir. `--memory SIZE` runs every
// efsync process under that memory budget (EFSYNC_MEMORY; docs/warehouse.md, "Memory budget").
// Prints figures; asserts no timings.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { benchAccuracy } from './accuracy.js';
import { benchIncremental, type IncrementalFigures } from './incremental.js';
import { benchHistories, historyJson, historyStart, printHistory, ratios } from './history.js';
import { benchAppend } from './load.js';
import { benchShards, printShards } from './lake.js';
import { rawFetch } from './fetch.js';
import { runMeasured, startEmulatorProcess } from './process.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { Warehouse, writerPathOf } from '../src/warehouse/warehouse.js';
import { DAY, HOUR } from '../src/time.js';

const { values: args } = parseArgs({
  options: {
    sites: { type: 'string', default: '1000' },
    days: { type: 'string' },
    json: { type: 'boolean', default: false },
    pairs: { type: 'string', default: '10000000' },
    'skip-accuracy': { type: 'boolean', default: false },
    shards: { type: 'string' },
    'history-days': { type: 'string' },
    nights: { type: 'string', default: '7' },
    'baseline-days': { type: 'string', default: '7' },
    build: { type: 'string', default: 'monthly' },
    keep: { type: 'boolean', default: false },
    work: { type: 'string' },
    help: { type: 'boolean', default: false },
    memory: { type: 'string' },
  },
});
if (args.help) {
  console.log(`npm run bench -- [--sites N] [--days D] [--json] [--skip-accuracy] [--pairs N] [--shards N] [--keep] [--memory SIZE]
  the first sync of N sites (default 1000) against the emulator in its own process, its first pass
  (every site's newest vintages and actuals), the requests it sent a site a night of history and
  what efsync sync --plan said beforehand, a sync with nothing new, a publish, the raw limits
  (fetch-and-parse, data-chunk append) and their ratio, then accuracy (unless --skip-accuracy)
npm run bench -- --history-days D [--sites N] [--nights 7] [--baseline-days 7] [--build monthly|first-sync] [--memory SIZE] [--work DIR]
  nightly runs on a warehouse D days deep against one of the baseline depth (bench/history.ts),
  built a month a night or in one first sync; --memory runs every efsync process under that budget;
  --work keeps the warehouses in DIR, and the same command with the same DIR goes on where it stopped`);
  process.exit(0);
}
// the processes the bench starts inherit it, as a deployment's environment would give it
if (args.memory !== undefined) process.env.EFSYNC_MEMORY = args.memory;
const SITES = Number(args.sites);
const API_KEY = 'bench-key';
/**
 * 7 days of history up to 1,000 sites; above, fewer (7,000 site-days, at least 1), so that
 * `--sites 10000` runs in about 15 minutes here (7 days of 10,000 sites are ~300 M rows, over
 * 20 minutes of sync alone). The sync holds a budget of rows whatever the history
 * (sync.rows_in_memory), so memory against site count is still measured; `--days` sets it.
 */
const HISTORY_DAYS = args.days !== undefined ? Number(args.days) : Math.max(1, Math.min(7, Math.floor(7000 / SITES)));
const CLI = join(import.meta.dirname, '..', 'bin', 'efsync');

if (args.work !== undefined && args['history-days'] === undefined) throw new Error('--work: only with --history-days');
const work = args.work !== undefined ? resolve(args.work) : mkdtempSync(join(tmpdir(), 'efsync-bench-'));
// Progress goes to stderr so that stdout holds the table and, with --json, the JSON last line.
const say = (line: string) => console.error(line);

try {
  if (args['history-days'] !== undefined) await historyBench(Number(args['history-days']));
  else await syncBench();
} finally {
  // --keep leaves the warehouses (and the emulator's state) for a profile of the next night
  if (args.keep || args.work !== undefined) say(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

/**
 * The history bench at `days` and at the baseline depth (unless 0 or the same), each depth built,
 * then their nights in turn, each night's clocks the same instants at both depths; then the ratios.
 */
async function historyBench(days: number): Promise<void> {
  const nights = Number(args.nights);
  const baseline = Number(args['baseline-days']);
  const build = args.build;
  if (build !== 'monthly' && build !== 'first-sync') throw new Error(`--build: monthly or first-sync, not "${build}"`);
  const depths = baseline > 0 && baseline !== days ? [days, baseline] : [days];
  // The last night at 02:00 UTC of today, the build the chosen number of nights before.
  const { start, before } = historyStart(
    work,
    { sites: SITES, depths, nights, build, memory: process.env.EFSYNC_MEMORY ?? null },
    Math.floor(Date.now() / DAY) * DAY + 2 * HOUR - nights * DAY,
  );
  if (before) say(`going on with the bench in ${work}: its last build night at ${new Date(start).toISOString()}`);
  say(
    `efsync history bench: ${SITES} sites, ${depths.join(' and ')} days of history (${build} build), ${nights} nights, work dir ${work}`,
  );
  const figures = await benchHistories({ cli: [CLI], work, sites: SITES, nights, start, build }, depths, say);
  for (const f of figures) printHistory(f);
  const ratio = figures.length === 2 ? ratios(figures[0], figures[1]) : null;
  if (ratio) {
    const pub = ratio.publish === null ? '-' : ratio.publish.toFixed(2);
    console.log(`ratio ${days} / ${baseline} days: median night ${ratio.night.toFixed(2)}, median publish ${pub}`);
  }
  if (args.json) {
    console.log(
      JSON.stringify({
        sites: SITES,
        nights,
        build,
        depths: figures.map(historyJson),
        ratio_night: ratio?.night ?? null,
        ratio_publish: ratio?.publish ?? null,
      }),
    );
  }
}

async function syncBench(): Promise<void> {
  say(`efsync bench: ${SITES} sites, ${HISTORY_DAYS} days of 15-minute data, work dir ${work}`);
  // The service does not change while the bench runs (its clock fixed at the start): a quarter
  // hour that ended between the two syncs made the second, "nothing new", write a new actual and
  // a revision per site. Every efsync run's clock is held at the same instant (EFSYNC_NOW): a run
  // minutes past the service's clock asks again for the vintages due since, which the service
  // never issues (0.5 requests a site more in a 10,000-site resync).
  const now = Date.now();
  const emulator = await startEmulatorProcess(CLI, { apiKey: API_KEY, sites: SITES, historyDays: HISTORY_DAYS, now });
  try {
    const env = benchEnv(emulator.url, now);
    if (args.shards !== undefined) {
      // The lake instead: N shard processes at once (and fewer), then compaction (bench/lake.ts).
      say(`sharded syncs into lakes of Delta tables, up to ${args.shards} shards ...`);
      printShards(await benchShards(CLI, env, work, Number(args.shards)));
    } else {
      say('the plan of the initial sync (efsync sync --plan) ...');
      const planned = await plannedRequests(env);
      say('initial sync ...');
      const first = await timedSync(env);
      const snapshot = statSync(env.EFSYNC_DB!).ino;
      say('second sync (nothing new) ...');
      const second = await timedSync(env);
      const resyncPublished = statSync(env.EFSYNC_DB!).ino !== snapshot;
      say('one publish of the synced warehouse ...');
      const publish = await timedPublish(env.EFSYNC_DB!);
      say('raw fetch-and-parse of the same requests ...');
      const fetched = await rawFetch({
        baseUrl: emulator.url,
        apiKey: API_KEY,
        now,
        historyDays: HISTORY_DAYS,
      });
      say('raw data-chunk append of the same number of rows ...');
      const appendS = await benchAppend(first.rows);
      const ratio = first.seconds / (fetched.seconds + appendS);
      if (!args['skip-accuracy']) say('accuracy: a first nightly run, the next one (incremental) and --full ...');
      const incremental = args['skip-accuracy'] ? null : await benchIncremental(CLI, env, now, HISTORY_DAYS);
      if (!args['skip-accuracy']) say(`accuracy metrics over ${Number(args.pairs).toLocaleString('en-US')} pairs ...`);
      const accuracy = args['skip-accuracy']
        ? null
        : await benchAccuracy(Number(args.pairs), join(work, 'accuracy.duckdb'));

      const result = {
        sites: SITES,
        days: HISTORY_DAYS,
        rows: first.rows,
        sync_s: round(first.seconds),
        fetch_s: round(fetched.seconds),
        append_s: round(appendS),
        ratio: round(ratio),
        first_pass_s: round(first.firstPassS),
        requests: first.requests,
        requests_per_site_night: round(first.requests / SITES / HISTORY_DAYS),
        planned_requests: planned,
        plan_off_pct: round(((planned - first.requests) / first.requests) * 100),
        resync_requests_per_site: round(second.requests / SITES),
        resync_s: round(second.seconds),
        resync_rows: second.rows,
        resync_published: resyncPublished,
        publish_s: round(publish.seconds),
        warehouse_mb: Math.round(publish.mb),
        peak_rss_mb: Math.round(first.peakRssMb),
        ...(incremental ? incrementalJson(incremental) : {}),
        ...(accuracy
          ? {
              metrics_pairs: accuracy.pairs,
              metrics_s: round(accuracy.score_s),
              metrics_scan_s: round(accuracy.scan_s),
              metrics_ratio: round(accuracy.ratio),
              metrics_engine: accuracy.engine,
            }
          : {}),
      };
      printTable(result, fetched, first, second, publish, accuracy);
      if (incremental) printIncremental(incremental);
      if (args.json) console.log(JSON.stringify(result));
    }
  } finally {
    emulator.process.kill('SIGTERM');
  }
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function benchEnv(url: string, now: number): NodeJS.ProcessEnv {
  const config = join(work, 'efsync.yaml');
  writeFileSync(
    config,
    ['sync:', `  initial_history: ${HISTORY_DAYS}d`, '  concurrency: 16', 'service:', '  connections: 32'].join('\n'),
  );
  return {
    ...process.env,
    EFSYNC_BASE_URL: url,
    EFSYNC_API_KEY: API_KEY,
    EFSYNC_CONFIG: config,
    EFSYNC_DB: join(work, 'warehouse.duckdb'),
    EFSYNC_LOG_LEVEL: 'warn',
    EFSYNC_NOW: new Date(now).toISOString(),
  };
}

interface SyncFigures {
  seconds: number;
  rows: number;
  peakRssMb: number;
  /** Requests the sync started (its summary's `requests:` line). */
  requests: number;
  /** Seconds of its newest pass (its summary's `newest first:` line; the whole sync when it had no older pass). */
  firstPassS: number;
}

/** Runs `efsync sync` in its own process; peak RSS is the kernel's high-water mark of that process. */
async function timedSync(env: NodeJS.ProcessEnv): Promise<SyncFigures> {
  const { code, seconds, peakRssMb, stdout } = await runMeasured(CLI, ['sync'], env, { keepStdout: true });
  if (code !== 0) throw new Error(`efsync sync exited with ${code}`);
  const requests = summaryNumber(stdout, /^requests: (\d+) sent/m);
  if (requests === null) throw new Error(`no requests line in the summary of efsync sync:\n${stdout}`);
  const firstPassS = summaryNumber(stdout, /^newest first: .* in ([\d.]+) s/m) ?? seconds;
  const runId = /^sync run (\S+):/m.exec(stdout)?.[1];
  if (runId === undefined) throw new Error(`no run id in the summary of efsync sync:\n${stdout}`);
  return { seconds, rows: await rowsOfRun(env.EFSYNC_DB!, runId), peakRssMb, requests, firstPassS };
}

/** The requests `efsync sync --plan` says the next sync makes. */
async function plannedRequests(env: NodeJS.ProcessEnv): Promise<number> {
  const { code, stdout } = await runMeasured(CLI, ['sync', '--plan'], env, { keepStdout: true });
  const total = summaryNumber(stdout, /makes (\d+) requests/);
  if (code !== 0 || total === null) throw new Error(`efsync sync --plan exited with ${code}:\n${stdout}`);
  return total;
}

function summaryNumber(text: string, pattern: RegExp): number | null {
  const match = pattern.exec(text);
  return match ? Number(match[1]) : null;
}

/**
 * Rows a run wrote, from the run ledger of the writer file (a run that wrote nothing does not
 * publish, so the published ledger may not have it yet). By its id: every run of the bench starts
 * at the same instant of its clock.
 */
async function rowsOfRun(path: string, runId: string): Promise<number> {
  const db = await openDuckDB(writerPathOf(path), { readOnly: true });
  try {
    const reader = await db.connection.runAndReadAll('SELECT rows_written::VARCHAR AS r FROM runs WHERE run_id = $1', [
      runId,
    ]);
    const written = JSON.parse(String(reader.getRowObjectsJS()[0]?.r ?? '{}')) as Record<string, number>;
    return Object.values(written).reduce((a, b) => a + Number(b), 0);
  } finally {
    db.close();
  }
}

/** One publish of the synced warehouse, timed alone: checkpoint, clone (or copy), fsync, rename. */
async function timedPublish(path: string): Promise<{ seconds: number; mb: number }> {
  const wh = await Warehouse.open({ path, holder: { job: 'bench', runId: 'publish' } });
  try {
    const t0 = performance.now();
    await wh.publish();
    return { seconds: (performance.now() - t0) / 1000, mb: statSync(path).size / 2 ** 20 };
  } finally {
    await wh.close();
  }
}

function printTable(
  result: {
    append_s: number;
    ratio: number;
    resync_published: boolean;
    requests_per_site_night: number;
    planned_requests: number;
    plan_off_pct: number;
  },
  fetched: { seconds: number; rows: number; responses: number },
  first: SyncFigures,
  second: SyncFigures,
  publish: { seconds: number; mb: number },
  accuracy: Awaited<ReturnType<typeof benchAccuracy>> | null,
): void {
  const rate = (rows: number, s: number) => `${Math.round(rows / s).toLocaleString('en-US')} rows/s`;
  const lines = [
    [
      'data',
      `${SITES.toLocaleString('en-US')} sites`,
      `${HISTORY_DAYS} days of 15-min data`,
      HISTORY_DAYS < 7 ? 'fewer days: --days' : '',
      '',
    ],
    [
      'initial sync',
      `${first.seconds.toFixed(2)} s`,
      `${first.rows.toLocaleString('en-US')} rows`,
      rate(first.rows, first.seconds),
      `peak RSS ${first.peakRssMb.toFixed(0)} MB`,
    ],
    ['first pass', `${first.firstPassS.toFixed(2)} s`, "every site's newest vintages", 'and its actuals', ''],
    [
      'second sync',
      `${second.seconds.toFixed(2)} s`,
      `${second.rows} rows written`,
      result.resync_published ? 'published' : 'publish skipped',
      `peak RSS ${second.peakRssMb.toFixed(0)} MB`,
    ],
    ['publish', `${publish.seconds.toFixed(2)} s`, `${publish.mb.toFixed(0)} MB warehouse`, 'one forced publish', ''],
    [
      'raw fetch+parse',
      `${fetched.seconds.toFixed(2)} s`,
      `${fetched.rows.toLocaleString('en-US')} rows`,
      `${fetched.responses} responses`,
      '',
    ],
    [
      'raw append',
      `${result.append_s.toFixed(2)} s`,
      `${first.rows.toLocaleString('en-US')} rows`,
      rate(first.rows, result.append_s),
      '',
    ],
    ['ratio', result.ratio.toFixed(2), 'sync / (fetch + append)', 'target <= 1.3', ''],
    [
      'requests',
      `${result.requests_per_site_night.toFixed(1)}`,
      'a site a night of history',
      `${first.requests.toLocaleString('en-US')} sent`,
      `plan ${result.planned_requests.toLocaleString('en-US')} (${result.plan_off_pct >= 0 ? '+' : ''}${result.plan_off_pct.toFixed(1)}%)`,
    ],
    [
      'resync requests',
      `${(second.requests / SITES).toFixed(1)}`,
      'a site, nothing new',
      `${second.requests.toLocaleString('en-US')} sent`,
      '',
    ],
  ];
  if (accuracy) {
    lines.push(
      [
        'accuracy',
        `${accuracy.score_s.toFixed(2)} s`,
        `${accuracy.pairs.toLocaleString('en-US')} pairs`,
        rate(accuracy.pairs, accuracy.score_s),
        '',
      ],
      ['plain scan', `${accuracy.scan_s.toFixed(2)} s`, 'one DuckDB scan-aggregate', '', ''],
      ['ratio', accuracy.ratio.toFixed(2), `accuracy / scan (${accuracy.engine})`, 'target <= 6', ''],
    );
  }
  for (const line of lines) console.log(line.map((cell, i) => cell.padEnd([16, 12, 26, 20, 0][i])).join(' '));
}

function incrementalJson(f: IncrementalFigures): Record<string, number> {
  return {
    accuracy_first_s: round(f.first.seconds),
    accuracy_first_rss_mb: Math.round(f.first.peakRssMb),
    accuracy_incremental_s: round(f.incremental.seconds),
    accuracy_incremental_pairs_read: f.incremental.aligned,
    accuracy_incremental_stats_days: f.incremental.statsDays,
    accuracy_stats_days: f.incremental.statsOf,
    accuracy_incremental_rss_mb: Math.round(f.incremental.peakRssMb),
    accuracy_full_s: round(f.full.seconds),
    accuracy_full_pairs: f.full.aligned,
    accuracy_full_rss_mb: Math.round(f.full.peakRssMb),
    accuracy_scan_s: round(f.scan_s),
    accuracy_full_ratio: round(f.full_ratio),
  };
}

/** The accuracy runs of the bench's warehouse: each its own process, seconds and peak RSS. */
function printIncremental(f: IncrementalFigures): void {
  const run = (name: string, r: IncrementalFigures['first'], note: string) => [
    name,
    `${r.seconds.toFixed(2)} s`,
    `${r.aligned.toLocaleString('en-US')} of ${r.scored.toLocaleString('en-US')} pairs aligned`,
    `${note}; ${r.statsDays} of ${r.statsOf} days summed`,
    `peak RSS ${r.peakRssMb.toFixed(0)} MB`,
  ];
  const lines = [
    run('accuracy first', f.first, `${f.first.mode}, no ledger yet`),
    run(
      'accuracy next',
      f.incremental,
      `${f.incremental.mode}, ${HISTORY_DAYS < 2 ? `${HISTORY_DAYS * 12} h` : 'a day'} later`,
    ),
    run('accuracy --full', f.full, f.full.mode),
    [
      'ledger scan',
      `${f.scan_s.toFixed(2)} s`,
      'one DuckDB scan-aggregate',
      `full / scan ${f.full_ratio.toFixed(1)}`,
      '',
    ],
  ];
  for (const line of lines) console.log(line.map((cell, i) => cell.padEnd([16, 12, 32, 44, 0][i])).join(' '));
}
