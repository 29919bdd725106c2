// A config error names the file and the line of the offending key itself.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';

function configError(text: string): { file: string; message: string } {
  const file = join(mkdtempSync(join(tmpdir(), 'efsync-config-')), 'efsync.yaml');
  writeFileSync(file, text);
  try {
    loadConfig(file, {});
  } catch (error) {
    return { file, message: (error as Error).message };
  }
  throw new Error('the config was accepted');
}

describe('config errors', () => {
  it("an unknown key is reported at its own line, not its section's", () => {
    const { file, message } = configError('sync:\n  concurrency: 4\n  lookbak: 6h\n');
    expect(message).toBe(`${file}:3:12: sync.lookbak: Unrecognized key: "lookbak"`);
  });

  it('an unknown key whose value is a nested map is reported at the key, not at its first child', () => {
    const { file, message } = configError('warehouse:\n  path: data/w.duckdb\n  extra:\n    a: 1\n');
    expect(message).toBe(`${file}:3:3: warehouse.extra: Unrecognized key: "extra"`);
  });

  it('an unknown top-level key is reported at its line', () => {
    const { file, message } = configError('sync:\n  concurrency: 4\nsinc:\n  concurrency: 8\n');
    expect(message).toBe(`${file}:3:1: sinc: Unrecognized key: "sinc"`);
  });

  it('a YAML syntax error is reported in one line at its line and column', () => {
    const { file, message } = configError('warehouse:\n  path: [unclosed\nservice:\n  base_url: x\n');
    expect(message).toMatch(
      new RegExp(`^${file}:3:1: Flow sequence in block collection must be sufficiently indented`),
    );
    expect(message).not.toContain('\n');
  });

  it('a value of the wrong type is reported at the value, naming the type wanted', () => {
    const { file, message } = configError('warehouse:\n  path: /tmp/w.duckdb\nsync:\n  concurrency: "lots"\n');
    expect(message).toBe(`${file}:4:16: sync.concurrency: Invalid input: expected number, received string`);
  });
});

describe('accuracy.events', () => {
  it('reads threshold and ramp events with their defaults', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'efsync-config-')), 'efsync.yaml');
    writeFileSync(
      file,
      'accuracy:\n  events:\n    - { name: high, kind: threshold, threshold: 80, unit: pct }\n    - { name: ramp, kind: ramp, threshold: 20, direction: both }\n',
    );
    expect(loadConfig(file, {}).accuracy.events).toEqual([
      { name: 'high', kind: 'threshold', threshold: 80, unit: 'pct', direction: 'up', span: 3_600_000 },
      { name: 'ramp', kind: 'ramp', threshold: 20, unit: 'kw', direction: 'both', span: 3_600_000 },
    ]);
  });

  it('a wrong field of an event is reported at its line', () => {
    const { file, message } = configError(
      'accuracy:\n  events:\n    - name: high\n      kind: threshold\n      threshold: 80\n      direction: both\n',
    );
    expect(message).toMatch(
      new RegExp(`^${file}:6:\\d+: accuracy\\.events\\.0\\.direction: direction both applies to ramps only`),
    );
  });
});

describe('retention', () => {
  it('is on by default: every vintage 30 days, then the day-ahead and the last; revisions 30 days', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'efsync-config-')), 'efsync.yaml');
    writeFileSync(file, 'log:\n  level: warn\n');
    expect(loadConfig(file, {}).retention).toEqual({
      enabled: true,
      all_vintages: 30 * 86_400_000,
      keep: ['day_ahead', 'latest'],
      actual_revisions: 30 * 86_400_000,
    });
  });

  it('reads lead times beside day_ahead and latest', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'efsync-config-')), 'efsync.yaml');
    writeFileSync(file, 'retention:\n  all_vintages: 14d\n  keep: [day_ahead, latest, 6h, 24h]\n');
    expect(loadConfig(file, {}).retention).toEqual({
      enabled: true,
      all_vintages: 14 * 86_400_000,
      keep: ['day_ahead', 'latest', 6 * 3_600_000, 24 * 3_600_000],
      actual_revisions: 30 * 86_400_000,
    });
  });

  it('a kept vintage that is neither day_ahead, latest nor a lead time is reported at its line', () => {
    const { file, message } = configError('retention:\n  keep: [day_ahead, dayahead]\n');
    expect(message).toMatch(
      new RegExp(`^${file}:2:\\d+: retention.keep.1: day_ahead, latest or a lead time such as 6h`),
    );
  });
});
