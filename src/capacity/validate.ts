// The rules a capacity file must pass before anything is sent. The offline rules (order,
// duplicates, windows) need only the file; the site rules (the site exists, values within its
// nameplate) need the service's site list. Every error names file, line, column and rule.
import { nameplateKw, type SiteResponse } from '../api/schemas.js';
import { ConfigError } from '../errors.js';
import { formatMinute } from '../time.js';
import { InputFileError } from '../yaml.js';
import { readCapacityDir, type CapacityFile, type Position, type SourceWindow } from './files.js';

/** A change of available capacity: from `time` on, `valueKw` holds until the next point. */
export interface TimelinePoint {
  time: number;
  valueKw: number;
}

/** A file that passed the offline rules, with its windows compiled into points. */
export interface Timeline {
  source: CapacityFile;
  points: TimelinePoint[];
}

/** A timeline whose site is known to the service. */
export interface SiteTimeline extends Timeline {
  siteId: string;
  siteName: string;
  nameplateKw: number | null;
}

/** One or more files broke a rule: nothing may be pushed (a config error: exit 2). */
export class CapacityConfigError extends ConfigError {
  constructor(readonly errors: InputFileError[]) {
    super(
      `${errors.length} error${errors.length === 1 ? '' : 's'} in the capacity files:\n${errors.map((e) => `  ${e.message}`).join('\n')}`,
    );
  }
}

function errorAt(file: CapacityFile, at: Position, rule: string): InputFileError {
  return new InputFileError(file.file, at.line, at.column, rule);
}

/** Points in strict time order, windows well-formed, apart, and after a point they can restore. */
export function validateFile(file: CapacityFile): InputFileError[] {
  const errors: InputFileError[] = [];
  if (file.points.length === 0 && file.windows.length === 0) {
    errors.push(errorAt(file, file.siteAt, 'points: the file holds no capacity points'));
  }
  file.points.forEach((point, i) => {
    const previous = file.points[i - 1];
    if (!previous) return;
    if (point.time === previous.time) {
      errors.push(
        errorAt(file, point.at, `valid_time: duplicate ${formatMinute(point.time)}, also at line ${previous.at.line}`),
      );
    } else if (point.time < previous.time) {
      errors.push(
        errorAt(
          file,
          point.at,
          `valid_time: ${formatMinute(point.time)} comes before ${formatMinute(previous.time)} (line ${previous.at.line}): points must be in time order`,
        ),
      );
    }
  });
  for (const window of file.windows) errors.push(...windowErrors(file, window));
  return errors;
}

function windowErrors(file: CapacityFile, window: SourceWindow): InputFileError[] {
  const errors: InputFileError[] = [];
  if (window.to <= window.from) {
    errors.push(
      errorAt(file, window.toAt, `to: ${formatMinute(window.to)} must be after from ${formatMinute(window.from)}`),
    );
  }
  const overlapping = file.windows.find(
    (other) => other !== window && other.at.line < window.at.line && other.from < window.to && window.from < other.to,
  );
  if (overlapping) {
    errors.push(
      errorAt(
        file,
        window.at,
        `windows: ${span(window)} overlaps the window at line ${overlapping.at.line} (${span(overlapping)})`,
      ),
    );
  }
  const inside = file.points.find((p) => p.time >= window.from && p.time < window.to);
  if (inside) {
    errors.push(
      errorAt(
        file,
        inside.at,
        `valid_time: ${formatMinute(inside.time)} falls inside the window at line ${window.at.line} (${span(window)}); move it out or end the window before it`,
      ),
    );
  }
  if (!file.points.some((p) => p.time < window.from)) {
    errors.push(
      errorAt(
        file,
        window.at,
        `windows: ${span(window)} starts before the first point: add a point before it, giving the capacity the window restores`,
      ),
    );
  }
  return errors;
}

function span(window: SourceWindow): string {
  return `${formatMinute(window.from)}..${formatMinute(window.to)}`;
}

/**
 * The file's timeline as the service will hold it: the points, each window's drop at `from` and
 * its restore at `to` to the value in force before the window (unless a point or another window
 * starts right there), in time order, without points that repeat the value before them.
 */
