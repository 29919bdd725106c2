// The columnar bodies checked two ways on the same texts: zod (the schemas of src/api/schemas.ts)
// against the hand-written checker the client uses (src/api/columns.ts), each after the same
// JSON.parse. The bodies are those a first sync of N emulator sites reads (bench/fetch.ts records
// them). Prints figures; asserts nothing.
//   node --import tsx bench/parse.ts [--sites 50] [--rounds 5]
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { readActualsSeries, readForecastSeries, readModelOutput } from '../src/api/columns.js';
import { ActualsSeries, ForecastSeries, ModelOutput } from '../src/api/schemas.js';
import { startEmulator } from '../src/emulator/server.js';
import { rawFetch, type SeriesKind } from './fetch.js';

const { values: args } = parseArgs({
  options: { sites: { type: 'string', default: '50' }, rounds: { type: 'string', default: '5' } },
});
const HISTORY_DAYS = 7;

const zodOf: Record<SeriesKind, z.ZodType> = { forecast: ForecastSeries, output: ModelOutput, actuals: ActualsSeries };
const checkerOf: Record<SeriesKind, (json: unknown) => unknown> = {
  forecast: readForecastSeries,
  output: readModelOutput,
  actuals: readActualsSeries,
};

const emulator = await startEmulator({
  apiKeys: ['bench-key'],
  sites: Number(args.sites),
  historyDays: HISTORY_DAYS,
});
const bodies: { kind: SeriesKind; text: string }[] = [];
try {
  await rawFetch({
    baseUrl: emulator.url,
    apiKey: 'bench-key',
    now: Date.now(),
    historyDays: HISTORY_DAYS,
    onSeriesBody: (kind, text) => bodies.push({ kind, text }),
  });
} finally {
  await emulator.close();
}

const values = bodies.reduce((sum, { text }) => sum + (text.match(/,/g)?.length ?? 0), 0);
const megabytes = bodies.reduce((sum, { text }) => sum + text.length, 0) / 2 ** 20;
console.log(
  `${bodies.length.toLocaleString('en-US')} series bodies of ${args.sites} sites, ${megabytes.toFixed(0)} MB, ~${values.toLocaleString('en-US')} values`,
);

/** Best of `rounds` passes over every body, in ms: the least disturbed by the rest of the machine. */
function best(check: (kind: SeriesKind, json: unknown) => void): number {
  let fastest = Number.POSITIVE_INFINITY;
  for (let round = 0; round < Number(args.rounds); round++) {
    const started = performance.now();
    for (const { kind, text } of bodies) check(kind, JSON.parse(text));
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

const parseOnly = best(() => undefined);
const zod = best((kind, json) => {
  if (!zodOf[kind].safeParse(json).success) throw new Error(`zod rejected a ${kind} body`);
});
const checker = best((kind, json) => checkerOf[kind](json));
const row = (name: string, ms: number) =>
  console.log(
    `${name.padEnd(28)} ${ms.toFixed(0).padStart(6)} ms   check alone ${(ms - parseOnly).toFixed(0).padStart(5)} ms`,
  );
row('JSON.parse alone', parseOnly);
row('JSON.parse + zod', zod);
row('JSON.parse + checker', checker);
console.log(`checker / zod (check alone): ${((checker - parseOnly) / (zod - parseOnly)).toFixed(2)}`);
