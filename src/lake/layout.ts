/**
 * The lake on disk (docs/lake.md):
 *
 *   <lake>/<table>/_schema.parquet                    0 rows, the table's columns and types
 *   <lake>/<table>/month=YYYY-MM/part-<who>-<run>-<k>.parquet   month-partitioned tables
 *   <lake>/<table>/part-<who>-<run>-<k>.parquet      the other tables
 *   <lake>/_manifest/<committed_at>-<kind>-<who>-<run>.json     one commit: its files, what it replaces
 *   <lake>/_staging/<who>-<run>/                     files being written (never read)
 *   <lake>/_locks/<who>.lock                         one process per shard, one compactor
 *
 * `<who>` is the shard tag (s1of4) or `compact`. A file is committed once a manifest entry lists
 * it and no entry lists it in `replaces`. The manifest entry is the commit point: written under a
 * temporary name, fsynced, renamed into place, and the directory fsynced.
 */
import { quoteLiteral } from '../warehouse/sql.js';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { migratedInMemory, warehouseSchema } from './schema.js';

export const MANIFEST_DIR = '_manifest';
export const STAGING_DIR = '_staging';
export const LOCK_DIR = '_locks';
export const SCHEMA_FILE = '_schema.parquet';

export interface ManifestFile {
  table: string;
  /** Relative to the lake, with `/` separators. */
  path: string;
  rows: number;
  /**
   * Commit order of the rows in the file (epoch ms of the commit that first wrote them; a
   * compacted file takes the largest of the files it merged). The newest row per key wins.
   */
  seq: number;
}

export interface ManifestEntry {
  run_id: string;
  kind: 'init' | 'sync' | 'compact';
  /** `I/N` for a shard's sync, null for init and compaction. */
  shard: string | null;
  committed_at: string;
  files: ManifestFile[];
  /** Files (relative paths) this entry supersedes: a compaction's inputs. */
  replaces: string[];
}

export interface CommittedFile extends ManifestFile {
  /** Absolute path. */
  file: string;
}

export function lakePath(lake: string): string {
  return resolve(lake);
}

/** `relative` joined onto the lake, as the absolute path DuckDB reports in `filename`. */
export function absolute(lake: string, relativePath: string): string {
  return join(lakePath(lake), ...relativePath.split('/'));
}

function toRelative(lake: string, file: string): string {
  return relative(lakePath(lake), file).split(sep).join('/');
}

/**
 * Creates the lake's folders, the init manifest entry (so a reader's manifest glob always
 * matches) and each table's empty typed `_schema.parquet` (so a table's file glob always matches,
 * and a table nobody has written yet reads as empty with the right columns). Idempotent, and
 * safe when several shards start at once: everything lands by rename.
 */
export async function ensureLake(lake: string, options: { rewriteSchemas?: boolean } = {}): Promise<void> {
  const root = lakePath(lake);
  for (const dir of [MANIFEST_DIR, STAGING_DIR, LOCK_DIR]) mkdirSync(join(root, dir), { recursive: true });
  const schema = await warehouseSchema();
  const missing = schema.tables.filter((t) => options.rewriteSchemas || !existsSync(join(root, t.name, SCHEMA_FILE)));
  if (missing.length > 0) {
    const db = await migratedInMemory();
    try {
      for (const table of missing) {
        mkdirSync(join(root, table.name), { recursive: true });
        const draft = join(root, STAGING_DIR, `schema-${table.name}-${process.pid}-${Date.now()}.parquet`);
        await db.connection.run(`COPY main.${table.name} TO ${quoteLiteral(draft)} (FORMAT parquet)`);
        fsyncFile(draft);
        renameSync(draft, join(root, table.name, SCHEMA_FILE));
        fsyncFile(join(root, table.name));
      }
    } finally {
      db.close();
    }
  }
  const init: ManifestEntry = {
    run_id: 'init',
    kind: 'init',
    shard: null,
    committed_at: new Date(0).toISOString(),
    files: [],
    replaces: [],
  };
  if (!existsSync(join(root, MANIFEST_DIR, manifestName(init)))) writeManifest(lake, init);
}

