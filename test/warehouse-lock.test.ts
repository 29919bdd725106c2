import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeError, outcomeOf } from '../src/cli/boundary.js';
import { ABANDONED_AFTER_MS } from '../src/warehouse/lock.js';
import { Warehouse, WarehouseBusyError } from '../src/warehouse/warehouse.js';
import { startChild, tempWarehousePath } from './warehouse-support.js';
import { needTool, titled } from './tools.js';

let dir: string;
let path: string;

beforeEach(() => {
  ({ dir, path } = tempWarehousePath('efsync-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited: nothing runs under it any more. */
function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
}

describe('writer lock', () => {
  it('a second writer in another process waits, then fails naming the holder', async () => {
    const holder = await Warehouse.open({ path, holder: { job: 'nightly', runId: 'run-42' } });
    try {
      const second = startChild(['writer', path, '300', 'sync', 'run-43']);
      expect((await second.next()).waiting).toMatchObject({ pid: process.pid, runId: 'run-42' });
      const answer = await second.next();
      expect(answer.name).toBe('WarehouseBusyError');
      expect(answer.error).toBe(
        `warehouse ${path} is being written by efsync nightly (run run-42, pid ${process.pid} on host ${hostname()}) ` +
          `since ${JSON.parse(readFileSync(`${path}.lock`, 'utf8')).startedAt}`,
      );
      await second.exited;
    } finally {
      await holder.close();
    }
  });

  it('a waiting writer gets the lock once the holder closes', async () => {
    const holder = await Warehouse.open({ path, holder: { job: 'nightly', runId: 'run-1' } });
    const second = startChild(['writer', path, '30000', 'sync', 'run-2']);
    expect((await second.next()).waiting).toMatchObject({ runId: 'run-1' });
    await holder.close();
    expect((await second.next()).ready).toBe(true);
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({
      job: 'sync',
      runId: 'run-2',
      pid: second.process.pid,
    });
    expect(await second.close()).toBe(0);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('the lock goes with the process, even when it exits without closing', async () => {
    const writer = startChild(['writer', path, '0', 'nightly', 'run-1']);
    expect((await writer.next()).ready).toBe(true);
    expect(existsSync(`${path}.lock`)).toBe(true);
    writer.process.stdin!.write(`${JSON.stringify({ exit: true })}\n`);
    await writer.exited;
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('takes over the lock of a killed writer', async () => {
    const writer = startChild(['writer', path, '0', 'nightly', 'run-1']);
    expect((await writer.next()).ready).toBe(true);
    writer.process.kill('SIGKILL');
    await writer.exited;
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).runId).toBe('run-1');

    const next = await Warehouse.open({ path, lockWaitMs: 0, holder: { job: 'nightly', runId: 'run-2' } });
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ runId: 'run-2', pid: process.pid });
    await next.close();
  });

  it('takes over a stale lock file whose pid is gone', async () => {
    const stale = {
      pid: deadPid(),
      host: hostname(),
      job: 'nightly',
      runId: 'old',
      startedAt: '2026-01-01T00:00:00.000Z',
    };
    writeFileSync(`${path}.lock`, JSON.stringify(stale));
    const warehouse = await Warehouse.open({ path, lockWaitMs: 0 });
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).pid).toBe(process.pid);
    await warehouse.close();
  });

  it('leaves alone a lock held on another host, and says so', async () => {
    const remote = { pid: 1, host: 'elsewhere', job: 'nightly', runId: 'r9', startedAt: '2026-01-01T00:00:00.000Z' };
    writeFileSync(`${path}.lock`, JSON.stringify(remote));
    const opening = Warehouse.open({ path, lockWaitMs: 200 });
    await expect(opening).rejects.toBeInstanceOf(WarehouseBusyError);
    await expect(opening).rejects.toThrow(
      /efsync nightly \(run r9, pid 1 on host elsewhere\) since 2026-01-01T00:00:00.000Z/,
    );
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toEqual(remote);
  });

  it('takes over a lock from another host that nobody refreshed for longer than the abandon time', async () => {
    const remote = {
      pid: 1,
      host: 'pod-killed-hard',
      job: 'nightly',
      runId: 'r7',
      startedAt: '2026-01-01T00:00:00.000Z',
    };
    writeFileSync(`${path}.lock`, JSON.stringify(remote));
    const lastHeartbeat = new Date(Date.now() - ABANDONED_AFTER_MS - 60_000);
    utimesSync(`${path}.lock`, lastHeartbeat, lastHeartbeat);
    const warehouse = await Warehouse.open({ path, lockWaitMs: 0 });
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).pid).toBe(process.pid);
    await warehouse.close();
  });

  it('takes over at once a lock whose pid now belongs to another process (a pid reused, a container restarted)', async () => {
    // This very process's pid, as a restarted container's efsync is pid 1 again: alive, but not the holder.
    const reused = {
      pid: process.pid,
      host: hostname(),
      job: 'nightly',
      runId: 'old',
      startedAt: '2026-01-01T00:00:00.000Z',
      bootId: bootId(),
      processStart: 1,
    };
    writeFileSync(`${path}.lock`, JSON.stringify(reused));
    const warehouse = await Warehouse.open({ path, lockWaitMs: 0 });
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).runId).toBe('-');
    await warehouse.close();
  });

  it('takes over at once a lock from an earlier boot of this host', async () => {
    // The lock this very process writes (alive, its start time right), but from another boot.
    const own = await Warehouse.open({ path, holder: { job: 'nightly', runId: 'old' } });
    const beforeReboot = {
      ...JSON.parse(readFileSync(`${path}.lock`, 'utf8')),
      bootId: '00000000-0000-0000-0000-000000000000',
    };
    await own.close();
    writeFileSync(`${path}.lock`, JSON.stringify(beforeReboot));
    const warehouse = await Warehouse.open({ path, lockWaitMs: 0 });
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).runId).toBe('-');
    await warehouse.close();
  });

  const unshare = needTool('unshare');
  it.skipIf(!unshare)(
    titled(
      'in a new PID namespace, the lock of a writer killed in another one is taken over without waiting',
      'unshare',
      unshare,
    ),
    async () => {
      const first = startChild(['writer', path, '0', 'nightly', 'run-1'], { pidNamespace: true });
      expect(await first.next()).toMatchObject({ ready: true, pid: 2 });
      first.process.stdin!.write(`${JSON.stringify({ kill: true })}\n`);
      await first.exited;
      expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ runId: 'run-1', pid: 2 });

      // Its successor is pid 2 as well, in a namespace of its own: it must not wait for itself.
      const second = startChild(['writer', path, '60000', 'nightly', 'run-2'], { pidNamespace: true });
      expect(await second.next()).toMatchObject({ ready: true, pid: 2 });
      expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ runId: 'run-2', pid: 2 });
      expect(await second.close()).toBe(0);
    },
  );

  it.each([
    ['is not JSON', () => writeFileSync(`${path}.lock`, 'garbage{'), 'is not valid JSON'],
    ['cannot be read', () => mkdirSync(`${path}.lock`), 'cannot be read (EISDIR)'],
  ])(
    'a lock that %s is a wrong file, named, with what to do; the warehouse is untouched',
    async (_what, spoil, says) => {
      const first = await Warehouse.open({ path });
      await first.publish();
      await first.close();
      spoil();
      const error = await Warehouse.open({ path, lockWaitMs: 0 }).catch((e: unknown) => e);
      expect(outcomeOf(error)).toBe('config');
      expect(describeError(error)).toBe(
        `warehouse lock ${path}.lock ${says}; remove it if no efsync process is running`,
      );
      rmSync(`${path}.lock`, { recursive: true });
      const again = await Warehouse.open({ path, lockWaitMs: 0 });
      await again.close();
    },
  );

  it('a live holder in the same PID namespace is waited for, whatever its pid', async () => {
    const holder = await Warehouse.open({ path, holder: { job: 'nightly', runId: 'live' } });
    try {
      await expect(Warehouse.open({ path, lockWaitMs: 100 })).rejects.toBeInstanceOf(WarehouseBusyError);
    } finally {
      await holder.close();
    }
  });
});

function bootId(): string {
  return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
}
