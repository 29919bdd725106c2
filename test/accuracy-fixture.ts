// A small warehouse filled with plain inserts, for the accuracy tests (no sync needed).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Warehouse } from '../src/warehouse/warehouse.js';

export async function openTestWarehouse(name: string): Promise<Warehouse> {
  const dir = mkdtempSync(join(tmpdir(), `efsync-${name}-`));
  return Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
}

const ts = (text: string) => `TIMESTAMPTZ '${text}'`;
const SYNCED = ts('2026-03-05T00:00:00Z');

export async function addSite(
  wh: Warehouse,
  siteId: string,
  type: 'solar' | 'wind' | 'load',
  nameplateKw: number,
): Promise<void> {
  await wh.run(
    `INSERT INTO sites VALUES ('${siteId}', 'Site ${siteId}', '${type}', 59.3, 18.1, ${nameplateKw}, NULL, NULL, NULL, ${SYNCED})`,
  );
}

/** Capacity segments [from, to) in kW; null bounds are open. */
export async function addCapacity(
  wh: Warehouse,
  siteId: string,
  segments: [string | null, string | null, number][],
): Promise<void> {
  for (const [i, [from, to, kw]] of segments.entries()) {
    await wh.run(
      `INSERT INTO site_capacity VALUES ('${siteId}', ${i}, ${from ? ts(from) : 'NULL'}, ${to ? ts(to) : 'NULL'}, ${kw}, NULL)`,
    );
  }
}

/** Site forecast points issued at `issued`, as [valid_time, value]. */
export async function addForecast(
  wh: Warehouse,
  siteId: string,
  issued: string,
  points: [string, number | null][],
  model = 'gbm',
): Promise<void> {
  for (const [valid, value] of points) {
    await wh.run(
      `INSERT INTO forecasts VALUES ('${siteId}', '${model}', 1, ${ts(issued)}, ${ts(valid)}, ${value ?? 'NULL'}, NULL)`,
    );
  }
}

export async function addModel(
  wh: Warehouse,
  siteId: string,
  modelId: string,
  name: string,
  quantile: number | null = null,
): Promise<void> {
  await wh.run(
    `INSERT INTO models VALUES ('${modelId}', '${siteId}', '${name}', 'ai', 1, NULL, 'ai', ${quantile ?? 'NULL'}, 1, true, NULL, NULL, NULL, ${SYNCED})`,
  );
}

export async function addOutput(
  wh: Warehouse,
  siteId: string,
  modelId: string,
  name: string,
  asOf: string,
  points: [string, number | null][],
): Promise<void> {
  for (const [valid, value] of points) {
    await wh.run(
      `INSERT INTO model_outputs VALUES ('${modelId}', ${ts(asOf)}, ${ts(valid)}, '${siteId}', '${name}', 1, ${value ?? 'NULL'}, NULL)`,
    );
  }
}

/** Actual values every `stepMinutes` from `first` on (null: the service had a gap). */
export async function addActuals(
  wh: Warehouse,
  siteId: string,
  first: string,
  stepMinutes: number,
  values: (number | null)[],
): Promise<void> {
  const start = Date.parse(first);
  for (const [i, value] of values.entries()) {
    const at = new Date(start + i * stepMinutes * 60_000).toISOString();
    await wh.run(`INSERT INTO actuals VALUES ('${siteId}', ${ts(at)}, ${value ?? 'NULL'}, ${SYNCED}, NULL)`);
  }
}