function manifestName(entry: ManifestEntry): string {
  const at = entry.committed_at.replace(/[-:.]/g, '');
  return `${at}-${entry.kind}-${entry.shard?.replace('/', 'of') ?? 'lake'}-${entry.run_id}.json`;
}

/**
 * The commit point: the entry under a temporary name, fsynced, renamed into place, directory
 * fsynced. The temporary name is the process's own: shards starting at once all write the same
 * init entry, and with one shared draft name one shard renamed it away while another fsynced it.
 */
export function writeManifest(lake: string, entry: ManifestEntry): string {
  const dir = join(lakePath(lake), MANIFEST_DIR);
  const name = manifestName(entry);
  const draft = join(dir, `.tmp-${process.pid}-${name}`);
  writeFileSync(draft, `${JSON.stringify(entry)}\n`);
  fsyncFile(draft);
  renameSync(draft, join(dir, name));
  fsyncFile(dir);
  return join(dir, name);
}

export function readManifests(lake: string): ManifestEntry[] {
  const dir = join(lakePath(lake), MANIFEST_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
    .sort()
    .map((name) => {
      try {
        return JSON.parse(readFileSync(join(dir, name), 'utf8')) as ManifestEntry;
      } catch (error) {
        throw new Error(`lake manifest ${join(dir, name)} is not valid JSON: ${(error as Error).message}`);
      }
    });
}

/** Files listed by a manifest entry and not replaced by a later one, per table. */
export function committedFiles(lake: string, entries = readManifests(lake)): Map<string, CommittedFile[]> {
  const replaced = new Set(entries.flatMap((e) => e.replaces));
  const byTable = new Map<string, CommittedFile[]>();
  for (const entry of entries) {
    for (const file of entry.files) {
      if (replaced.has(file.path)) continue;
      const list = byTable.get(file.table) ?? [];
      list.push({ ...file, file: absolute(lake, file.path) });
      byTable.set(file.table, list);
    }
  }
  return byTable;
}

/**
 * Removes what an earlier process of `who` left behind without committing it (killed between
 * writing files and its manifest entry): its staging folders, draft manifests, and its files in
 * the table folders that no manifest entry mentions. Call it holding `who`'s lock.
 */
export function removeUncommitted(lake: string, who: string, tables: readonly { name: string }[]): string[] {
  const root = lakePath(lake);
  const mentioned = new Set(readManifests(lake).flatMap((e) => [...e.files.map((f) => f.path), ...e.replaces]));
  const removed: string[] = [];
  for (const table of tables) {
    for (const file of walk(join(root, table.name))) {
      if (basename(file).startsWith(`part-${who}-`) && !mentioned.has(toRelative(lake, file))) {
        unlinkSync(file);
        removed.push(toRelative(lake, file));
      }
    }
  }
  for (const name of safeList(join(root, STAGING_DIR))) {
    if (name.startsWith(`${who}-`)) rmSync(join(root, STAGING_DIR, name), { recursive: true, force: true });
  }
  for (const name of safeList(join(root, MANIFEST_DIR))) {
    if (name.startsWith('.tmp-') && name.includes(`-${who}-`)) rmSync(join(root, MANIFEST_DIR, name), { force: true });
  }
  return removed;
}

/** Every file under `dir`, recursively (none when it does not exist). */
export function walk(dir: string): string[] {
  const files: string[] = [];
  for (const entry of safeEntries(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...walk(path));
    else files.push(path);
  }
  return files;
}

function safeEntries(dir: string) {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

function safeList(dir: string): string[] {
  return safeEntries(dir).map((e) => e.name);
}

/**
 * Moves staged files into their table folders (same relative layout) and returns their paths
 * relative to the lake. Each file is fsynced first, each target folder after.
 */
export function moveIntoLake(lake: string, stagingDir: string, table: string): string[] {
  const moved: string[] = [];
  const dirs = new Set<string>();
  for (const file of walk(join(stagingDir, table))) {
    fsyncFile(file);
    const target = join(lakePath(lake), table, relative(join(stagingDir, table), file));
    mkdirSync(dirname(target), { recursive: true });
    renameSync(file, target);
    dirs.add(dirname(target));
    moved.push(toRelative(lake, target));
  }
  for (const dir of dirs) fsyncFile(dir);
  return moved;
}

export function fsyncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
