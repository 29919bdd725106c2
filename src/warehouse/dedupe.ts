// The one rule for a key a load is given more than once. Across reads (a vintage returned by
// several reads of a site), THE LAST READ WINS: the later run's rows over an earlier run's.
// Within one answer (a valid time listed twice in a body), THE GREATEST VALUE WINS (a null the
// least), whatever the order the service listed them in: two reads of the same data then store the
// same value, and no revision that never happened. The loader applies it to every series before
// staging (forecasts, model outputs, actuals), so the merge never has to pick between two values
// of one key.

/** Rows [start, end) of one load that share a key apart from the valid time (`group`). */
export interface KeyedRun {
  group: string;
  times: ArrayLike<number>;
  /** The value of each row, which decides between the rows of one run that share a valid time. */
  values: ArrayLike<number | null>;
  start: number;
  end: number;
}

/**
 * For each run, in order: null when it can be staged whole (its group appears in no other run and
 * its valid times rise strictly, so none repeats: the common case, one pass over the times),
 * else the ascending indexes of the rows to stage: per valid time no later run of its group has,
 * its greatest value ([]: none).
 */
export function oncePerKey(runs: readonly KeyedRun[]): (number[] | null)[] {
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
    const taken = later.get(run.group) ?? new Set<number>();
    later.set(run.group, taken);
    const best = new Map<number, number>();
    for (let i = run.start; i < run.end; i++) {
      const time = run.times[i];
      if (taken.has(time)) continue;
      const chosen = best.get(time);
      if (chosen === undefined || greater(run.values[i], run.values[chosen])) best.set(time, i);
    }
    for (const time of best.keys()) taken.add(time);
    kept[r] = [...best.values()].sort((a, b) => a - b);
  }
  return kept;
}

/** Whether `a` wins over `b`: a number over a null, the greater of two numbers. */
function greater(a: number | null, b: number | null): boolean {
  return a !== null && (b === null || a > b);
}

function rises({ times, start, end }: KeyedRun): boolean {
  for (let i = start + 1; i < end; i++) if (!(times[i] > times[i - 1])) return false;
  return true;
}
