// What this process knows of the keys a vintage table (forecasts, model_outputs) holds of a site.
// A site the table held no row of when first asked holds only what this process inserted since,
// recorded here per model as boxes of issue times by valid times, three a load at most (its first
// vintage, its last, those between). A staged block (a vintage's rows) outside every box of its
// site and model has no stored key, so its rows go in without the anti-join on the table's key
// (docs/benchmarks.md, session 67). The valid times matter: a site forecast's read holds rows of
// several vintages, and the older pass reads other valid times of a vintage the newest pass
// stored in part. Every insert into these tables goes through series.ts, which records a load
// before it runs: a box recorded for an insert that rolled back only sends a later load through
// the anti-join, exact whatever the table holds. Boxes a load, not a vintage: a site's loads are
// few (its newest pass, then its pending vintages in pieces), so what is held grows with neither
// the history nor the vintages.

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

/** A box, flat: first and last issue, first and last valid time. */
const BOX = 4;

export class StoredVintages {
  /** Sites the table held no row of when first asked. */
  private readonly clean = new Set<string>();
  /** Sites the table held rows of: what they hold is not known here. */
  private readonly foreign = new Set<string>();
  /** Per site and model (`site\0model`), each load's boxes (BOX numbers each), flat. */
  private readonly boxes = new Map<string, number[]>();

  /** The sites not asked about yet. */
  unknown(sites: readonly string[]): string[] {
    return sites.filter((site) => !this.clean.has(site) && !this.foreign.has(site));
  }

  /** What the table was found to hold of `sites` (asked of them together: any of them, all taken to). */
  learn(sites: readonly string[], holdsRows: boolean): void {
    for (const site of sites) (holdsRows ? this.foreign : this.clean).add(site);
  }

  /** Whether every block of `loads` is known to have no stored key (a load with a block not spanned is not). */
  allNew(loads: readonly { siteId: string; spans: readonly BlockSpan[] | undefined }[]): boolean {
    return loads.every(
      ({ siteId, spans }) =>
        this.clean.has(siteId) && spans !== undefined && spans.every((span) => !this.meets(siteId, span)),
    );
  }

  /**
   * Records a load's blocks as inserted, before its insert runs: per model, a box for its first
   * vintage, one for its last, and one for those between (a read's rows of the vintage at either
   * end are often the few valid times the next load's reads of it do not return). A load with a
   * block not spanned leaves its site unknown from then on.
   */
  record(siteId: string, spans: readonly BlockSpan[] | undefined): void {
    if (spans === undefined) {
      this.clean.delete(siteId);
      this.foreign.add(siteId);
      return;
    }
    for (const [modelId, vintages] of byModel(spans)) {
      const issues = [...vintages.keys()].sort((a, b) => a - b);
      const first = issues[0];
      const last = issues[issues.length - 1];
      const boxes = [first, last].flatMap((issue, i) =>
        i === 1 && issue === first ? [] : [issue, issue, ...vintages.get(issue)!],
      );
      const between = issues.slice(1, -1);
      if (between.length > 0) {
        const valid = between.map((issue) => vintages.get(issue)!);
        boxes.push(
          between[0],
          between[between.length - 1],
          Math.min(...valid.map((v) => v[0])),
          Math.max(...valid.map((v) => v[1])),
        );
      }
      const key = `${siteId}\0${modelId}`;
      const known = this.boxes.get(key);
      if (known) known.push(...boxes);
      else this.boxes.set(key, boxes);
    }
  }

  /** Whether a box of the block's site and model holds its vintage and meets its valid times. */
  private meets(siteId: string, { modelId, issue, firstValid, lastValid }: BlockSpan): boolean {
    const known = this.boxes.get(`${siteId}\0${modelId}`);
    if (!known) return false;
    for (let i = 0; i < known.length; i += BOX) {
      if (issue >= known[i] && issue <= known[i + 1] && firstValid <= known[i + 3] && lastValid >= known[i + 2])
        return true;
    }
    return false;
  }
}