export function compileTimeline(file: CapacityFile): TimelinePoint[] {
  const byTime = new Map<number, number>();
  for (const p of file.points) byTime.set(p.time, p.valueKw);
  for (const w of file.windows) {
    if (!byTime.has(w.to) && !file.windows.some((other) => other.from === w.to)) {
      byTime.set(w.to, valueBefore(file, w.from));
    }
  }
  for (const w of file.windows) byTime.set(w.from, w.valueKw);
  const sorted = [...byTime].sort(([a], [b]) => a - b).map(([time, valueKw]) => ({ time, valueKw }));
  return withoutRepeats(sorted);
}

/** The value of the last point before `time` (validation guarantees there is one before a window). */
function valueBefore(file: CapacityFile, time: number): number {
  let value = 0;
  for (const p of file.points) if (p.time < time) value = p.valueKw;
  return value;
}

/** Drops points that only repeat the value in force: the timeline means the same without them. */
export function withoutRepeats(points: TimelinePoint[]): TimelinePoint[] {
  return points.filter((p, i) => i === 0 || p.valueKw !== points[i - 1].valueKw);
}

function byPosition(a: InputFileError, b: InputFileError): number {
  return a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column;
}

/** Reads and checks every file of `dir` with the rules that need no network. */
export function checkCapacityDir(dir: string): { timelines: Timeline[]; errors: InputFileError[] } {
  const read = readCapacityDir(dir);
  const errors = [...read.errors];
  const timelines: Timeline[] = [];
  for (const file of read.files) {
    const fileErrors = validateFile(file);
    if (fileErrors.length > 0) errors.push(...fileErrors);
    else timelines.push({ source: file, points: compileTimeline(file) });
  }
  return { timelines, errors: errors.sort(byPosition) };
}

/**
 * Matches each timeline to one of the account's sites (by id, else by unique name), and checks
 * that no site has two files and that no value exceeds the nameplate by more than `maxOverPct`.
 */
export function resolveSites(
  timelines: Timeline[],
  sites: SiteResponse[],
  maxOverPct: number,
): { resolved: SiteTimeline[]; errors: InputFileError[] } {
  const resolved: SiteTimeline[] = [];
  const errors: InputFileError[] = [];
  const claimed = new Map<string, CapacityFile>();
  for (const timeline of timelines) {
    const file = timeline.source;
    const match = findSite(file.site, sites);
    if (typeof match === 'string') {
      errors.push(errorAt(file, file.siteAt, `site: ${match}`));
      continue;
    }
    const earlier = claimed.get(match.site_id);
    if (earlier) {
      errors.push(
        errorAt(
          file,
          file.siteAt,
          `site: ${match.name} (${match.site_id}) already has its capacity in ${earlier.file}`,
        ),
      );
      continue;
    }
    claimed.set(match.site_id, file);
    const nameplate = nameplateKw(match);
    const over = nameplate === null ? [] : nameplateErrors(file, nameplate, maxOverPct);
    if (over.length > 0) errors.push(...over);
    else resolved.push({ ...timeline, siteId: match.site_id, siteName: match.name, nameplateKw: nameplate });
  }
  return { resolved, errors: errors.sort(byPosition) };
}

/** The site with this id, else the one site with this name, else why there is none. */
function findSite(text: string, sites: SiteResponse[]): SiteResponse | string {
  const byId = sites.find((s) => s.site_id === text || s.id === text);
  if (byId) return byId;
  const byName = sites.filter((s) => s.name === text);
  if (byName.length === 1) return byName[0];
  if (byName.length > 1) {
    return `${JSON.stringify(text)} names ${byName.length} sites (${byName.map((s) => s.site_id).join(', ')}): use the site id`;
  }
  return `unknown site ${JSON.stringify(text)}: no site of this account has that id or name`;
}

function nameplateErrors(file: CapacityFile, nameplate: number, maxOverPct: number): InputFileError[] {
  const limit = nameplate * (1 + maxOverPct / 100);
  const values = [
    ...file.points.map((p) => ({ valueKw: p.valueKw, at: p.valueAt })),
    ...file.windows.map((w) => ({ valueKw: w.valueKw, at: w.valueAt })),
  ];
  return values
    .filter((v) => v.valueKw > limit)
    .map((v) =>
      errorAt(
        file,
        v.at,
        `value: ${v.valueKw} kW is above the site's nameplate ${nameplate} kW by more than ${maxOverPct}% (at most ${round(limit)} kW)`,
      ),
    );
}

function round(kw: number): number {
  return Math.round(kw * 1000) / 1000;
}
