// The one rule for a key a load is given more than once (a valid time listed twice in a body, or a
// vintage returned by several reads of a site): THE LAST VALUE GIVEN WINS, the last run's over
// an earlier run's and, within a run, the later row's. The loader applies it to every series
// before staging (forecasts, model outputs, actuals), so the merge never has to pick between two
// values of one key, and a resync of the same answers stores the same value and no revision.

/** Rows [start, end) of one load that share a key apart from the valid time (`group`). */
export interface KeyedRun {
  group: string;
  times: ArrayLike<number>;
  start: number;
  end: number;
}

/**
 * For each run, in order: null when it can be staged whole (its group appears in no other run and
 * its valid times rise strictly, so none repeats: the common case, one pass over the times),
 * else the ascending indexes of the rows to stage, those no later row of its group repeats ([]:
 * none).
 */
export function lastOfEach(runs: readonly KeyedRun[]): (number[] | null)[] {
  const count = new Map<string, number>();
  for (const run of runs) count.set(run.group, (count.get(run.group) ?? 0) + 1);
  const later = new Map<string, Set<number>>();
  const kept: (number[] | null)[] = new Array(runs.length);
  for (let r = runs.length - 1; r >= 0; r--) {
    const run = runs[r];
    if (count.get(run.group) === 1 && rises(run)) {
      kept[r] = null;
      continue;
    }
    const times = later.get(run.group) ?? new Set<number>();
    later.set(run.group, times);
    const keep: number[] = [];
    for (let i = run.end - 1; i >= run.start; i--) {
      if (times.has(run.times[i])) continue;
      times.add(run.times[i]);
      keep.push(i);
    }
    kept[r] = keep.reverse();
  }
  return kept;
}

function rises({ times, start, end }: KeyedRun): boolean {
  for (let i = start + 1; i < end; i++) if (!(times[i] > times[i - 1])) return false;
  return true;
}
