// `node --import tsx bench/publish.ts [--sites 5] [--vintages 24] [--depths 7,365] [--nights 3] [--hot-window 8] [--json]`:
// what a nightly publish costs at each depth of history with the cold store (warehouse.hot_window
// in days, by default 8 as the config's, docs/warehouse.md "Hot and cold"). A synthetic warehouse, its rows generated in SQL
// (range()): per site and 15-minute valid time, `vintages` forecast vintages an hour apart, 2
// model output vintages and an actual. The history is loaded, published once (its closed days
// move out) and the writer reopened (compacted); then each night adds a day and publishes, timed.
// Prints figures; asserts nothing.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Warehouse, writerPathOf } from '../src/warehouse/warehouse.js';
import { DAY, HOUR } from '../src/time.js';

const { values: args } = parseArgs({
  options: {
    sites: { type: 'string', default: '5' },
    vintages: { type: 'string', default: '24' },
    depths: { type: 'string', default: '7,365' },
    nights: { type: 'string', default: '3' },
    'hot-window': { type: 'string', default: '8' },
    json: { type: 'boolean', default: false },
  },
});
const SITES = Number(args.sites);
const VINTAGES = Number(args.vintages);
const HOT_WINDOW = Number(args['hot-window']) * DAY;
const START = Date.UTC(2025, 0, 1);

interface Night {
  seconds: number;
  publishedBytes: number;
  writerBytes: number;
  coldBytesWritten: number;
  coldBytes: number;
}

/** Rows of the valid times of days [fromDay, toDay) after START, each vintage issued before its valid time. */
async function load(wh: Warehouse, fromDay: number, toDay: number): Promise<void> {
  const steps = `range(${fromDay * 96}, ${toDay * 96})`;
  const at = (expr: string) => `make_timestamptz((${START}::BIGINT + (${expr}) * 900000) * 1000)`;
  // time outer, as nightly syncs append
  await wh.run(`INSERT INTO forecasts
    SELECT 'site-' || s, 'm', 1, ${at('q - v * 4 - 4')}, ${at('q')}, q % 96 * 0.5 + v, 100
    FROM ${steps} b(q), range(${SITES}) a(s), range(${VINTAGES}) c(v)`);
  await wh.run(`INSERT INTO model_outputs
    SELECT 'model-' || s, ${at('q - v * 48 - 4')}, ${at('q')}, 'site-' || s, 'm', 1, q % 96 * 0.25, 100
    FROM ${steps} b(q), range(${SITES}) a(s), range(2) c(v)`);
  await wh.run(`INSERT INTO actuals
    SELECT 'site-' || s, ${at('q')}, q % 96 * 0.4, ${at('q + 1')}, NULL FROM ${steps} b(q), range(${SITES}) a(s)`);
}

/** Per series table, bytes per row in its cold files: for the formula of bytes per site-day kept. */
const bytesPerRow: Record<string, number> = {};

async function measure(depth: number, nights: number): Promise<Night[]> {
  const dir = mkdtempSync(join(tmpdir(), 'efsync-bench-publish-'));
  const path = join(dir, 'warehouse.duckdb');
  let clock = START + depth * DAY + 3 * HOUR;
  const open = () => Warehouse.open({ path, hotWindowMs: HOT_WINDOW, now: () => clock });
  try {
    let wh = await open();
    await load(wh, 0, depth + 2);
    await wh.publish();
    await wh.close();
    wh = await open(); // a writer file the first move left mostly free is compacted here
    const figures: Night[] = [];
    for (let night = 1; night <= nights; night++) {
      clock += DAY;
      await load(wh, depth + 1 + night, depth + 2 + night);
      await wh.checkpoint(); // the night's own writes, not the publish, pay for their checkpoint
      const started = performance.now();
      await wh.publish();
      const seconds = (performance.now() - started) / 1000;
      const [cold] = await wh.all<{ written: number; total: number }>(
        `SELECT coalesce(sum(bytes) FILTER (WHERE epoch_ms(written_at) = $1), 0)::DOUBLE AS written,
                coalesce(sum(bytes) FILTER (WHERE superseded_at IS NULL), 0)::DOUBLE AS total FROM cold_files`,
        [clock],
      );
      figures.push({
        seconds,
        publishedBytes: statSync(path).size,
        writerBytes: statSync(writerPathOf(path)).size,
        coldBytesWritten: cold.written,
        coldBytes: cold.total,
      });
    }
    const perRow = await wh.all<{ table_name: string; b: number }>(
      'SELECT table_name, sum(bytes)::DOUBLE / sum(row_count)::DOUBLE AS b FROM cold_files GROUP BY ALL',
    );
    for (const { table_name, b } of perRow) bytesPerRow[table_name] = b;
    await wh.close();
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const MB = 1024 * 1024;
const results: Record<string, Night[]> = {};
for (const depth of args.depths.split(',').map(Number)) results[depth] = await measure(depth, Number(args.nights));
if (args.json) {
  console.log(
    JSON.stringify(
      { sites: SITES, vintages: VINTAGES, hotWindowDays: HOT_WINDOW / DAY, results, bytesPerRow },
      null,
      2,
    ),
  );
} else {
  console.log(
    `${SITES} sites, ${VINTAGES} forecast vintages per 15-minute valid time, hot window ${HOT_WINDOW / DAY}d`,
  );
  console.log('depth  publish s (median)  published MB  writer MB  cold MB written  cold MB kept');
  for (const [depth, nights] of Object.entries(results)) {
    const m = (pick: (n: Night) => number) => median(nights.map(pick));
    console.log(
      `${depth.padStart(5)}  ${m((n) => n.seconds)
        .toFixed(2)
        .padStart(18)}  ${(m((n) => n.publishedBytes) / MB).toFixed(1).padStart(12)}` +
        `  ${(m((n) => n.writerBytes) / MB).toFixed(1).padStart(9)}  ${(m((n) => n.coldBytesWritten) / MB).toFixed(2).padStart(15)}` +
        `  ${(m((n) => n.coldBytes) / MB).toFixed(1).padStart(12)}`,
    );
  }
  const perRow = Object.entries(bytesPerRow).map(([table, b]) => `${table} ${b.toFixed(2)}`);
  console.log(`cold bytes per row: ${perRow.join(', ')}`);
}
