// Capacity files as operators write them: one YAML or CSV file per site under config/capacity/.
// Reading checks the shape of each file (syntax, keys, timestamp text, numbers, unit) and keeps
// the line and column of every value, so that later rules can point at the exact spot.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { z } from 'zod';
import { MinuteInstant } from '../api/schemas.js';
import { InputFileError, listFolderFiles, parseYaml, type YamlFile, yamlIssueErrors } from '../yaml.js';

export const CAPACITY_EXTENSIONS = ['.yaml', '.yml', '.csv'] as const;

export const UNITS = { kW: 1, MW: 1000 } as const;
export type Unit = keyof typeof UNITS;

export interface Position {
  line: number;
  column: number;
}

/** A point as written: its instant, its value converted to kW, and where both stand in the file. */
export interface SourcePoint {
  time: number;
  valueKw: number;
  at: Position;
  valueAt: Position;
}

/** An outage or curtailment window as written: `value` from `from` until `to`. */
export interface SourceWindow {
  from: number;
  to: number;
  valueKw: number;
  reason: string;
  at: Position;
  toAt: Position;
  valueAt: Position;
}

export interface CapacityFile {
  /** The path as the operator sees it (the folder joined with the file name). */
  file: string;
  format: 'yaml' | 'csv';
  /** The site's id or name, as written. */
  site: string;
  siteAt: Position;
  unit: Unit;
  points: SourcePoint[];
  windows: SourceWindow[];
  /** sha256 of the file's bytes: the ledger's proof of which version was pushed. */
  contentHash: string;
}

export type ReadResult = { ok: true; file: CapacityFile } | { ok: false; errors: InputFileError[] };

/** Capacity values are kept to a milliwatt, so that `1.1 MW` is exactly 1100 kW. */
export function toKw(value: number, unit: Unit): number {
  return Math.round(value * UNITS[unit] * 1e6) / 1e6;
}

/** The capacity files of `dir` (not its subfolders), sorted by name (see listFolderFiles). */
export function listCapacityFiles(dir: string): { files: string[]; errors: InputFileError[] } {
  return listFolderFiles(dir, CAPACITY_EXTENSIONS, { folder: 'capacity folder', setting: 'capacity.dir' });
}

export function readCapacityFile(path: string): ReadResult {
  const bytes = readFileSync(path);
  const contentHash = createHash('sha256').update(bytes).digest('hex');
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
  return extname(path).toLowerCase() === '.csv' ? readCsv(text, path, contentHash) : readYaml(text, path, contentHash);
}

// ---------------------------------------------------------------- YAML

const Value = z.number({ error: 'must be a number' }).min(0, 'must not be negative');

const YamlShape = z.strictObject({
  site: z.string({ error: 'must be the site id or the site name, as text' }).min(1, 'must not be empty'),
  unit: z.enum(['kW', 'MW'], {
    error: (issue) =>
      issue.input === undefined ? 'is required: kW or MW' : `unknown unit ${JSON.stringify(issue.input)}: use kW or MW`,
  }),
  points: z
    .array(z.strictObject({ valid_time: MinuteInstant, value: Value }), {
      error: 'must be a list of {valid_time, value}',
    })
    .default([]),
  windows: z
    .array(
      z.strictObject({
        from: MinuteInstant,
        to: MinuteInstant,
        value: Value,
        reason: z.string({ error: 'must say why, as text' }).min(1, 'must say why'),
      }),
      { error: 'must be a list of {from, to, value, reason}' },
    )
    .default([]),
});

function readYaml(text: string, path: string, contentHash: string): ReadResult {
  let yaml: YamlFile;
  try {
    yaml = parseYaml(text, path);
  } catch (error) {
    if (error instanceof InputFileError) return { ok: false, errors: [error] };
    throw error;
  }
  if (yaml.value === null || typeof yaml.value !== 'object' || Array.isArray(yaml.value)) {
    return {
      ok: false,
      errors: [new InputFileError(path, 1, 1, 'the file must be a mapping with site, unit and points')],
    };
  }
  const parsed = YamlShape.safeParse(yaml.value);
  if (!parsed.success) return { ok: false, errors: yamlIssueErrors(yaml, parsed.error) };
  const { site, unit, points, windows } = parsed.data;
  const at = (path: PropertyKey[]) => yaml.positionOf(path);
  return {
    ok: true,
    file: {
      file: path,
      format: 'yaml',
      site,
      siteAt: at(['site']),
      unit,
      contentHash,
      points: points.map((p, i) => ({
        time: p.valid_time,
        valueKw: toKw(p.value, unit),
        at: at(['points', i, 'valid_time']),
        valueAt: at(['points', i, 'value']),
      })),
      windows: windows.map((w, i) => ({
        from: w.from,
        to: w.to,
        valueKw: toKw(w.value, unit),
        reason: w.reason,
        at: at(['windows', i, 'from']),
        toAt: at(['windows', i, 'to']),
        valueAt: at(['windows', i, 'value']),
      })),
    },
  };
}

