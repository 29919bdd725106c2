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
