// `efsync capacity check`: the capacity folder read and checked with no network; every error
// names file, line, column and rule; windows compile into a drop and a restore; MW becomes kW.
import { execFile } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { checkCapacityDir } from '../src/capacity/validate.js';
import { formatMinute } from '../src/time.js';
import { tempDir, writeFiles } from './capacity-support.js';
import { CLI } from './fixtures/runner-child.js';

const run = promisify(execFile);

/** The compiled timelines of a folder, as `{file name: [[valid_time, kW], ...]}`. */
function timelinesOf(files: Record<string, string>) {
  const dir = tempDir('capacity-check');
  writeFiles(dir, files);
  const { timelines, errors } = checkCapacityDir(dir);
  expect(errors.map((e) => e.message)).toEqual([]);
  return Object.fromEntries(
    timelines.map((t) => [
      t.source.file.slice(dir.length + 1),
      { site: t.source.site, points: t.points.map((p) => [formatMinute(p.time), p.valueKw]) },
    ]),
  );
}

/** The error messages for one file `name` holding `text`, with the folder path cut off. */
function errorsOf(name: string, text: string): string[] {
  const dir = tempDir('capacity-check');
  writeFiles(dir, { [name]: text });
  return checkCapacityDir(dir).errors.map((e) => e.message.slice(dir.length + 1));
}

const UPPSALA = `site: Uppsala solar fixed
unit: kW
points:
`;

describe('capacity files', () => {
  it('compiles a window into a drop at from and a restore at to, to the value in force before it', () => {
    const files = timelinesOf({
      'uppsala.yaml': `# maintenance plan
site: Uppsala solar fixed
unit: kW
points:
  - valid_time: 2026-12-01T00:00Z
    value: 4000            # after the repowering
  - valid_time: 2026-12-10T00:00Z
    value: 4500
windows:
  - from: 2026-12-03T08:00Z
    to: 2026-12-03T16:00Z
    value: 0
    reason: transformer maintenance
  - from: 2026-12-12T06:00Z
    to: 2026-12-12T09:00Z
    value: 1000
    reason: curtailment ordered by the grid operator
`,
    });
    expect(files['uppsala.yaml']).toEqual({
      site: 'Uppsala solar fixed',
      points: [
        ['2026-12-01T00:00Z', 4000],
        ['2026-12-03T08:00Z', 0],
        ['2026-12-03T16:00Z', 4000],
        ['2026-12-10T00:00Z', 4500],
        ['2026-12-12T06:00Z', 1000],
        ['2026-12-12T09:00Z', 4500],
      ],
    });
  });

  it('lets back-to-back windows hand over without a restore in between', () => {
    const files = timelinesOf({
      'w.yaml': `site: Esbjerg wind
unit: kW
points: [{valid_time: 2026-12-01T00:00Z, value: 36000}]
windows:
  - {from: 2026-12-02T00:00Z, to: 2026-12-02T06:00Z, value: 33000, reason: one turbine down}
  - {from: 2026-12-02T06:00Z, to: 2026-12-02T12:00Z, value: 30000, reason: two turbines down}
`,
    });
    expect(files['w.yaml'].points).toEqual([
      ['2026-12-01T00:00Z', 36000],
      ['2026-12-02T00:00Z', 33000],
      ['2026-12-02T06:00Z', 30000],
      ['2026-12-02T12:00Z', 36000],
    ]);
  });

  it('converts MW to kW exactly, in YAML and in CSV', () => {
    const files = timelinesOf({
      'esbjerg.yaml': `site: Esbjerg wind
unit: MW
points:
  - valid_time: 2026-12-01T00:00Z
    value: 1.1
  - valid_time: 2026-12-02T00:00Z
    value: 30.5
`,
      'freiburg.csv': `# site: Freiburg load
# unit: MW
valid_time,value
2026-12-01T00:00Z,4.9
`,
    });
    expect(files['esbjerg.yaml'].points).toEqual([
      ['2026-12-01T00:00Z', 1100],
      ['2026-12-02T00:00Z', 30500],
    ]);
    expect(files['freiburg.csv'].points).toEqual([['2026-12-01T00:00Z', 4900]]);
  });

  it('takes a CSV file\'s site from a "# site:" line, else from its file name', () => {
    const files = timelinesOf({
      'named.csv': '# site: Freiburg load\nvalid_time,value\n2026-12-01T00:00Z,3500\n',
      'Sevilla solar tracking.csv': 'valid_time,value\r\n"2026-12-01T00:00Z","7000"\r\n2026-12-02T00:00Z, 7400\r\n',
    });
    expect(files['named.csv']).toEqual({ site: 'Freiburg load', points: [['2026-12-01T00:00Z', 3500]] });
    expect(files['Sevilla solar tracking.csv']).toEqual({
      site: 'Sevilla solar tracking',
      points: [
        ['2026-12-01T00:00Z', 7000],
        ['2026-12-02T00:00Z', 7400],
      ],
    });
  });
});