// ---------------------------------------------------------------- CSV

const HEADER = ['valid_time', 'value'];
const DIRECTIVE = /^#\s*(site|unit)\s*:\s*(.*?)\s*$/i;

/**
 * `valid_time,value` rows, values in kW unless a `# unit: MW` comment says otherwise; the site is
 * the file name (`<site>.csv`) unless a `# site: <id or name>` comment names it. Both comments
 * must come before the header; other `#` lines and blank lines are ignored.
 */
function readCsv(text: string, path: string, contentHash: string): ReadResult {
  const errors: InputFileError[] = [];
  const fail = (line: number, column: number, rule: string) =>
    errors.push(new InputFileError(path, line, column, rule));
  let site = basename(path, extname(path));
  let siteAt: Position = { line: 1, column: 1 };
  let unit: Unit = 'kW';
  let header = false;
  const points: SourcePoint[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '') return;
    if (trimmed.startsWith('#')) {
      const directive = DIRECTIVE.exec(trimmed);
      if (!directive || header) return;
      const [, key, value] = directive;
      if (key.toLowerCase() === 'site') {
        site = value;
        siteAt = { line, column: raw.indexOf(value) + 1 };
      } else if (value in UNITS) {
        unit = value as Unit;
      } else {
        fail(line, raw.indexOf(value) + 1, `unknown unit ${JSON.stringify(value)}: use kW or MW`);
      }
      return;
    }
    const cells = splitCells(raw);
    if (!header) {
      header = true;
      const names = cells.map((c) => c.text.toLowerCase());
      if (names.join(',') !== HEADER.join(',')) fail(line, 1, `the header must be "${HEADER.join(',')}"`);
      return;
    }
    const point = csvPoint(cells, line, unit, fail);
    if (point) points.push(point);
  });
  if (!header) fail(1, 1, `the file has no "${HEADER.join(',')}" header`);
  if (site === '') fail(siteAt.line, siteAt.column, 'site: must not be empty');
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, file: { file: path, format: 'csv', site, siteAt, unit, points, windows: [], contentHash } };
}

interface Cell {
  text: string;
  column: number;
}

/** Splits on commas; spreadsheet exports may quote a cell, so surrounding quotes are dropped. */
function splitCells(raw: string): Cell[] {
  const cells: Cell[] = [];
  let start = 0;
  for (const part of raw.split(',')) {
    const lead = part.length - part.trimStart().length;
    cells.push({ text: part.trim().replace(/^"(.*)"$/, '$1'), column: start + lead + 1 });
    start += part.length + 1;
  }
  return cells;
}

function csvPoint(
  cells: Cell[],
  line: number,
  unit: Unit,
  fail: (line: number, column: number, rule: string) => void,
): SourcePoint | null {
  if (cells.length !== 2) {
    fail(line, 1, `expected 2 cells (valid_time,value), found ${cells.length}`);
    return null;
  }
  const [time, value] = cells;
  const parsedTime = MinuteInstant.safeParse(time.text);
  if (!parsedTime.success) fail(line, time.column, `valid_time: ${parsedTime.error.issues[0].message}`);
  const number = value.text === '' ? NaN : Number(value.text);
  if (!Number.isFinite(number))
    fail(line, value.column, `value: must be a number, found ${JSON.stringify(value.text)}`);
  else if (number < 0) fail(line, value.column, 'value: must not be negative');
  if (!parsedTime.success || !Number.isFinite(number) || number < 0) return null;
  return {
    time: parsedTime.data,
    valueKw: toKw(number, unit),
    at: { line, column: time.column },
    valueAt: { line, column: value.column },
  };
}

/** Reads every capacity file of `dir`; errors of all files are collected, not just the first. */
export function readCapacityDir(dir: string): { files: CapacityFile[]; errors: InputFileError[] } {
  const listed = listCapacityFiles(dir);
  const files: CapacityFile[] = [];
  const errors = [...listed.errors];
  for (const path of listed.files) {
    const result = readCapacityFile(path);
    if (result.ok) files.push(result.file);
    else errors.push(...result.errors);
  }
  return { files, errors };
}
