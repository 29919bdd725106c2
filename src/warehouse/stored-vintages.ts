// What this process knows of the keys a vintage table (forecasts, model_outputs) holds of a site.
// A site the table held no row of when first asked holds only what this process inserted since,
// recorded here per model as two boxes of issue times by valid times: the EDGE, the oldest vintage
// of the site's last load, and the HULL, everything inserted before it. A staged block (a
// vintage's rows) outside both has no stored key, so its rows go in without the anti-join on the
// table's key (docs/benchmarks.md, session 67). The edge is kept apart because a site forecast's
// read holds rows of several vintages: the older pass (pending vintages newest first, in pieces)
// reads again, at other valid times, the oldest vintage the load before it stored in part, and
// every other vintage it reads is older than all that is stored.
// Every insert into these tables goes through series.ts, which records a load before it runs: a
// box recorded for an insert that rolled back only sends a later load through the anti-join,
// exact whatever the table holds; so does a block a box wrongly covers (boxes are hulls, and
// models are told apart by a hash of their id). What is held is ten numbers a site and model in
// one pool of typed arrays, whatever the history, the vintages or the loads.

/** What a staged block's rows are of: a vintage (a site forecast's: model '') and their valid times' span, epoch ms. */
export interface BlockSpan {
  modelId: string;
  issue: number;
  firstValid: number;
  lastValid: number;
}

/** The span of a block of `validTimes` (epoch ms, in any order) of a vintage. */
export function spanOf(modelId: string, issue: number, validTimes: ArrayLike<number>): BlockSpan {
  let firstValid = Number.POSITIVE_INFINITY;
  let lastValid = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < validTimes.length; i++) {
    if (validTimes[i] < firstValid) firstValid = validTimes[i];
    if (validTimes[i] > lastValid) lastValid = validTimes[i];
  }
  return { modelId, issue, firstValid, lastValid };
}

/** A box: first and last issue, first and last valid time. An empty one meets nothing. */
type Box = [number, number, number, number];
const EMPTY: Box = [
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
];

/** An entry, a site and model's: the model's hash, the site's next entry (NONE: the last), its hull (4), its edge (4). */
const ENTRY = 10;
const NEXT = 1;
const HULL = 2;
const EDGE = 6;
const NONE = -1;
/** Entries a chunk of the pool holds: the pool grows a chunk at a time, so it never copies nor holds more than a chunk spare. */
const CHUNK = 4096;

export class StoredVintages {
  /** Per site the table held no row of when first asked: its first entry (NONE: none yet). */
  private readonly clean = new Map<string, number>();
  /** Sites the table held rows of: what they hold is not known here. */
  private readonly foreign = new Set<string>();
  /** Every site's entries, ENTRY numbers each, in chunks of CHUNK entries. */
  private readonly chunks: Float64Array[] = [];
  private entries = 0;

  /** The sites not asked about yet. */
  unknown(sites: readonly string[]): string[] {
    return sites.filter((site) => !this.clean.has(site) && !this.foreign.has(site));
  }

  /** What the table was found to hold of `sites` (asked of them together: any of them, all taken to). */
  learn(sites: readonly string[], holdsRows: boolean): void {
    for (const site of sites) {
      if (holdsRows) this.foreign.add(site);
      else this.clean.set(site, NONE);
    }
  }

  /** Whether every block of `loads` is known to have no stored key (a load with a block not spanned is not). */
  allNew(loads: readonly { siteId: string; spans: readonly BlockSpan[] | undefined }[]): boolean {
    return loads.every(({ siteId, spans }) => {
      const first = this.clean.get(siteId);
      if (first === undefined || spans === undefined) return false;
      return spans.every((span) => !this.meets(first, span));
    });
  }