describe('capacity validation errors name file:line:column and the rule', () => {
  const MINUTE_RULE = 'must be UTC at minute precision, YYYY-MM-DDTHH:MMZ';
  const cases: [string, string, string, string[]][] = [
    [
      'a timestamp with seconds',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-12-01T08:00:00Z\n    value: 500\n`,
      [`bad.yaml:4:17: points.0.valid_time: ${MINUTE_RULE}`],
    ],
    [
      'a timestamp with an offset',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-12-01T09:00+01:00\n    value: 500\n`,
      [`bad.yaml:4:17: points.0.valid_time: ${MINUTE_RULE}`],
    ],
    [
      'a date without a time',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-12-01\n    value: 500\n`,
      [`bad.yaml:4:17: points.0.valid_time: ${MINUTE_RULE}`],
    ],
    [
      'a day that does not exist',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-02-30T08:00Z\n    value: 500\n`,
      ['bad.yaml:4:17: points.0.valid_time: not a timestamp: "2026-02-30T08:00Z"'],
    ],
    [
      'a negative value',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-12-01T08:00Z\n    value: -5\n`,
      ['bad.yaml:5:12: points.0.value: must not be negative'],
    ],
    [
      'a value that is not a number',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-12-01T08:00Z\n    value: "500"\n`,
      ['bad.yaml:5:12: points.0.value: must be a number'],
    ],
    [
      'duplicate times',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-12-01T08:00Z\n    value: 500\n  - valid_time: 2026-12-01T08:00Z\n    value: 600\n`,
      ['bad.yaml:6:17: valid_time: duplicate 2026-12-01T08:00Z, also at line 4'],
    ],
    [
      'unsorted times',
      'bad.yaml',
      `${UPPSALA}  - valid_time: 2026-12-02T08:00Z\n    value: 500\n  - valid_time: 2026-12-01T08:00Z\n    value: 600\n`,
      [
        'bad.yaml:6:17: valid_time: 2026-12-01T08:00Z comes before 2026-12-02T08:00Z (line 4): points must be in time order',
      ],
    ],
    [
      'overlapping windows',
      'bad.yaml',
      `${UPPSALA}  - {valid_time: 2026-12-01T00:00Z, value: 4000}
windows:
  - {from: 2026-12-02T08:00Z, to: 2026-12-02T16:00Z, value: 0, reason: a}
  - {from: 2026-12-02T12:00Z, to: 2026-12-02T18:00Z, value: 0, reason: b}
`,
      [
        'bad.yaml:7:12: windows: 2026-12-02T12:00Z..2026-12-02T18:00Z overlaps the window at line 6 (2026-12-02T08:00Z..2026-12-02T16:00Z)',
      ],
    ],
    [
      'a window that ends before it starts',
      'bad.yaml',
      `${UPPSALA}  - {valid_time: 2026-12-01T00:00Z, value: 4000}
windows:
  - {from: 2026-12-02T08:00Z, to: 2026-12-02T06:00Z, value: 0, reason: a}
`,
      ['bad.yaml:6:35: to: 2026-12-02T06:00Z must be after from 2026-12-02T08:00Z'],
    ],
    [
      'a window with nothing before it to restore',
      'bad.yaml',
      `${UPPSALA}  - {valid_time: 2026-12-05T00:00Z, value: 4000}
windows:
  - {from: 2026-12-02T08:00Z, to: 2026-12-02T16:00Z, value: 0, reason: a}
`,
      [
        'bad.yaml:6:12: windows: 2026-12-02T08:00Z..2026-12-02T16:00Z starts before the first point: add a point before it, giving the capacity the window restores',
      ],
    ],
    [
      'a point inside a window',
      'bad.yaml',
      `${UPPSALA}  - {valid_time: 2026-12-01T00:00Z, value: 4000}
  - {valid_time: 2026-12-02T10:00Z, value: 3000}
windows:
  - {from: 2026-12-02T08:00Z, to: 2026-12-02T16:00Z, value: 0, reason: a}
`,
      [
        'bad.yaml:5:18: valid_time: 2026-12-02T10:00Z falls inside the window at line 7 (2026-12-02T08:00Z..2026-12-02T16:00Z); move it out or end the window before it',
      ],
    ],
    [
      'an unknown unit',
      'bad.yaml',
      'site: Esbjerg wind\nunit: GW\npoints: [{valid_time: 2026-12-01T00:00Z, value: 1}]\n',
      ['bad.yaml:2:7: unit: unknown unit "GW": use kW or MW'],
    ],
    [
      'a misspelt key',
      'bad.yaml',
      'site: Esbjerg wind\nunit: kW\npionts: [{valid_time: 2026-12-01T00:00Z, value: 1}]\n',
      ['bad.yaml:3:9: pionts: Unrecognized key: "pionts"'],
    ],
    [
      'a YAML alias bomb',
      'bad.yaml',
      `site: Esbjerg wind
unit: kW
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
points: [*d]
`,
      ['bad.yaml:1:1: YAML aliases expand too far (Excessive alias count indicates a resource exhaustion attack)'],
    ],
    [
      'a CSV line that is not a number',
      'bad.csv',
      'valid_time,value\n2026-12-01T00:00Z,4000\n2026-12-02T00:00Z,4O00\n',
      ['bad.csv:3:19: value: must be a number, found "4O00"'],
    ],
    [
      'a CSV line with a bad time and a negative value',
      'bad.csv',
      '# site: Freiburg load\nvalid_time,value\n2026-12-01 00:00,-1\n',
      [`bad.csv:3:1: valid_time: ${MINUTE_RULE}`, 'bad.csv:3:18: value: must not be negative'],
    ],
    [
      'a CSV line with a missing cell',
      'bad.csv',
      'valid_time,value\n2026-12-01T00:00Z\n',
      ['bad.csv:2:1: expected 2 cells (valid_time,value), found 1'],
    ],
    [
      'a CSV file with the wrong header',
      'bad.csv',
      'time,kw\n2026-12-01T00:00Z,1\n',
      ['bad.csv:1:1: the header must be "valid_time,value"'],
    ],
    [
      'unsorted CSV lines',
      'bad.csv',
      'valid_time,value\n2026-12-02T00:00Z,1\n2026-12-01T00:00Z,2\n',
      [
        'bad.csv:3:1: valid_time: 2026-12-01T00:00Z comes before 2026-12-02T00:00Z (line 2): points must be in time order',
      ],
    ],
  ];

  it.each(cases)('%s', (_name, file, text, expected) => {
    expect(errorsOf(file, text)).toEqual(expected);
  });

  it('names a capacity folder that does not exist', () => {
    const missing = join(tempDir('capacity-check'), 'nope');
    expect(checkCapacityDir(missing).errors.map((e) => e.message)).toEqual([
      `${missing}:1:1: the capacity folder does not exist (set --dir or capacity.dir)`,
    ]);
  });

  it('rejects a file that links outside the folder', () => {
    const outside = tempDir('capacity-outside');
    writeFiles(outside, { 'secret.yaml': `${UPPSALA}  - {valid_time: 2026-12-01T00:00Z, value: 4000}\n` });
    const dir = tempDir('capacity-check');
    symlinkSync(join(outside, 'secret.yaml'), join(dir, 'escape.yaml'));
    const [error] = checkCapacityDir(dir).errors;
    expect(error.message).toMatch(
      /escape\.yaml:1:1: the file resolves to .*secret\.yaml, outside the capacity folder /,
    );
  });
});

describe('efsync capacity check', () => {
  const env = { ...process.env };
  delete env.EFSYNC_CONFIG;
  const cli = (dir: string) =>
    run(process.execPath, [...CLI, 'capacity', 'check', '--dir', dir], { env }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );

  it('exits 0 for valid files and says what it could not check offline', async () => {
    const dir = tempDir('capacity-cli');
    writeFiles(dir, { 'uppsala.yaml': `${UPPSALA}  - {valid_time: 2026-12-01T00:00Z, value: 4000}\n` });
    const result = await cli(dir);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('uppsala.yaml: site Uppsala solar fixed, 1 points');
    expect(result.stdout).toContain('Not checked offline (needs the service): that each site exists');
  });

  it('exits 2 naming every error of every file', async () => {
    const dir = tempDir('capacity-cli');
    writeFiles(dir, {
      'a.yaml': `${UPPSALA}  - {valid_time: 2026-12-01T00:00:00Z, value: 4000}\n`,
      'b.csv': 'valid_time,value\n2026-12-01T00:00Z,x\n',
    });
    const result = await cli(dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `${join(dir, 'a.yaml')}:4:18: points.0.valid_time: must be UTC at minute precision`,
    );
    expect(result.stderr).toContain(`${join(dir, 'b.csv')}:2:19: value: must be a number, found "x"`);
    expect(result.stderr).toContain('2 errors in 2 files: nothing was pushed');
  });
});
