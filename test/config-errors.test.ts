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
