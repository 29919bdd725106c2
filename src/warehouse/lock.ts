// The writer lock: one efsync process writes a warehouse at a time, across processes.
// `<path>.lock` holds JSON naming the holder, so a second writer can say who is in the way, and
// enough to tell a live holder from a dead one on this machine: a pid alone is not (in a
// container restarted in a new PID namespace the successor is pid 1 again, and pids are reused).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { linkSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '../errors.js';

export interface LockHolder {
  pid: number;
  host: string;
  job: string;
  runId: string;
  /** ISO instant. */
  startedAt: string;
  /** The kernel's boot id (Linux): a lock from an earlier boot is dead. */
  bootId?: string;
  /** The holder's start time in clock ticks since boot (/proc/PID/stat field 22, Linux). */
  processStart?: number;
}

export class WarehouseBusyError extends Error {
  /** `holder`: the lock's holder, or what the OS says holds the writer file open. */
  constructor(
    readonly warehousePath: string,
    holder: LockHolder | string,
  ) {
    super(
      `warehouse ${warehousePath} is being written by ${typeof holder === 'string' ? holder : describeHolder(holder)}`,
    );
    this.name = 'WarehouseBusyError';
  }
}

/** `efsync nightly (run R, pid 4121 on host etl-1) since 2026-11-21T02:00:00.412Z` */
export function describeHolder(holder: LockHolder): string {
  return `efsync ${holder.job} (run ${holder.runId}, pid ${holder.pid} on host ${holder.host}) since ${holder.startedAt}`;
}

const POLL_MS = 100;
/**
 * A holder refreshes its lock's mtime this often. A lock from another host (a Kubernetes pod
 * killed hard, whose successor has a new hostname) whose mtime is older than ABANDONED_AFTER_MS
 * is abandoned: its pid cannot be asked, but a live holder would have refreshed it. The margin
 * covers a holder's event loop blocked by a long synchronous copy at publish.
 */
const HEARTBEAT_MS = 30_000;
export const ABANDONED_AFTER_MS = 10 * 60_000;

export class WriterLock {
  private released = false;
  private readonly onExit = () => this.release();
  private readonly heartbeat: NodeJS.Timeout;

  private constructor(
    readonly lockPath: string,
    readonly holder: LockHolder,
  ) {
    process.once('exit', this.onExit);
    this.heartbeat = setInterval(() => this.refresh(), HEARTBEAT_MS).unref();
  }

  private refresh(): void {
    const now = new Date();
    try {
      utimesSync(this.lockPath, now, now);
    } catch {
      // gone: release() or a manual removal; nothing to refresh
    }
  }

  /**
   * Takes `lockPath`, waiting up to `waitMs` for a live holder to let go. The lock of a dead
   * holder (holderAlive) is taken over at once.
   */
  static async acquire(
    lockPath: string,
    warehousePath: string,
    who: { job: string; runId: string },
    waitMs: number,
    onWait?: (holder: LockHolder) => void,
  ): Promise<WriterLock> {
    const holder: LockHolder = {
      pid: process.pid,
      host: hostname(),
      job: who.job,
      runId: who.runId,
      startedAt: new Date().toISOString(),
      bootId: BOOT_ID,
      processStart: processStartOf(process.pid),
    };
    const deadline = Date.now() + waitMs;
    let told = false;
    for (;;) {
      if (tryCreate(lockPath, holder)) return new WriterLock(lockPath, holder);
      const current = readHolder(lockPath);
      if (current === undefined) continue; // released between our attempt and the read
      if (!holderAlive(current, lockPath)) {
        takeOverStale(lockPath, current);
        continue;
      }
      if (Date.now() >= deadline) throw new WarehouseBusyError(warehousePath, current);
      if (!told) onWait?.(current);
      told = true;
      await sleep(Math.min(POLL_MS, Math.max(1, deadline - Date.now())));
    }
  }