  /**
   * Records a load's blocks as inserted, before its insert runs: per model, the edge before it
   * and every vintage of the load but its oldest join the hull, and its oldest is the edge. A
   * load with a block not spanned leaves its site unknown from then on (its entries stay in the
   * pool unused: a site goes foreign once at most).
   */
  record(siteId: string, spans: readonly BlockSpan[] | undefined): void {
    if (!this.clean.has(siteId)) return;
    if (spans === undefined) {
      this.clean.delete(siteId);
      this.foreign.add(siteId);
      return;
    }
    for (const [modelId, vintages] of byModel(spans)) {
      const entry = this.entryOf(siteId, hashOf(modelId));
      const oldest = Math.min(...vintages.keys());
      let hull = hullOf(this.box(entry, HULL), this.box(entry, EDGE));
      for (const [issue, [firstValid, lastValid]] of vintages) {
        if (issue !== oldest) hull = hullOf(hull, [issue, issue, firstValid, lastValid]);
      }
      const [firstValid, lastValid] = vintages.get(oldest)!;
      this.setBox(entry, HULL, hull);
      this.setBox(entry, EDGE, [oldest, oldest, firstValid, lastValid]);
    }
  }

  /** Whether the block's model's hull or edge, among the entries from `first` on, holds its vintage and meets its valid times. */
  private meets(first: number, { modelId, issue, firstValid, lastValid }: BlockSpan): boolean {
    const hash = hashOf(modelId);
    for (let entry = first; entry !== NONE; entry = this.at(entry, NEXT)) {
      if (this.at(entry, 0) !== hash) continue;
      for (const offset of [HULL, EDGE]) {
        const [from, to, validFrom, validTo] = this.box(entry, offset);
        if (issue >= from && issue <= to && firstValid <= validTo && lastValid >= validFrom) return true;
      }
    }
    return false;
  }

  /** The site's entry of the model, added first (empty boxes) when it has none. */
  private entryOf(siteId: string, hash: number): number {
    const first = this.clean.get(siteId)!;
    for (let entry = first; entry !== NONE; entry = this.at(entry, NEXT)) if (this.at(entry, 0) === hash) return entry;
    const entry = this.entries++;
    if (entry % CHUNK === 0) this.chunks.push(new Float64Array(CHUNK * ENTRY));
    this.set(entry, 0, hash);
    this.set(entry, NEXT, first);
    this.setBox(entry, HULL, EMPTY);
    this.setBox(entry, EDGE, EMPTY);
    this.clean.set(siteId, entry);
    return entry;
  }

  private at(entry: number, offset: number): number {
    return this.chunks[Math.floor(entry / CHUNK)][(entry % CHUNK) * ENTRY + offset];
  }

  private set(entry: number, offset: number, value: number): void {
    this.chunks[Math.floor(entry / CHUNK)][(entry % CHUNK) * ENTRY + offset] = value;
  }

  private box(entry: number, offset: number): Box {
    return [this.at(entry, offset), this.at(entry, offset + 1), this.at(entry, offset + 2), this.at(entry, offset + 3)];
  }

  private setBox(entry: number, offset: number, box: Box): void {
    for (let i = 0; i < 4; i++) this.set(entry, offset + i, box[i]);
  }
}

function hullOf(a: Box, b: Box): Box {
  return [Math.min(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.max(a[3], b[3])];
}

/** A model id's 32-bit FNV-1a hash: two models of a site that share one only share their boxes. */
function hashOf(modelId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < modelId.length; i++) hash = Math.imul(hash ^ modelId.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** Per model, per vintage (issue), the first and last valid time of its blocks. */
function byModel(spans: readonly BlockSpan[]): Map<string, Map<number, [number, number]>> {
  const models = new Map<string, Map<number, [number, number]>>();
  for (const { modelId, issue, firstValid, lastValid } of spans) {
    const vintages = models.get(modelId) ?? new Map<number, [number, number]>();
    models.set(modelId, vintages);
    const valid = vintages.get(issue);
    vintages.set(
      issue,
      valid ? [Math.min(valid[0], firstValid), Math.max(valid[1], lastValid)] : [firstValid, lastValid],
    );
  }
  return models;
}
