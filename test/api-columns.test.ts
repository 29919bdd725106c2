// The hand-written checker of the columnar bodies (src/api/columns.ts) against the zod schemas it
// replaced in the client: the same result on every tolerated variant, the same first problem (path
// and words) on every broken one, and what it tolerates and rejects, spelled out.
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { BodyIssue, readActualsSeries, readForecastSeries, readModelOutput } from '../src/api/columns.js';
import { ActualsSeries, ForecastSeries, ModelOutput } from '../src/api/schemas.js';

const T = '2026-03-29T00:00:00Z';
const T_MS = Date.UTC(2026, 2, 29);

const forecast = {
  valid_time: [T, '2026-03-29T00:15:00+0000', '2026-03-29T02:30:00+02:00', '2026-03-29T00:45:00.5Z'],
  forecast: [1.5, null, 0, 4],
  capacity: [10, 10, null, 10],
  model_name: ['a', 'a', 'b', 'b'],
  model_version: [1, 1, 2, 2],
  update_time: ['2026-03-28 21:00', '2026-03-28T21:00:00.123456Z', '2026-03-28T23:00:00+02', '2026-03-28'],
};
const output = {
  model_id: 'm1',
  model_version: 3,
  model_name: 'quantile_p10',
  model_label: 'P10',
  priority: 2,
  as_of: '2026-03-29T00:00:00.000+00:00',
  forecast: [1, null],
  valid_time: [T, '2026-03-29T00:15:00Z'],
  capacity: [5, 5],
};
const actuals = { valid_time: [T, '2026-03-29T00:15:00Z'], value: [null, 2.25] };

type Reader = (json: unknown) => unknown;
const kinds: [string, Reader, z.ZodType, Record<string, unknown>][] = [
  ['forecast', readForecastSeries, ForecastSeries, forecast],
  ['model output', readModelOutput, ModelOutput, output],
  ['actuals', readActualsSeries, ActualsSeries, actuals],
];

/** The body with `key` set to `value` (undefined: removed). */
function withField(body: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  if (value === undefined) delete copy[key];
  else copy[key] = value;
  return copy;
}

/** The body with one value of column `key` replaced. */
function withValue(body: Record<string, unknown>, key: string, index: number, value: unknown) {
  const column = [...(body[key] as unknown[])];
  column[index] = value;
  return withField(body, key, column);
}

function firstProblem(read: Reader, json: unknown): { path: string; message: string } | null {
  try {
    read(json);
    return null;
  } catch (error) {
    if (!(error instanceof BodyIssue)) throw error;
    return { path: error.path.join('.'), message: error.message };
  }
}

function zodProblem(schema: z.ZodType, json: unknown): { path: string; message: string } | null {
  const parsed = schema.safeParse(json);
  if (parsed.success) return null;
  const [issue] = parsed.error.issues;
  return { path: issue.path.join('.'), message: issue.message };
}

/** Tolerated variants of a body: extra keys, capacity missing, empty columns. */
function variants(body: Record<string, unknown>): Record<string, unknown>[] {
  const empty = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, Array.isArray(v) ? [] : v]));
  return [body, withField(body, 'extra', { any: ['thing'] }), withField(body, 'capacity', undefined), empty];
}

/** Each field missing, null, of another type; each column a value short or long, its last value of every other kind. */
function mutations(body: Record<string, unknown>): unknown[] {
  const bodies: unknown[] = [null, [], 'text', 3];
  for (const [key, value] of Object.entries(body)) {
    for (const wrong of [undefined, null, 'x', 1.5, 2 ** 60, -(2 ** 60), {}, [], true])
      bodies.push(withField(body, key, wrong));
    if (!Array.isArray(value)) continue;
    for (const wrong of [null, 'x', '2026-13-01T00:00:00Z', 7, 1.25, {}, [], false, '1e3']) {
      bodies.push(withValue(body, key, value.length - 1, wrong));
    }
    bodies.push(withField(body, key, value.slice(1)), withField(body, key, [...value, value[0]]));
  }
  return bodies;
}

describe.each(kinds)('the %s body', (_name, read, schema, body) => {
  it('reads every tolerated variant as the zod schema does', () => {
    for (const variant of variants(body)) expect(read(variant)).toEqual(schema.parse(variant));
  });

  it('names the same first problem as the zod schema, path and words, for every changed field and value', () => {
    const bodies = mutations(body);
    for (const changed of bodies) {
      expect(firstProblem(read, changed), JSON.stringify(changed)).toEqual(zodProblem(schema, changed));
    }
    // Most of them are broken (some changes are tolerated: a null where nulls may be, another name).
    expect(bodies.filter((changed) => zodProblem(schema, changed) !== null).length).toBeGreaterThan(bodies.length / 2);
  });
});

describe('what the checker tolerates', () => {
  it('reads offsets as sent, fractional seconds (to the microsecond), a space for T and a bare date, all to UTC epoch ms', () => {
    const series = readForecastSeries(forecast);
    expect(series.valid_time).toEqual([T_MS, T_MS + 900_000, T_MS + 1_800_000, T_MS + 2_700_500]);
    const issue = Date.UTC(2026, 2, 28, 21);
    expect(series.update_time).toEqual([issue, issue + 123.456, issue, Date.UTC(2026, 2, 28)]);
  });

  it('keeps nulls as null, extra keys as they came, and fills a missing capacity with nulls, saying so', () => {
    const series = readForecastSeries({ ...withField(forecast, 'capacity', undefined), note: 'kept' });
    expect(series.forecast).toEqual([1.5, null, 0, 4]);
    expect(series.capacity).toEqual([null, null, null, null]);
    expect(series.defaulted).toEqual(['capacity']);
    expect(series.note).toBe('kept');
    expect(readForecastSeries(forecast).defaulted).toEqual([]);
  });

  it('reads a model output with as_of null as a model with nothing yet', () => {
    expect(readModelOutput({ ...output, as_of: null, forecast: [], valid_time: [], capacity: [] })).toMatchObject({
      as_of: null,
      valid_time: [],
    });
  });
});

describe('what the checker rejects', () => {
  it.each([
    [{ ...forecast, valid_time: undefined }, 'valid_time', 'Invalid input: expected array, received undefined'],
    [withValue(forecast, 'forecast', 2, '3'), 'forecast.2', 'Invalid input: expected number, received string'],
    [withValue(forecast, 'valid_time', 1, '29/03/2026'), 'valid_time.1', 'not a timestamp: "29/03/2026"'],
    [withValue(forecast, 'model_version', 0, 1.5), 'model_version.0', 'Invalid input: expected int, received number'],
    [{ ...forecast, capacity: null }, 'capacity', 'Invalid input: expected array, received null'],
    [{ ...forecast, forecast: [1, 2, 3] }, 'forecast', 'has 3 values where valid_time has 4'],
    [{ ...output, as_of: undefined }, 'as_of', 'Invalid input: expected string, received undefined'],
  ])('%# names the path and the problem', (body, path, message) => {
    const read = 'model_id' in body ? readModelOutput : readForecastSeries;
    expect(firstProblem(read, body)).toEqual({ path, message });
  });

  it('a body that is not an object', () => {
    expect(firstProblem(readActualsSeries, [])).toEqual({
      path: '',
      message: 'Invalid input: expected object, received array',
    });
  });
});
