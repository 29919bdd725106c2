// The commit queue of series loads: GROUP COMMIT. A load is staged into DuckDB's TEMP staging
// tables as soon as the connection is free, and its rows leave JavaScript (LoadOptions.staged);
// the staged loads form a group, merged with every load's sync state and vintage bookkeeping in
// ONE transaction. A group holds a site's load of a kind whole (a reader never sees half of it)
// and one load per site and kind (the merges count rows per site). It is merged when full
// (`rows.commitBatch` or MAX_BATCH_LOADS), when no load could join it for IDLE_MS, or once it has
// gathered for MAX_GATHER_MS. A group that fails is merged again in parts from what it staged,
// split by the executor while it runs out of memory, then a load at a time, so that only the
// load at fault fails. Why groups this large: docs/warehouse.md, "Series loads group-commit".
import { faultPoint } from '../fault.js';
import { handBackPool, runInHalves } from './executor.js';
import { addRows, nonZero, type RowsWritten } from './rows.js';
import { type LoadOptions, SERIES, type SeriesKind } from './series.js';
import { freshStagingSql, type StageBlock, stage } from './staging.js';
import { stateKey, writeSyncStates } from './sync-state.js';
import {
  FRESH_VINTAGE_KEYS_SQL,
  KEYS_TABLE,
  stageVintageReads,
  type VintageWrites,
  vintageWrites,
  writeVintageReads,
} from './vintage-reads.js';
import type { Warehouse } from './warehouse.js';

/** Loads of a group at most: 64 sites' forecasts, outputs and actuals (its rows: the budget's `rows.commitBatch`). */
export const MAX_BATCH_LOADS = 192;
/** A group is merged once no load could join it for this long: the loads that come together share it. */
const IDLE_MS = 25;
/** A group is merged once it has gathered for this long, however its loads come. */
const MAX_GATHER_MS = 5_000;
/**
 * Groups merged between purges of DuckDB's buffer pool (handBackPool): often enough that glibc's
 * heap stays flat over a sync of any number of sites, rarely enough to cost it no time
 * (docs/sync.md, Memory).
 */
const PURGE_EVERY_GROUPS = 25;

interface Job {
  kind: SeriesKind;
  siteId: string;
  rows: number;
  /** Dropped once staged. */
  blocks: StageBlock[];
  options: LoadOptions;
  /** What its vintage bookkeeping writes, once its keys are staged. */
  vintages?: VintageWrites;
  resolve(rows: RowsWritten): void;
  reject(error: unknown): void;
}

/** A group's rows of one series kind: its sites in site_no order, their rows, its shared blocks. */
interface KindStaged {
  sites: string[];
  rowsBySite: number[];
  blocks: number;
}

/** The loads staged and not merged yet. A job's load_no is its index in `jobs`. */
interface Group {
  jobs: Job[];
  rows: number;
  kinds: Map<SeriesKind, KindStaged>;
  /** kind \0 site of each load. */
  keys: Set<string>;
  hasVintageKeys: boolean;
  startedAt: number;
  /** Rows of loads that failed to stage may be in the staging tables. */
  strays: boolean;
}

/** What a group held before loads were staged into it. */
interface Snapshot {
  loads: number;
  kinds: Map<SeriesKind, KindStaged>;
  hasVintageKeys: boolean;
}

function newGroup(): Group {
  return {
    jobs: [],
    rows: 0,
    kinds: new Map(),
    keys: new Set(),
    hasVintageKeys: false,
    startedAt: performance.now(),
    strays: false,
  };
}

function snapshot(group: Group): Snapshot {
  const kinds = [...group.kinds].map(([kind, s]): [SeriesKind, KindStaged] => [
    kind,
    { sites: [...s.sites], rowsBySite: [...s.rowsBySite], blocks: s.blocks },
  ]);
  return { loads: group.jobs.length, kinds: new Map(kinds), hasVintageKeys: group.hasVintageKeys };
}

/** One queue per warehouse, for every series kind: a group commits all the kinds staged. */
const queues = new WeakMap<Warehouse, LoadQueue>();

/** Loads one site's rows of one series; resolves once they are committed, with the rows written. */
export function loadSeries(
  warehouse: Warehouse,
  kind: SeriesKind,
  siteId: string,
  blocks: StageBlock[],
  options: LoadOptions,
): Promise<RowsWritten> {
  let queue = queues.get(warehouse);
  if (!queue) {
    queue = new LoadQueue(warehouse);
    queues.set(warehouse, queue);
  }
  return queue.submit({ kind, siteId, rows: blocks.reduce((sum, b) => sum + b.rows, 0), blocks, options });
}

