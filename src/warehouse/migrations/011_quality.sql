-- Data-quality flags on actuals (docs/accuracy.md, "Data quality"): a bitmask per suspect value,
-- computed in SQL after every load of actuals and again before every accuracy run. Only flagged
-- values have a row; the view actuals_quality shows every actual with its flags.

CREATE TABLE quality_flags (
  bit INTEGER PRIMARY KEY,
  name VARCHAR NOT NULL,
  meaning VARCHAR NOT NULL
);
INSERT INTO quality_flags VALUES
  (1, 'missing', 'The service reported a gap: the value is NULL'),
  (2, 'stale', 'The same value (within 1e-5 relative) held since at least accuracy.quality.stale_span before; not zero output of solar and wind, a wind site at its capacity (rated power), or a solar plateau (clipping)'),
  (4, 'negative', 'Below -accuracy.quality.negative_pct % of capacity (below 0 without a capacity) at a solar or wind site, which cannot consume'),
  (8, 'over_capacity', 'Above capacity at that instant (capacity timeline, else nameplate) by more than accuracy.quality.over_capacity_pct %'),
  (16, 'night', 'Solar output above accuracy.quality.night_pct % of capacity while the sun is below the horizon for the whole interval'),
  (32, 'clipping', 'Part of a plateau of a solar site: at least accuracy.quality.clipping_points consecutive values within accuracy.quality.clipping_pct % of capacity of each other, at half the capacity or more'),
  (64, 'outage', 'Inside an outage or curtailment window declared in a capacity file (windows:)');

CREATE TABLE actual_flags (
  site_id VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  flags INTEGER NOT NULL,
  checked_at TIMESTAMPTZ NOT NULL
  -- key: (site_id, valid_time); the flags of a range are deleted and inserted together (src/accuracy/quality.ts)
);

CREATE TABLE capacity_windows (
  site_id VARCHAR NOT NULL,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ NOT NULL,
  value_kw DOUBLE NOT NULL,
  reason VARCHAR NOT NULL,
  file VARCHAR NOT NULL
);
