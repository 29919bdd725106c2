// Bring your own forecast: `efsync accuracy --pairs FILE.csv` scores a CSV with no service and no
// warehouse; a malformed file gives an error naming the line and the column.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { validatePairsCsv } from '../src/accuracy/input/pairs.js';
import { CLI } from './fixtures/runner-child.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-pairs-'));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function efsync(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...CLI, ...args], { cwd: dir });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const GOOD = `valid_time,actual,forecast,reference,capacity,q10,q90
2026-03-01T01:00:00Z,2,3,2,10,1,4
2026-03-01T02:00Z,4,3,2,10,2,5
2026-03-01 03:00,6,6,4,10,5,7
2026-03-01T04:00:00+00:00,8,10,6,10,7,11
`;

describe('accuracy --pairs', () => {
  it('prints a JSON array of rows with group, key, n and one field per metric', async () => {
    const { code, stdout } = await efsync(
      'accuracy',
      '--pairs',
      file('good.csv', GOOD),
      '--by',
      'total,hour',
      '--json',
      '--interval-label',
      'ending',
    );
    expect(code).toBe(0);
    const rows = JSON.parse(stdout);
    expect(rows).toHaveLength(5);
    expect(rows[0]).toMatchObject({
      subject: 'pairs',
      model: null,
      group: 'total',
      key: 'all',
      n: 4,
      mae: 1,
      mbe: 0.5,
      mape: 25,
      nmae: 10,
    });
    for (const field of [
      'rmse',
      'nmbe',
      'nrmse',
      'skill',
      'r',
      'r2',
      'crmse',
      'ksi',
      'over',
      'cpi',
      'pinball_q10',
      'pinball_q90',
      'crps',
      'coverage',
    ]) {
      expect(rows[0]).toHaveProperty(field);
    }
    expect(rows[1]).toMatchObject({ group: 'hour', key: '00', n: 1, r: 'NaN' }); // one pair has no correlation
  });

  it('prints a table and writes a self-contained report when asked', async () => {
    const report = join(dir, 'out', 'report.html');
    const { code, stdout, stderr } = await efsync('accuracy', '--pairs', file('table.csv', GOOD), '--report', report);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^subject\s+group\s+key\s+n\s+dropped\s+flagged\s+MAE/);
    expect(stdout).toMatch(/pairs\s+total\s+all\s+4\s+0\s+0\s+1\.000/);
    expect(stderr).toContain(`report: ${report}`);
    const html = readFileSync(report, 'utf8');
    expect(html).toContain('<svg');
    expect(html).not.toMatch(/(src|href)=["']https?:/);
  });

  it('names the line and column of a value that is not a number', async () => {
    const bad = file('bad.csv', GOOD.replace('4,3,2,10,2,5', '4,three,2,10,2,5'));
    const { code, stderr } = await efsync('accuracy', '--pairs', bad);
    expect(code).toBe(2);
    expect(stderr).toContain(`${bad}:3:21: column "forecast": not a number: "three"`);
  });

  it('names the line of a row with too few fields, a bad timestamp, or an unknown column', async () => {
    await expect(validatePairsCsv(file('short.csv', GOOD.replace('6,6,4,10,5,7', '6,6,4')))).rejects.toThrow(
      /short\.csv:4:1: 4 fields where the header has 7/,
    );
    await expect(
      validatePairsCsv(file('time.csv', GOOD.replace('2026-03-01 03:00', '2026-03-41 03:00'))),
    ).rejects.toThrow(/time\.csv:4:1: column "valid_time": not a timestamp: "2026-03-41 03:00"/);
    await expect(validatePairsCsv(file('col.csv', GOOD.replace('capacity', 'kapacity')))).rejects.toThrow(
      /col\.csv:1:38: unknown column "kapacity"/,
    );
    await expect(validatePairsCsv(file('none.csv', 'valid_time,actual\n2026-03-01T01:00:00Z,1\n'))).rejects.toThrow(
      /nothing to score/,
    );
  });

  it('refuses groups the file cannot provide', async () => {
    const { code, stderr } = await efsync('accuracy', '--pairs', file('nolead.csv', GOOD), '--by', 'lead');
    expect(code).toBe(2);
    expect(stderr).toContain('--by lead needs an issue_time column');
  });
});

describe('a flags column', () => {
  const FLAGGED = `valid_time,actual,forecast,flags
2026-03-01T01:00:00Z,2,3,
2026-03-01T02:00:00Z,4,3,0
2026-03-01T03:00:00Z,90,6,8
2026-03-01T04:00:00Z,8,10,34
`;

  it('drops pairs whose actual is flagged, counted in the flagged column, unless --include-flagged', async () => {
    const pairs = file('flagged.csv', FLAGGED);
    const { stdout } = await efsync('accuracy', '--pairs', pairs, '--by', 'total', '--json');
    const [row] = JSON.parse(stdout) as Record<string, number>[];
    expect([row.n, row.dropped, row.dropped_flagged, row.mae]).toEqual([2, 2, 2, 1]);
    const table = await efsync('accuracy', '--pairs', pairs, '--by', 'total');
    expect(table.stdout).toMatch(/n\s+dropped\s+flagged[^\n]*\n[^\n]*\s2\s+2\s+2\s/);
    const all = await efsync('accuracy', '--pairs', pairs, '--by', 'total', '--json', '--include-flagged');
    const [kept] = JSON.parse(all.stdout) as Record<string, number>[];
    expect([kept.n, kept.dropped_flagged, kept.mae]).toEqual([4, 0, (1 + 1 + 84 + 2) / 4]);
    // the report counts the flagged actuals by efsync's bits: 8 over_capacity; 34 = 2 stale + 32 clipping
    const report = join(dir, 'flagged.html');
    await efsync('accuracy', '--pairs', pairs, '--report', report);
    expect(readFileSync(report, 'utf8')).toMatch(
      /<th>site<\/th><th>stale<\/th><th>over_capacity<\/th><th>clipping<\/th><\/tr><\/thead><tbody><tr><td>all<\/td><td>1<\/td><td>1<\/td><td>1<\/td>/,
    );
  });

  it('must hold integers', async () => {
    const { code, stderr } = await efsync(
      'accuracy',
      '--pairs',
      file('bad-flags.csv', 'valid_time,actual,forecast,flags\n2026-03-01T01:00:00Z,2,3,x\n'),
    );
    expect(code).toBe(2);
    expect(stderr).toContain('bad-flags.csv:2:26: column "flags": not a flag bitmask: "x"');
  });
});
