// End to end: the nightly chain against the embedded emulator (sync, then the accuracy job), and
// the results an analyst reads from the published warehouse.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import nightly from '../jobs/nightly.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { runJob } from '../src/runner/run.js';
import { Warehouse } from '../src/warehouse/warehouse.js';

describe('accuracy after the sync', () => {
  it("scores the site forecast, every model and the quantile set of the emulator's sites", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-e2e-'));
    const base = loadConfig(undefined, {});
    const config = {
      ...base,
      warehouse: { ...base.warehouse, path: join(dir, 'warehouse.duckdb') },
      accuracy: { ...base.accuracy, report: join(dir, 'report.html') },
      emulator: { ...base.emulator, sites: 4 },
    };
    const result = await runJob(nightly, { config, log: createLogger({ level: 'silent' }) });
    expect(result.status).toBe('ok');
    expect(result.summary.join('\n')).toMatch(/accuracy: ok[\s\S]*site forecast/);
    expect(existsSync(config.accuracy.report)).toBe(true);

    const reader = await Warehouse.open({ path: config.warehouse.path, readOnly: true });
    try {
      const totals = await reader.all<{ subject: string; n: number; nmae: number | null; crps: number | null }>(`
        SELECT subject, max(value) FILTER (WHERE metric = 'n') AS n, max(value) FILTER (WHERE metric = 'nmae') AS nmae,
          max(value) FILTER (WHERE metric = 'crps') AS crps
        FROM accuracy_latest WHERE group_name = 'total' GROUP BY subject ORDER BY subject`);
      expect(totals.map((t) => t.subject)).toEqual(['forecast', 'model', 'quantiles']);
      for (const t of totals) expect(t.n).toBeGreaterThan(0);
      const forecast = totals.find((t) => t.subject === 'forecast')!;
      expect(forecast.nmae).toBeGreaterThan(0);
      expect(forecast.nmae).toBeLessThan(50); // a forecast, not noise: within half the capacity on average
      expect(totals.find((t) => t.subject === 'quantiles')!.crps).toBeGreaterThan(0);
    } finally {
      await reader.close();
    }
  }, 120_000);
});
