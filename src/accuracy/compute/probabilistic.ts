// Metrics of one quantile level as SFA scores a constant-percentile forecast
// (metrics/probabilistic.py, axis y): the event "actual at or below the quantile" forecast with
// the level's probability. Everything here is a function of per-group counts and sums (pairs,
// actuals at or below, pinball sums of the forecast and of the reference), so it adds up across
// groups and runs.

/** Per-level fields, in output order; a field is `<metric>_q<percent>` (levelField). */
export const LEVEL_METRICS = ['pinball', 'qss', 'below', 'bs', 'rel', 'res', 'unc'] as const;
export type LevelMetric = (typeof LEVEL_METRICS)[number];

/** `pinball_q10` for level 0.1, `bs_q2.5` for 0.025. */
export function levelField(metric: LevelMetric, level: number): string {
  return `${metric}_q${Number((level * 100).toFixed(6))}`;
}

/** What one group holds of one level: every other field is computed from these. */
export interface LevelSums {
  level: number;
  /** Pairs scored. */
  n: number;
  /** Pairs whose actual is at or below the quantile (SFA's event o = 1{obs <= fx}). */
  below: number;
  /** Mean pinball loss of the quantile, and of the reference at the same level (NaN without one). */
  pinball: number;
  pinballRef: number;
}

/**
 * SFA's skill score convention (quantile_skill_score, crps_skill_score): 1 - score / ref, 0 when
 * both are equal (0/0 too), -Infinity when only the reference is perfect.
 */
export function skillScore(score: number, ref: number): number {
  if (score === ref) return 0;
  if (ref === 0) return -Infinity;
  return 1 - score / ref;
}

/** numpy.around(x, decimals): x scaled, rounded half to even (rint), scaled back. */
function around(x: number, decimals: number): number {
  const scale = 10 ** decimals;
  const y = x * scale;
  const r = Math.round(y);
  const even = r - y === 0.5 && r % 2 !== 0 ? r - 1 : r;
  return even / scale;
}

/**
 * The level's fields of one group. With one probability per level, SFA's Brier decomposition has
 * one bin: the level rounded as SFA's _unique_forecasts rounds (tenths below 1000 pairs,
 * hundredths from 1000), so REL = (rounded level - base rate)², RES = 0 and UNC = base rate ×
 * (1 - base rate). The Brier score uses the level unrounded, so REL - RES + UNC equals BS only
 * when rounding leaves the level as it is (e.g. 0.1 or 0.9, not 0.25 below 1000 pairs).
 * A group with no pairs has every field NaN.
 */
export function levelFields(s: LevelSums, withReference: boolean): Record<string, number> {
  const p = s.level;
  const rate = s.n > 0 ? s.below / s.n : NaN;
  const f = around(p, s.n >= 1000 ? 2 : 1);
  const values: Partial<Record<LevelMetric, number>> = {
    pinball: s.n > 0 ? s.pinball : NaN,
    ...(withReference ? { qss: s.n > 0 ? skillScore(s.pinball, s.pinballRef) : NaN } : {}),
    below: 100 * rate,
    // mean of (p - o)²: o is 1 for `below` pairs and 0 for the rest
    bs: s.n > 0 ? ((s.n - s.below) * p * p + s.below * (p - 1) * (p - 1)) / s.n : NaN,
    rel: (f - rate) ** 2,
    res: s.n > 0 ? 0 : NaN,
    unc: rate * (1 - rate),
  };
  return Object.fromEntries(Object.entries(values).map(([m, v]) => [levelField(m as LevelMetric, p), v]));
}
