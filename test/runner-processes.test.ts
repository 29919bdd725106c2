// Two efsync processes at once never both write: the second exits 3 naming the holder, or waits
// for the first to finish and then runs.
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { SLOW_RUN, startChild } from './fixtures/runner-child.js';
import { publishedRuns, tempConfig } from './fixtures/runner-setup.js';

describe('two writers', () => {
  it('the second exits 3 naming the first, or waits and runs after it', async () => {
    const config = tempConfig();
    const first = startChild([...SLOW_RUN, config.warehouse.path, '12', '0']);
    await first.line(/^site 0 done/);

    const impatient = await startChild([...SLOW_RUN, config.warehouse.path, '1', '0']).exit;
    expect(impatient.code).toBe(EXIT.busy);
    expect(impatient.stdout).toMatch(
      new RegExp(
        `^busy: warehouse .* is being written by efsync slow-sync \\(run \\S+, pid ${first.process.pid} on host .*\\)`,
        'm',
      ),
    );

    const patient = startChild([...SLOW_RUN, config.warehouse.path, '2', '120000']);
    const [a, b] = await Promise.all([first.exit, patient.exit]);
    expect([a.code, b.code]).toEqual([EXIT.ok, EXIT.ok]);

    const runs = await publishedRuns(config);
    expect(runs.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(runs[1].startedAt).toBeGreaterThanOrEqual(runs[0].endedAt ?? Infinity);
  });
});
