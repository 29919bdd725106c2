// SIGTERM mid-run: the current site's transaction finishes, the run is recorded as interrupted,
// the process exits 5 and the lock is free. A second SIGTERM exits 5 at once after recording the
// run. A killed process (SIGKILL) is found out by the next run.
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { loadJobs } from '../src/runner/registry.js';
import { runJob } from '../src/runner/run.js';
import { collectStatus } from '../src/runner/status.js';
import { type Child, SLOW_RUN, startChild } from './fixtures/runner-child.js';
import { publishedAll, publishedRuns, quietLog, tableJob, tempConfig } from './fixtures/runner-setup.js';
import { builtChild } from './built.js';

/** SIGTERM, then a second one once the first is handled (signals sent together arrive as one). */
async function twoSignals(child: Child): Promise<void> {
  const stopping = new Promise((resolve) =>
    child.process.stderr?.on('data', (chunk: string) => {
      if (chunk.includes('stopping after the site in flight')) resolve(undefined);
    }),
  );
  child.process.kill('SIGTERM');
  await stopping;
  child.process.kill('SIGTERM');
}

describe('stopping a run', () => {
  it('SIGTERM mid-run: whole sites only, the run recorded as interrupted, exit 5', async () => {
    const config = tempConfig();
    const child = startChild([...SLOW_RUN, config.warehouse.path, '1000', '0']);
    await child.line(/^site 2 done/);
    child.process.kill('SIGTERM');
    const { code, stdout } = await child.exit;
    expect(code).toBe(EXIT.interrupted);
    expect(stdout).toContain('interrupted: interrupted (SIGTERM)');

    const [run] = await publishedRuns(config);
    expect(run).toMatchObject({ job: 'slow-sync', status: 'interrupted', errorSummary: 'interrupted (SIGTERM)' });
    const perSite = await publishedAll<{ site: number; n: number }>(
      config,
      'SELECT site, count(*)::INTEGER AS n FROM slow_rows GROUP BY site ORDER BY site',
    );
    expect(perSite.length).toBeGreaterThanOrEqual(3);
    expect(perSite.length).toBeLessThan(1000);
    expect(perSite.every((s) => s.n === 50)).toBe(true);
    expect(run.rowsWritten).toEqual({ slow_rows: perSite.length * 50 });

    // The lock is free: the next run starts at once.
    expect((await runJob(tableJob('next'), { config, log: quietLog, lockWaitMs: 0 })).status).toBe('ok');
  });

  it('a second SIGTERM: exit 5 at once, the run recorded as interrupted, the site in flight rolled back', async () => {
    const config = tempConfig();
    const child = startChild([...SLOW_RUN, config.warehouse.path, '1000', '0']);
    await child.line(/^site 1 done/);
    await twoSignals(child);
    const { code, stderr } = await child.exit;
    expect(code).toBe(EXIT.interrupted);
    expect(stderr).toContain('second SIGTERM: recording the run as interrupted, then exiting');

    // The next run publishes what the stopped one recorded: interrupted, not left running or crashed.
    expect((await runJob(tableJob('next'), { config, log: quietLog, lockWaitMs: 0 })).status).toBe('ok');
    const stopped = (await publishedRuns(config)).find((r) => r.job === 'slow-sync');
    expect(stopped).toMatchObject({
      status: 'interrupted',
      errorSummary: 'interrupted (second signal): the site in flight rolled back',
    });
    const perSite = await publishedAll<{ n: number }>(
      config,
      'SELECT count(*)::INTEGER AS n FROM slow_rows GROUP BY site',
    );
    expect(perSite.every((s) => s.n === 50)).toBe(true);
  });

  it('a second SIGTERM during a long DuckDB statement interrupts it: exit 5, the run recorded as interrupted', async () => {
    const config = tempConfig();
    const child = startChild([...SLOW_RUN, config.warehouse.path, '1000', '0', 'long']);
    await child.line(/^long statement started/);
    await twoSignals(child);
    // Were the statement not interrupted, the process would run for minutes: stop it then.
    const hung = setTimeout(() => child.process.kill('SIGKILL'), 60_000);
    const { code } = await child.exit;
    clearTimeout(hung);
    expect(code).toBe(EXIT.interrupted);
    expect((await runJob(tableJob('next'), { config, log: quietLog, lockWaitMs: 0 })).status).toBe('ok');
    const stopped = (await publishedRuns(config)).find((r) => r.job === 'slow-sync');
    expect(stopped).toMatchObject({ status: 'interrupted' });
    const perSite = await publishedAll<{ site: number }>(config, 'SELECT DISTINCT site FROM slow_rows');
    expect(perSite).toEqual([{ site: 0 }]);
  }, 120_000);

  it('SIGTERM to a command that writes nothing, during a long DuckDB statement: exit 5 at once', async () => {
    const child = startChild([builtChild('test/fixtures/long-statement.ts')]);
    await child.line(/^long statement started/);
    child.process.kill('SIGTERM');
    const hung = setTimeout(() => child.process.kill('SIGKILL'), 60_000);
    const { code } = await child.exit;
    clearTimeout(hung);
    expect(code).toBe(EXIT.interrupted);
  }, 120_000);

  it('a killed process: status names the dead writer, the next run records it as crashed', async () => {
    const config = tempConfig();
    await runJob(tableJob('first'), { config, log: quietLog });
    const child = startChild([...SLOW_RUN, config.warehouse.path, '1000', '0']);
    await child.line(/^site 1 done/);
    child.process.kill('SIGKILL');
    await child.exit;

    const registry = await loadJobs();
    const before = await collectStatus(config, registry);
    expect(before.writing).toMatchObject({ job: 'slow-sync', pid: child.process.pid, alive: false });

    expect((await runJob(tableJob('next'), { config, log: quietLog, lockWaitMs: 0 })).status).toBe('ok');
    const crashed = (await publishedRuns(config)).find((r) => r.job === 'slow-sync');
    expect(crashed).toMatchObject({ status: 'crashed', pid: child.process.pid });
    expect(crashed?.errorSummary).toContain(`pid ${child.process.pid}) ended without recording an outcome`);
    // Sites committed before the kill are there, each whole; the one in flight rolled back.
    const perSite = await publishedAll<{ n: number }>(
      config,
      'SELECT count(*)::INTEGER AS n FROM slow_rows GROUP BY site',
    );
    expect(perSite.every((s) => s.n === 50)).toBe(true);
    expect((await collectStatus(config, registry)).writing).toBeNull();
  });
});
