// The columnar bodies of Get Site Forecast, Get Model Output and Get Site Actuals, checked by hand
// rather than by zod: they carry nearly every value a sync reads, and zod copies every column into
// a new array, value by value, with a parse context per value (the sync's main thread's time, and
// the garbage to collect after it). bench/parse.ts measures both on the same bodies.
//
// What is checked, exactly (the same as the zod schemas ForecastSeries, ModelOutput and
// ActualsSeries of schemas.ts, which stay the written contract; test/api-columns.test.ts holds the
// two to the same results and the same first problem):
// - the body is a JSON object; keys it has beyond the documented ones are kept as they came;
// - each documented column is an array; instants are strings read by parseInstant (any offset as
//   sent, fractional seconds, a bare date: docs/interface-assumptions.md) into epoch ms, written
//   into a new array of doubles (the only column copied); values are finite numbers or null;
//   names are strings; versions whole numbers; the value columns are checked in place, not copied;
// - `capacity` may be missing (a null per row, listed in `defaulted`), never null itself;
// - every column has as many values as valid_time;
// - Get Model Output's fields: model_id, model_name, model_label strings, model_version and
//   priority whole numbers, as_of an instant or null (a model with no output yet).
// The first problem ends the check: a BodyIssue naming its path (`forecast[3]`) and what was
// expected, in zod's words, columns in the order above. The client turns it into a 'malformed'
// ServiceError, so one bad vintage fails that read alone.
import type { ActualsSeries, ForecastSeries, ModelOutput } from './schemas.js';
import { parseInstant } from '../time.js';

/** The first problem of a body: where (keys and indexes from the root) and what. */
export class BodyIssue extends Error {
  constructor(
    readonly path: readonly (string | number)[],
    message: string,
  ) {
    super(message);
  }
}

type Body = Record<string, unknown>;

export function readForecastSeries(json: unknown): ForecastSeries {
  const body = object(json);
  const valid_time = instants(body, 'valid_time');
  const forecast = numbers(body, 'forecast');
  const capacity = body.capacity === undefined ? undefined : numbers(body, 'capacity');
  const model_name = strings(body, 'model_name');
  const model_version = wholeNumbers(body, 'model_version');
  const update_time = instants(body, 'update_time');
  equalLengths({ valid_time, forecast, capacity, model_name, model_version, update_time });
  return {
    ...body,
    valid_time,
    forecast,
    model_name,
    model_version,
    update_time,
    ...withCapacity(valid_time.length, capacity),
  };
}

export function readModelOutput(json: unknown): ModelOutput {
  const body = object(json);
  const model_id = string(body, 'model_id');
  const model_version = wholeNumber(body, 'model_version');
  const model_name = string(body, 'model_name');
  const model_label = string(body, 'model_label');
  const priority = wholeNumber(body, 'priority');
  const as_of = body.as_of === null ? null : instant(body.as_of, ['as_of']);
  const forecast = numbers(body, 'forecast');
  const valid_time = instants(body, 'valid_time');
  const capacity = body.capacity === undefined ? undefined : numbers(body, 'capacity');
  equalLengths({ valid_time, forecast, capacity });
  return {
    ...body,
    model_id,
    model_version,
    model_name,
    model_label,
    priority,
    as_of,
    forecast,
    valid_time,
    ...withCapacity(valid_time.length, capacity),
  };
}

export function readActualsSeries(json: unknown): ActualsSeries {
  const body = object(json);
  const valid_time = instants(body, 'valid_time');
  const value = numbers(body, 'value');
  equalLengths({ valid_time, value });
  return { ...body, valid_time, value };
}

/** A missing capacity column is a null per row, and said so in `defaulted`. */
function withCapacity(rows: number, capacity: (number | null)[] | undefined) {
  return capacity === undefined
    ? { capacity: new Array<number | null>(rows).fill(null), defaulted: ['capacity'] }
    : { capacity, defaulted: [] };
}

function object(json: unknown): Body {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw expected([], 'object', json);
  return json as Body;
}

function array(body: Body, key: string): unknown[] {
  const column = body[key];
  if (!Array.isArray(column)) throw expected([key], 'array', column);
  return column;
}

/** A column of instants as epoch ms, in a new array of doubles (V8 keeps a number-only array unboxed). */
function instants(body: Body, key: string): number[] {
  const column = array(body, key);
  const out: number[] = [];
  for (let i = 0; i < column.length; i++) out.push(instant(column[i], [key, i]));
  return out;
}

function instant(value: unknown, path: (string | number)[]): number {
  if (typeof value !== 'string') throw expected(path, 'string', value);
  try {
    return parseInstant(value);
  } catch {
    throw new BodyIssue(path, `not a timestamp: ${JSON.stringify(value)}`);
  }
}

/** Finite numbers or null, checked in place. */
function numbers(body: Body, key: string): (number | null)[] {
  const column = array(body, key);
  for (let i = 0; i < column.length; i++) {
    const value = column[i];
    if (value !== null && !(typeof value === 'number' && Number.isFinite(value))) {
      throw expected([key, i], 'number', value);
    }
  }
  return column as (number | null)[];
}

function strings(body: Body, key: string): string[] {
  const column = array(body, key);
  for (let i = 0; i < column.length; i++) {
    if (typeof column[i] !== 'string') throw expected([key, i], 'string', column[i]);
  }
  return column as string[];
}

function wholeNumbers(body: Body, key: string): number[] {
  const column = array(body, key);
  for (let i = 0; i < column.length; i++) checkWhole(column[i], [key, i]);
  return column as number[];
}

function string(body: Body, key: string): string {
  const value = body[key];
  if (typeof value !== 'string') throw expected([key], 'string', value);
  return value;
}

function wholeNumber(body: Body, key: string): number {
  const value = body[key];
  checkWhole(value, [key]);
  return value as number;
}

function checkWhole(value: unknown, path: (string | number)[]): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw expected(path, 'number', value);
  if (!Number.isInteger(value)) throw new BodyIssue(path, 'Invalid input: expected int, received number');
  if (value > Number.MAX_SAFE_INTEGER)
    throw new BodyIssue(path, `Too big: expected int to be <=${Number.MAX_SAFE_INTEGER}`);
  if (value < Number.MIN_SAFE_INTEGER) {
    throw new BodyIssue(path, `Too small: expected int to be >=${Number.MIN_SAFE_INTEGER}`);
  }
}

/** Every column present has as many values as the first (valid_time); the first that differs is named. */
function equalLengths(columns: Record<string, readonly unknown[] | undefined>): void {
  const [[first, firstColumn], ...rest] = Object.entries(columns);
  const expectedLength = firstColumn!.length;
  for (const [name, column] of rest) {
    if (column !== undefined && column.length !== expectedLength) {
      throw new BodyIssue([name], `has ${column.length} values where ${first} has ${expectedLength}`);
    }
  }
}

/** zod's words, so that a message reads the same whichever checked the body. */
function expected(path: (string | number)[], what: string, value: unknown): BodyIssue {
  return new BodyIssue(path, `Invalid input: expected ${what}, received ${received(value)}`);
}

function received(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return typeof value;
}