const keyOf = (job: Job) => `${job.kind}\0${job.siteId}`;

class LoadQueue {
  private waiting: Job[] = [];
  private group: Group | null = null;
  private pumping = false;
  /** Loads that failed to stage together, to stage one at a time. */
  private alone = 0;
  private merged = 0;
  /** Wakes the pump waiting for a load to arrive. */
  private arrived: (() => void) | null = null;

  constructor(private readonly warehouse: Warehouse) {}

  submit(load: Omit<Job, 'resolve' | 'reject'>): Promise<RowsWritten> {
    return new Promise((resolve, reject) => {
      const job: Job = { ...load, resolve, reject };
      // A caller already holding the connection would deadlock waiting for a group: its load is
      // merged now, after the group gathered so far.
      if (this.warehouse.holdsConnection()) {
        void this.mergeAlone(job);
        return;
      }
      this.waiting.push(job);
      this.arrived?.();
      if (!this.pumping) void this.pump();
    });
  }

  private async mergeAlone(job: Job): Promise<void> {
    await this.mergeGroup();
    if ((await this.stage(() => [job])) === 'staged') await this.mergeGroup();
  }

  /** Stages what can join the group, and merges the group when it is full or nothing more comes. */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.waiting.length > 0 || this.group) {
        const staged = await this.stage(() => this.takeReady());
        if (staged === 'staged') continue;
        if (staged === 'merge now') {
          await this.mergeGroup();
          continue;
        }
        const group = this.group;
        if (!group) continue;
        // Nothing joined: a waiting load does not fit (the group is full), or only loads of the
        // group's sites and kinds wait, or none.
        const full = this.waiting.some((job) => this.canJoin(job));
        const gathered = performance.now() - group.startedAt;
        if (full || gathered >= MAX_GATHER_MS || !(await this.arrival(Math.min(IDLE_MS, MAX_GATHER_MS - gathered))))
          await this.mergeGroup();
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Whether a load arrives within `ms`. */
  private arrival(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.arrived = null;
        resolve(false);
      }, ms);
      this.arrived = () => {
        clearTimeout(timer);
        this.arrived = null;
        resolve(true);
      };
    });
  }

  /** A load of a site and kind the group does not hold. */
  private canJoin(job: Job): boolean {
    return !this.group?.keys.has(keyOf(job));
  }

  /**
   * The waiting loads that join the group, in arrival order, while it has room (an empty group
   * takes one at least); one at a time while `alone` loads that failed to stage together go again.
   */
  private takeReady(): Job[] {
    const taken: Job[] = [];
    const keys = new Set(this.group?.keys);
    let rows = this.group?.rows ?? 0;
    let loads = this.group?.jobs.length ?? 0;
    for (const job of this.waiting) {
      if (keys.has(keyOf(job))) continue;
      const full = rows + job.rows > this.warehouse.rows.commitBatch || loads >= MAX_BATCH_LOADS;
      if (loads > 0 && (full || this.alone > 0)) break;
      taken.push(job);
      keys.add(keyOf(job));
      rows += job.rows;
      loads += 1;
    }
    this.waiting = this.waiting.filter((job) => !taken.includes(job));
    if (this.alone > 0 && taken.length > 0) this.alone -= 1;
    return taken;
  }

  /**
   * Appends the loads `take` gives (taken once the connection is free) to the group's staging
   * tables, created with the group, each kind's at its first load; every kind in one appender call.
   * Loads that fail to stage are taken out of the staging tables again and go again one at a time,
   * after the group is merged ('merge now'); one that fails alone in a group of its own fails
   * with its error.
   */
  private async stage(take: () => Job[]): Promise<'staged' | 'none' | 'merge now'> {
    return this.warehouse.exclusive(async () => {
      const jobs = take();
      if (jobs.length === 0) return 'none';
      this.group ??= newGroup();
      const group = this.group;
      const before = snapshot(group);
      try {
        await this.appendLoads(group, jobs);
      } catch (error) {
        this.unstage(group, before);
        if (jobs.length === 1 && group.jobs.length === 0) {
          this.group = null;
          jobs[0].reject(error);
          return 'none';
        }
        this.waiting.unshift(...jobs);
        this.alone = jobs.length;
        if (group.jobs.length === 0) this.group = null;
        return 'merge now';
      }
      for (const job of jobs) {
        group.jobs.push(job);
        group.keys.add(keyOf(job));
        group.rows += job.rows;
        job.blocks = [];
        job.options.staged?.();
      }
      return 'staged';
    });
  }

  private async appendLoads(group: Group, jobs: readonly Job[]): Promise<void> {
    const { warehouse } = this;
    const fresh: string[] = [];
    const kinds = [...new Set(jobs.map((job) => job.kind))];
    for (const kind of kinds) {
      if (!group.kinds.has(kind)) {
        fresh.push(...freshStagingSql(SERIES[kind]));
        group.kinds.set(kind, { sites: [], rowsBySite: [], blocks: 0 });
      }
    }
    const withKeys = jobs.filter((job) => job.options.vintageReads);
    if (withKeys.length > 0 && !group.hasVintageKeys) {
      fresh.push(FRESH_VINTAGE_KEYS_SQL);
      group.hasVintageKeys = true;
    }
    if (fresh.length > 0) await warehouse.run(fresh.join(';\n'));
    for (const kind of kinds) {
      const staged = group.kinds.get(kind)!;
      const blocks = jobs
        .filter((job) => job.kind === kind && job.rows > 0)
        .flatMap((job) => {
          const siteNo = staged.sites.push(job.siteId);
          staged.rowsBySite.push(job.rows);
          return job.blocks.map((block) => ({ block, siteNo }));
        });
      if (blocks.length > 0) staged.blocks += await stage(warehouse, SERIES[kind], blocks, staged.blocks);
    }
    const loadNo = (job: Job) => group.jobs.length + jobs.indexOf(job);
    await stageVintageReads(
      warehouse,
      withKeys.map((job) => ({ loadNo: loadNo(job), siteId: job.siteId, reads: job.options.vintageReads! })),
    );
    for (const job of withKeys) {
      const { vintageReads, now = Date.now(), ...rest } = job.options;
      job.vintages = vintageWrites(vintageReads!, now);
      job.options = { ...rest, now };
    }
  }

  /**
   * Forgets loads that failed to stage: the group is as it was `before`, and its staging tables,
   * which may hold some of their rows, are read only through its parts (PartStaging), which copy
   * a part's rows by their site and load numbers.
   */
  private unstage(group: Group, before: Snapshot): void {
    group.kinds = before.kinds;
    group.hasVintageKeys = before.hasVintageKeys;
    group.strays = true;
  }

  /**
   * Merges the group, split by the executor while it runs out of DuckDB's memory: after a
   * checkpoint (which frees the pool of the table data written since the last one) into halves,
   * and a load alone gets one more try. A part that fails otherwise is merged a load at a time.
   */
  private async mergeGroup(): Promise<void> {
    await this.warehouse.exclusive(async () => {
      const group = this.group;
      if (!group) return;
      this.group = null;
      const parts = new PartStaging(this.warehouse, group);
      try {
        await runInHalves(group.jobs, (part) => this.mergeAndResolve(parts, part), {
          // A checkpoint that fails (a full disk) leaves the retry to fail and say why.
          handBack: () => this.warehouse.checkpoint().catch(() => undefined),
          warehouse: this.warehouse,
          failed: (part, error) => this.eachAlone(parts, part, error),
        });
      } catch (error) {
        for (const job of group.jobs) job.reject(error);
      } finally {
        await parts.drop();
      }
    });
    // A purge that fails leaves the next group to fail and say why.
    if (++this.merged % PURGE_EVERY_GROUPS === 0) await handBackPool(this.warehouse).catch(() => undefined);
  }

  private async mergeAndResolve(parts: PartStaging, part: readonly Job[]): Promise<void> {
    const results = await this.merge(parts, part);
    for (const job of part) job.resolve(results.get(job)!);
  }

  /** A part that failed: a load alone fails with `error`, the loads of a larger part are merged one at a time. */
  private async eachAlone(parts: PartStaging, part: readonly Job[], error: unknown): Promise<void> {
    if (part.length === 1) return part[0].reject(error);
    for (const job of part) {
      try {
        job.resolve((await this.merge(parts, [job])).get(job)!);
      } catch (alone) {
        job.reject(alone);
      }
    }
  }

  /**
   * Merges `part` of the group (all of it, or its loads' rows put in the staging tables alone) with
   * every load's sync state and vintage bookkeeping in ONE transaction: one COMMIT, one sync_state
   * write and at most three vintage_reads statements.
   */
  private async merge(parts: PartStaging, part: readonly Job[]): Promise<Map<Job, RowsWritten>> {
    const { warehouse } = this;
    const kinds = await parts.stagedFor(part);
    faultPoint('staging');
    return warehouse.transaction(async () => {
      const results = new Map<Job, RowsWritten>();
      for (const [kind, staged] of kinds) {
        const jobs = part.filter((job) => job.kind === kind);
        const perSite =
          staged.sites.length > 0
            ? await SERIES[kind].merge(warehouse, staged.sites, jobs[0].options, staged)
            : new Map<string, RowsWritten>();
        for (const job of jobs) results.set(job, { ...perSite.get(job.siteId) });
      }
      for (const job of part) if (!results.has(job)) results.set(job, {});
      await writeVintageReads(
        warehouse,
        part.flatMap((job) => (job.vintages ? [job.vintages] : [])),
      );
      const marked = part.flatMap((job) => {
        const { syncState, now = Date.now() } = job.options;
        return syncState ? [{ job, siteId: job.siteId, state: syncState, now }] : [];
      });
      const advanced = await writeSyncStates(warehouse, marked);
      for (const { job, siteId, state } of marked) {
        if (advanced.has(stateKey(siteId, state.resource))) addRows(results.get(job)!, { sync_state: 1 });
      }
      for (const [job, rows] of results) results.set(job, nonZero(rows));
      return results;
    });
  }
}