  /** Removes the lock file if it is still ours. Idempotent; safe in an exit handler. */
  release(): void {
    if (this.released) return;
    this.released = true;
    clearInterval(this.heartbeat);
    process.removeListener('exit', this.onExit);
    const current = readHolder(this.lockPath);
    if (current && sameHolder(current, this.holder)) unlinkQuietly(this.lockPath);
  }
}

/**
 * Creates the lock exclusively with its content complete: the JSON is written to a private file
 * first and hard-linked into place (link fails with EEXIST like O_EXCL), so nobody ever reads a
 * half-written lock.
 */
function tryCreate(lockPath: string, holder: LockHolder): boolean {
  const draft = `${lockPath}.${randomUUID().slice(0, 8)}`;
  writeFileSync(draft, `${JSON.stringify(holder)}\n`, { flag: 'wx' });
  try {
    linkSync(draft, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkQuietly(draft);
  }
}

/** A lock that cannot be read or parsed is a wrong file (exit 2), named, with what to do. */
function readHolder(lockPath: string): LockHolder | undefined {
  const hint = 'remove it if no efsync process is running';
  let text: string;
  try {
    text = readFileSync(lockPath, 'utf8');
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'ENOENT') return undefined;
    throw new ConfigError(`warehouse lock ${lockPath} cannot be read (${code})`, hint);
  }
  try {
    return JSON.parse(text) as LockHolder;
  } catch {
    throw new ConfigError(`warehouse lock ${lockPath} is not valid JSON`, hint);
  }
}

/**
 * Whether the lock's holder still runs. On this host: not after a reboot (another boot id), and
 * only if its pid is a process that started at the holder's start time (a pid reused, or pid 1
 * of a container restarted in a new PID namespace, started later). From another host, whose
 * processes cannot be asked: while it keeps refreshing the lock (see HEARTBEAT_MS).
 * A holder alive in a sibling PID namespace of this host is invisible here and judged dead; the
 * writer file's own OS lock (DuckDB's) then stops the second writer, which reports it busy.
 */
export function holderAlive(holder: LockHolder, lockPath: string): boolean {
  if (holder.host !== hostname()) return Date.now() - lastRefresh(lockPath) <= ABANDONED_AFTER_MS;
  if (holder.bootId !== undefined && BOOT_ID !== undefined && holder.bootId !== BOOT_ID) return false;
  if (holder.processStart !== undefined && PROC) return processStartOf(holder.pid) === holder.processStart;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

const PROC = processStartOf(process.pid) !== undefined;
const BOOT_ID = readText('/proc/sys/kernel/random/boot_id');

/** Start time of `pid` in clock ticks since boot, from /proc (undefined: no such process, or no /proc). */
function processStartOf(pid: number): number | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  // Fields after the command name (in parentheses, which may hold spaces) start at field 3.
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3];
  return start === undefined ? undefined : Number(start);
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function lastRefresh(lockPath: string): number {
  try {
    return statSync(lockPath).mtimeMs;
  } catch {
    return Date.now(); // released meanwhile: the next attempt takes it
  }
}

/**
 * Moves the stale lock aside before deleting it, and checks that what it moved is the stale lock
 * it judged: two processes taking over at once must not delete each other's fresh lock.
 */
function takeOverStale(lockPath: string, stale: LockHolder): void {
  const aside = `${lockPath}.stale-${randomUUID().slice(0, 8)}`;
  try {
    renameSync(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = readHolder(aside);
  if (moved && !sameHolder(moved, stale)) {
    try {
      linkSync(aside, lockPath); // a live lock taken by mistake: put it back
    } catch {
      // someone holds the lock again; the one we moved has lost a race it could not win anyway
    }
  }
  unlinkQuietly(aside);
}

function sameHolder(a: LockHolder, b: LockHolder): boolean {
  return a.pid === b.pid && a.host === b.host && a.startedAt === b.startedAt && a.runId === b.runId;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
