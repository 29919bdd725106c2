// The human log lines of a terminal (src/human-log.ts, src/log.ts): what a line shows, which
// levels a person sees, and that secrets stay out as they do of the JSON lines.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { humanLine } from '../src/human-log.js';
import { createLogger, humanLevel, setLogOutput } from '../src/log.js';

const record = (fields: Record<string, unknown>) =>
  JSON.stringify({ level: 40, time: '2026-11-26T01:08:53.123Z', app: 'efsync', runId: '20261126T0108Z-ab', ...fields });

describe('humanLine', () => {
  it('shows the time of day, the level, the message and the fields that matter, errors by their message', () => {
    const line = humanLine(
      record({
        job: 'nightly',
        step: 'sync-forecasts',
        siteId: 's1',
        resource: 'forecasts',
        path: '/platform/v2/sites/s1/forecast?start_date=x',
        err: { type: 'ServiceError', message: 'HTTP 500: boom', stack: 'ServiceError: HTTP 500: boom\n  at x' },
        msg: 'site resource failed; going on with the others',
      }),
    );
    expect(line).toMatch(
      /^\d\d:\d\d:\d\d WARN {2}site resource failed; going on with the others {2}job=nightly step=sync-forecasts siteId=s1 resource=forecasts err="HTTP 500: boom"\n$/,
    );
    expect(line).not.toContain('runId');
    expect(line).not.toContain('stack');
  });

  it('names every level, and passes a line that is not JSON as it is', () => {
    expect(humanLine(record({ level: 50, msg: 'run failed' }))).toMatch(/^\S+ ERROR run failed\n$/);
    expect(humanLine(record({ level: 30, msg: 'run started' }))).toMatch(/^\S+ INFO {2}run started\n$/);
    expect(humanLine('not json')).toBe('not json\n');
  });

  it('colours the level only when asked (a terminal with colours)', () => {
    expect(humanLine(record({ msg: 'x' }), true)).toContain('\x1b[33mWARN \x1b[0m x');
    expect(humanLine(record({ msg: 'x' }))).not.toContain('\x1b[');
  });
});

describe('humanLevel', () => {
  it('is warn and above, or info with --verbose; log.level bounds it only where it asks for fewer or more', () => {
    expect(humanLevel('info', false)).toBe('warn');
    expect(humanLevel('debug', false)).toBe('warn');
    expect(humanLevel('error', false)).toBe('error');
    expect(humanLevel('silent', false)).toBe('silent');
    expect(humanLevel('info', true)).toBe('info');
    expect(humanLevel('warn', true)).toBe('info');
    expect(humanLevel('debug', true)).toBe('debug');
  });
});

describe('createLogger with human lines', () => {
  afterEach(() => {
    setLogOutput({ format: 'json', verbose: false });
    vi.restoreAllMocks();
  });

  it('writes human lines to stderr at warn and above, with no secret', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    setLogOutput({ format: 'human', verbose: false });
    const log = createLogger({ level: 'info' });
    log.info('run started');
    log.warn({ apiKey: 'k-secret', request: { headers: { authorization: 'k-secret' } } }, 'retrying');
    log.error({ err: new Error('refused') }, 'run failed');
    expect(written).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d WARN {2}retrying\n$/),
      expect.stringMatching(/^\d\d:\d\d:\d\d ERROR run failed {2}err=refused\n$/),
    ]);
  });

  it('keeps the configured level (JSON lines) until the command line asks for human lines', () => {
    expect(createLogger({ level: 'info' }).isLevelEnabled('info')).toBe(true);
    setLogOutput({ format: 'human', verbose: false });
    expect(createLogger({ level: 'info' }).isLevelEnabled('info')).toBe(false);
    setLogOutput({ format: 'human', verbose: true });
    expect(createLogger({ level: 'info' }).isLevelEnabled('info')).toBe(true);
  });
});
