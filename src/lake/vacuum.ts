/**
 * `efsync lake vacuum`: deletes the files no reader needs any more. A data file leaves the disk
 * only when the table's newest snapshot does not hold it and it is older than the retention
 * (default 7 days, Delta's own default): a file a compaction removed stays for readers of an
 * older snapshot (a query that started before the compaction, time travel within the
 * retention), and a file a shard has just written and not yet committed is younger than that.
 * Also deleted past the retention: what killed writers left in `_staging/` and the temporary
 * names of commits in `_delta_log/`.
 */
import { rmSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { openDuckDB } from '../warehouse/duckdb.js';
import { decodePath } from './delta/actions.js';
import { logDir } from './delta/log.js';
import { dataFiles, lakePath, lakeSnapshots, safeEntries, STAGING_DIR } from './layout.js';
import { DAY } from '../time.js';

export const DEFAULT_RETENTION_MS = 7 * DAY;

export interface Vacuumed {
  /** Data files deleted, and their bytes. */
  files: number;
  bytes: number;
  /** Leftovers of killed writers deleted (staging folders, temporary log entries). */
  leftovers: number;
}

export async function vacuumLake(
  lake: string,
  retentionMs = DEFAULT_RETENTION_MS,
  now = Date.now(),
): Promise<Vacuumed> {
  const before = now - retentionMs;
  const done: Vacuumed = { files: 0, bytes: 0, leftovers: 0 };
  const db = await openDuckDB(':memory:');
  try {
    for (const snapshot of (await lakeSnapshots(db.connection, lake)).values()) {
      const active = new Set(
        [...snapshot.files.values()].map((f) => join(snapshot.table, ...decodePath(f.path).split('/'))),
      );
      for (const file of dataFiles(snapshot.table)) {
        const stat = statSync(file);
        if (active.has(file) || stat.mtimeMs >= before) continue;
        unlinkSync(file);
        done.files += 1;
        done.bytes += stat.size;
      }
      done.leftovers += removeOlder(
        logDir(snapshot.table),
        before,
        (name) => name.startsWith('.') && name.endsWith('.tmp'),
      );
    }
  } finally {
    db.close();
  }
  done.leftovers += removeOlder(join(lakePath(lake), STAGING_DIR), before, () => true);
  return done;
}

/** Removes the entries of `dir` that `match` and were last changed before `before`; how many. */
function removeOlder(dir: string, before: number, match: (name: string) => boolean): number {
  let removed = 0;
  for (const entry of safeEntries(dir)) {
    const path = join(dir, entry.name);
    if (!match(entry.name) || statSync(path).mtimeMs >= before) continue;
    rmSync(path, { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}
