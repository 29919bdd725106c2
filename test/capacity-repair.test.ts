// A capacity push that must remove points (a window taken out of the file) uploads the file first
// and deletes the removed points after: whatever fails half-way, the service holds at least the
// file's points (never a hole), the one line and the ledger say what it holds, and the next apply
// repairs it. The emulator's untidy switches play the failures.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../src/api/client.js';
import type { SiteResponse } from '../src/api/schemas.js';
import type { Emulator } from '../src/emulator/server.js';
import type { UntidyKind } from '../src/emulator/untidy.js';
import { parseInstant } from '../src/time.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import {
  applyEachMinute,
  capacityConfig,
  clientFor,
  SEVILLA_WITH_WINDOW,
  siteNamed,
  startDemoEmulator,
  tempDir,
  timelineFrom,
  writeFiles,
} from './capacity-support.js';

const WITHOUT_WINDOW = SEVILLA_WITH_WINDOW.replace(/windows:\n.*\n/, '');
const BEFORE = [
  ['2026-11-22T00:00Z', 6000],
  ['2026-11-23T08:00Z', 0],
  ['2026-11-23T16:00Z', 6000],
];
const FILE = [['2026-11-22T00:00Z', 6000]];

let emulator: Emulator;
let client: ServiceClient;
let sevilla: SiteResponse;
let config: ReturnType<typeof capacityConfig>;
let apply: ReturnType<typeof applyEachMinute>;

/** The service's points from the file's first point on. */
const timeline = () => timelineFrom(client, sevilla.site_id, parseInstant('2026-11-22T00:00Z'));

async function lastPush(): Promise<{ status: string; error: string | null; held_points: string | null }> {
  const warehouse = await Warehouse.open({ path: config.warehouse.path, readOnly: true });
  try {
    const rows = await warehouse.all<{ status: string; error: string | null; held_points: string | null }>(
      'SELECT status, error, held_points::VARCHAR AS held_points FROM capacity_pushes ORDER BY pushed_at DESC LIMIT 1',
    );
    return rows[0];
  } finally {
    await warehouse.close();
  }
}

/** Applies with the window taken out of the file while `untidy` is on. */
async function removeWindowWith(untidy: UntidyKind[]) {
  writeFiles(config.capacity.dir, { 'sevilla.yaml': WITHOUT_WINDOW });
  emulator.setUntidy(untidy);
  try {
    return await apply();
  } finally {
    emulator.setUntidy([]);
    emulator.setFaults({ faultHook: null });
  }
}

beforeEach(async () => {
  emulator = await startDemoEmulator();
  client = clientFor(emulator);
  sevilla = await siteNamed(client, 'Sevilla solar tracking');
  const dir = tempDir('capacity-repair');
  writeFiles(dir, { 'sevilla.yaml': SEVILLA_WITH_WINDOW });
  config = capacityConfig(emulator, dir);
  apply = applyEachMinute(config);
  expect(await apply()).toMatchObject({ status: 'ok' });
  expect(await timeline()).toEqual(BEFORE);
});

afterEach(async () => {
  await client.close();
  await emulator.close();
});

describe('a capacity apply that fails half-way', () => {
  it('an upload answering 500 leaves the timeline as it was; the next apply pushes it', async () => {
    const failed = await removeWindowWith(['capacity-upload-500']);
    expect(failed.status).toBe('failed');
    expect(failed.failures[0].reason).toMatch(/500.*the service holds its timeline from before this push/);
    expect(await timeline()).toEqual(BEFORE);
    const recorded = await lastPush();
    expect(recorded.status).toBe('failed');
    expect(JSON.parse(recorded.held_points!)).toEqual(BEFORE.map(([valid_time, value]) => ({ valid_time, value })));

    expect(await apply()).toMatchObject({ status: 'ok' });
    expect(await timeline()).toEqual(FILE);
  });

  it('a delete that took everything, then an upload answering 500: said and recorded, and repaired next', async () => {
    // The first upload lands; the delete takes every point; the upload that restores the file fails.
    let uploads = 0;
    emulator.setFaults({
      faultHook: (c) => (c.method === 'POST' && c.path.endsWith('/capacity') && ++uploads > 1 ? 'http500' : undefined),
    });
    const failed = await removeWindowWith(['capacity-delete-all']);
    expect(failed.status).toBe('failed');
    expect(failed.failures[0].reason).toMatch(/500.*the service now holds 1 change points, 1 differing from the file/);
    expect(failed.summary.filter((line) => line.startsWith('FAILED'))).toHaveLength(1);
    expect(await timeline()).toEqual([]);
    expect((await lastPush()).held_points).not.toBeNull();

    expect(await apply()).toMatchObject({ status: 'ok' });
    expect(await timeline()).toEqual(FILE);
  });

  it('a delete that ignores its range is seen by reading back, and repaired by uploading again', async () => {
    expect(await removeWindowWith(['capacity-delete-all'])).toMatchObject({ status: 'ok' });
    expect(await timeline()).toEqual(FILE);
    expect(await apply()).toMatchObject({ status: 'ok', rows: { capacity_pushes: 0 } });
  });

  it('a delete answering 422 leaves the file uploaded and the removed points in place; the next apply deletes them', async () => {
    const failed = await removeWindowWith(['capacity-delete-422']);
    expect(failed.status).toBe('failed');
    // The upload changed nothing (the file's one point was there), so the service holds what it did.
    expect(failed.failures[0].reason).toMatch(/422.*the service holds its timeline from before this push/);
    expect(await timeline()).toEqual(BEFORE);

    expect(await apply()).toMatchObject({ status: 'ok' });
    expect(await timeline()).toEqual(FILE);
  });
});