/**
 * The staging tables of a group, for a part of it: the whole group merges from them as staged;
 * once a part is asked for, they are moved aside (held_*) and each part's rows copied back into
 * them, its sites numbered anew in the order of the group's.
 */
class PartStaging {
  private held = false;

  constructor(
    private readonly warehouse: Warehouse,
    private readonly group: Group,
  ) {}

  /** Stages `part` (the group's rows when it is the whole group); each kind's sites and rows as staged. */
  async stagedFor(part: readonly Job[]): Promise<Map<SeriesKind, KindStaged>> {
    const { group } = this;
    if (part.length === group.jobs.length && !group.strays && !this.held) return group.kinds;
    if (!this.held) await this.moveAside();
    const kinds = new Map<SeriesKind, KindStaged>();
    const statements: string[] = [];
    for (const [kind, staged] of group.kinds) {
      const inPart = new Set(part.filter((job) => job.kind === kind).map((job) => job.siteId));
      const siteNos = staged.sites.flatMap((site, index) => (inPart.has(site) ? [index + 1] : []));
      kinds.set(kind, {
        sites: siteNos.map((no) => staged.sites[no - 1]),
        rowsBySite: siteNos.map((no) => staged.rowsBySite[no - 1]),
        blocks: staged.blocks,
      });
      const series = SERIES[kind];
      const list = siteNos.length > 0 ? siteNos.join(', ') : 'NULL';
      statements.push(
        `CREATE OR REPLACE TEMP TABLE ${series.staging} AS SELECT list_position([${list}], site_no)::INTEGER AS site_no,
           * EXCLUDE (site_no) FROM temp.held_${series.staging} WHERE site_no IN (${list})`,
      );
      if (series.shared)
        statements.push(
          `CREATE OR REPLACE TEMP TABLE ${series.shared.table} AS SELECT * FROM temp.held_${series.shared.table}
             WHERE block_no IN (SELECT DISTINCT block_no FROM temp.${series.staging})`,
        );
    }
    if (group.hasVintageKeys) {
      const loadNos = part.map((job) => group.jobs.indexOf(job));
      statements.push(
        `CREATE OR REPLACE TEMP TABLE ${KEYS_TABLE} AS SELECT * FROM temp.held_${KEYS_TABLE} WHERE load_no IN (${loadNos.join(', ')})`,
      );
    }
    await this.warehouse.run(statements.join(';\n'));
    return kinds;
  }

  private tables(): string[] {
    const tables = [...this.group.kinds.keys()].flatMap((kind) => {
      const series = SERIES[kind];
      return series.shared ? [series.staging, series.shared.table] : [series.staging];
    });
    return this.group.hasVintageKeys ? [...tables, KEYS_TABLE] : tables;
  }

  private async moveAside(): Promise<void> {
    await this.warehouse.run(
      this.tables()
        .map((table) => `DROP TABLE IF EXISTS temp.held_${table}; ALTER TABLE temp.${table} RENAME TO held_${table}`)
        .join(';\n'),
    );
    this.held = true;
  }

  /** Drops the tables moved aside: the next group creates its own. A drop that fails leaves them to the next. */
  async drop(): Promise<void> {
    if (!this.held) return;
    await this.warehouse
      .run(
        this.tables()
          .map((table) => `DROP TABLE IF EXISTS temp.held_${table}`)
          .join(';\n'),
      )
      .catch(() => undefined);
  }
}
