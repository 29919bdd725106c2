-- Incremental accuracy (docs/accuracy.md, "Incremental scoring"): the pairs of the last warehouse
-- score kept as a ledger, with what they were aligned from, so that the next score aligns only
-- the pairs whose forecast, actual, reference or flags changed and the valid times new to its
-- window. All of it is written in one transaction with accuracy_ledger_state; a run that finds
-- the state missing or made with other settings aligns everything again.

CREATE TABLE accuracy_ledger_state (
  fingerprint VARCHAR NOT NULL,
  window_from TIMESTAMPTZ,
  window_to TIMESTAMPTZ,
  actuals_seen_to TIMESTAMPTZ,
  next_pid BIGINT NOT NULL,
  run_id VARCHAR NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE accuracy_ledger_state IS 'One row: what the accuracy ledger (accuracy_pairs) holds; no row, no ledger';
COMMENT ON COLUMN accuracy_ledger_state.fingerprint IS 'Digest of everything a pair depends on besides the data: options (labels, intervals, max missing, flags mode, sites, models), sites, their interval lengths, capacity timelines and quantile levels';
COMMENT ON COLUMN accuracy_ledger_state.window_from IS 'Valid-time window of the ledger, start (inclusive); NULL when open';
COMMENT ON COLUMN accuracy_ledger_state.window_to IS 'Valid-time window of the ledger, end (exclusive); NULL when open';
COMMENT ON COLUMN accuracy_ledger_state.actuals_seen_to IS 'The newest actuals.first_seen_at or revised_at the ledger has seen';
COMMENT ON COLUMN accuracy_ledger_state.next_pid IS 'The pid the next pair added gets';
COMMENT ON COLUMN accuracy_ledger_state.run_id IS 'The accuracy run that wrote the ledger last';
COMMENT ON COLUMN accuracy_ledger_state.updated_at IS 'When';

CREATE TABLE accuracy_pairs (
  pid BIGINT NOT NULL,
  subject VARCHAR NOT NULL,
  model VARCHAR,
  site_id VARCHAR NOT NULL,
  served_model VARCHAR,
  issue_time TIMESTAMPTZ,
  valid_time TIMESTAMPTZ NOT NULL,
  group_time TIMESTAMPTZ NOT NULL,
  reference_time TIMESTAMPTZ,
  forecast DOUBLE,
  actual DOUBLE,
  reference DOUBLE,
  capacity DOUBLE,
  drop_reason VARCHAR
);
COMMENT ON TABLE accuracy_pairs IS 'The aligned pairs of the last warehouse accuracy score (src/accuracy/metrics.ts describes the columns), scored or dropped';
COMMENT ON COLUMN accuracy_pairs.pid IS 'Pair id; accuracy_pair_quantiles refers to it';
COMMENT ON COLUMN accuracy_pairs.subject IS 'forecast, model or quantiles';
COMMENT ON COLUMN accuracy_pairs.model IS 'Model name for subject model';
COMMENT ON COLUMN accuracy_pairs.site_id IS 'The site';
COMMENT ON COLUMN accuracy_pairs.served_model IS 'The model that served a site-forecast value';
COMMENT ON COLUMN accuracy_pairs.issue_time IS 'Issue time of the forecast (update_time, as_of)';
COMMENT ON COLUMN accuracy_pairs.valid_time IS 'The time the forecast is for';
COMMENT ON COLUMN accuracy_pairs.group_time IS 'The instant inside the interval that calendar groups and capacity use';
COMMENT ON COLUMN accuracy_pairs.reference_time IS 'The valid time whose actual is the reference';
COMMENT ON COLUMN accuracy_pairs.forecast IS 'Forecast in kW (NULL for a quantile set)';
COMMENT ON COLUMN accuracy_pairs.actual IS 'The actual resampled to the forecast interval, kW';
COMMENT ON COLUMN accuracy_pairs.reference IS 'The persistence reference, kW';
COMMENT ON COLUMN accuracy_pairs.capacity IS 'Capacity at the valid time, kW';
COMMENT ON COLUMN accuracy_pairs.drop_reason IS 'NULL when scored, else actual, flagged, forecast, reference or quantiles';

CREATE TABLE accuracy_pair_quantiles (
  pid BIGINT NOT NULL,
  level DOUBLE NOT NULL,
  q DOUBLE
);
COMMENT ON TABLE accuracy_pair_quantiles IS 'Quantiles of the quantile-set pairs of accuracy_pairs';
COMMENT ON COLUMN accuracy_pair_quantiles.pid IS 'The pair (accuracy_pairs.pid)';
COMMENT ON COLUMN accuracy_pair_quantiles.level IS 'Quantile level in (0, 1)';
COMMENT ON COLUMN accuracy_pair_quantiles.q IS 'The quantile forecast, kW';

CREATE TABLE accuracy_ledger_vintages (
  site_id VARCHAR NOT NULL,
  issue_time TIMESTAMPTZ NOT NULL,
  points BIGINT NOT NULL
);
COMMENT ON TABLE accuracy_ledger_vintages IS 'Forecast and model-output points per site and issue time inside the ledger''s window: a count that grew marks the vintage changed (forecast tables have no arrival time)';
COMMENT ON COLUMN accuracy_ledger_vintages.site_id IS 'The site';
COMMENT ON COLUMN accuracy_ledger_vintages.issue_time IS 'update_time of forecasts, as_of of model outputs';
COMMENT ON COLUMN accuracy_ledger_vintages.points IS 'Points of that issue time with a valid time in the window';

CREATE TABLE accuracy_ledger_flags (
  site_id VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  flags INTEGER NOT NULL
);
COMMENT ON TABLE accuracy_ledger_flags IS 'The data-quality flags (actual_flags) the ledger was aligned with: a flag set, changed or cleared since marks its actual changed';
COMMENT ON COLUMN accuracy_ledger_flags.site_id IS 'The site';
COMMENT ON COLUMN accuracy_ledger_flags.valid_time IS 'The actual''s valid time';
COMMENT ON COLUMN accuracy_ledger_flags.flags IS 'Its flags then';

ALTER TABLE accuracy_runs ADD COLUMN mode VARCHAR;
ALTER TABLE accuracy_runs ADD COLUMN pairs_aligned BIGINT;
COMMENT ON COLUMN accuracy_runs.mode IS 'full (every pair of the window aligned) or incremental (only new and changed pairs aligned, the rest from the ledger); NULL for a pairs file';
COMMENT ON COLUMN accuracy_runs.pairs_aligned IS 'Pairs the run aligned from forecasts and actuals (all of them for full, the new and changed ones for incremental)';
