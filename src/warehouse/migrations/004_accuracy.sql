-- Accuracy: one row per scoring run, and its results one row per subject, group key and metric,
-- so that analysts can compare models and runs in SQL (docs/accuracy.md defines every metric).

CREATE TABLE accuracy_runs (
  run_id VARCHAR PRIMARY KEY,
  scored_at TIMESTAMPTZ NOT NULL,
  source VARCHAR NOT NULL,
  window_from TIMESTAMPTZ,
  window_to TIMESTAMPTZ,
  sites VARCHAR[],
  models VARCHAR[],
  groups VARCHAR[] NOT NULL,
  tz VARCHAR NOT NULL,
  forecast_label VARCHAR NOT NULL,
  actual_label VARCHAR NOT NULL,
  deadband_pct DOUBLE NOT NULL,
  max_missing_pct DOUBLE NOT NULL,
  mape_min_actual_pct DOUBLE NOT NULL,
  pairs BIGINT NOT NULL,
  dropped BIGINT NOT NULL,
  skipped_sites JSON,
  report_path VARCHAR
);
COMMENT ON TABLE accuracy_runs IS 'One row per accuracy run: what was scored and with which options';
COMMENT ON COLUMN accuracy_runs.run_id IS 'Run id (the job run id when run by the runner)';
COMMENT ON COLUMN accuracy_runs.scored_at IS 'When the run scored';
COMMENT ON COLUMN accuracy_runs.source IS 'warehouse, or the path of the pairs CSV that was scored';
COMMENT ON COLUMN accuracy_runs.window_from IS 'Start of the valid-time window scored (inclusive); NULL when open';
COMMENT ON COLUMN accuracy_runs.window_to IS 'End of the valid-time window scored (exclusive); NULL when open';
COMMENT ON COLUMN accuracy_runs.sites IS 'Sites asked for (ids or names); NULL for all';
COMMENT ON COLUMN accuracy_runs.models IS 'Model outputs asked for (names); NULL for all';
COMMENT ON COLUMN accuracy_runs.groups IS 'Groups scored: total, lead, hour, weekday, month, date, site, model';
COMMENT ON COLUMN accuracy_runs.tz IS 'Time zone of the hour, weekday, month and date groups';
COMMENT ON COLUMN accuracy_runs.forecast_label IS 'Interval label assumed for forecasts: beginning, ending or instant';
COMMENT ON COLUMN accuracy_runs.actual_label IS 'Interval label assumed for actuals: beginning, ending or instant';
COMMENT ON COLUMN accuracy_runs.deadband_pct IS 'Errors within this percentage of the actual counted as zero (0: no deadband)';
COMMENT ON COLUMN accuracy_runs.max_missing_pct IS 'A forecast interval missing more than this share of its actual sub-points was dropped';
COMMENT ON COLUMN accuracy_runs.mape_min_actual_pct IS 'MAPE skipped actuals at or below this percentage of capacity';
COMMENT ON COLUMN accuracy_runs.pairs IS 'Forecast points scored, over all subjects (group total)';
COMMENT ON COLUMN accuracy_runs.dropped IS 'Forecast points dropped for a missing actual, forecast, reference or quantile';
COMMENT ON COLUMN accuracy_runs.skipped_sites IS 'Sites left out, each with the reason (e.g. actuals coarser than forecasts)';
COMMENT ON COLUMN accuracy_runs.report_path IS 'The HTML report written by the run; NULL when none';

CREATE TABLE accuracy_results (
  run_id VARCHAR NOT NULL,
  subject VARCHAR NOT NULL,
  model VARCHAR NOT NULL,
  group_name VARCHAR NOT NULL,
  group_key VARCHAR NOT NULL,
  key_order DOUBLE NOT NULL,
  metric VARCHAR NOT NULL,
  value DOUBLE,
  PRIMARY KEY (run_id, subject, model, group_name, group_key, metric)
);
COMMENT ON TABLE accuracy_results IS 'Metric values of each accuracy run, one row per subject, model, group key and metric';
COMMENT ON COLUMN accuracy_results.run_id IS 'The run (accuracy_runs.run_id)';
COMMENT ON COLUMN accuracy_results.subject IS 'forecast (the site forecast as served), model (one model''s own output), quantiles (the quantile models of a site as one set) or pairs (a scored CSV)';
COMMENT ON COLUMN accuracy_results.model IS 'Model name for subject model; empty for the other subjects';
COMMENT ON COLUMN accuracy_results.group_name IS 'total, lead, hour, weekday, month, date, site or model';
COMMENT ON COLUMN accuracy_results.group_key IS 'The group''s value: all, 0-6h, 13 (hour in the run''s time zone), Mon, Jan, 2026-01-31, a site id, a model name';
COMMENT ON COLUMN accuracy_results.key_order IS 'Sort order of the keys within a group (hours, weekdays, months and lead buckets in their natural order)';
COMMENT ON COLUMN accuracy_results.metric IS 'n, dropped*, mape_skipped, mae, mbe, rmse, mape, nmae, nmbe, nrmse, skill, rmse_ref, r, r2, crmse, ksi, over, cpi, pinball_q<percent>, crps, crps_pinball, coverage, coverage_nominal';
COMMENT ON COLUMN accuracy_results.value IS 'The value: kW for mae, mbe, rmse, rmse_ref, crmse, ksi, over, cpi, pinball, crps; percent for mape, nmae, nmbe, nrmse, coverage; NaN and +-Infinity as DuckDB doubles';
