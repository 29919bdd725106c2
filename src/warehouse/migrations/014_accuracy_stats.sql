-- Per-group statistics of the accuracy ledger (docs/accuracy.md, "Per-group statistics" and
-- "Incremental scoring"): the metrics of a warehouse score are computed from these, and each
-- score updates them from the pairs it removed from and added to the ledger, in the ledger's
-- transaction, so that it reads only what changed. A state whose fingerprint differs from the
-- metric options of a run (groups, time zone, lead buckets, deadband, MAPE floor, events, bins)
-- makes it compute them again from the whole ledger.

CREATE TABLE accuracy_stats_state (
  fingerprint VARCHAR NOT NULL,
  run_id VARCHAR NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE accuracy_stats_state IS 'One row: the metric options accuracy_stats and accuracy_histograms were computed with; no row, none yet';
COMMENT ON COLUMN accuracy_stats_state.fingerprint IS 'The metric options (groups, tz, lead buckets, deadband, MAPE floor, events) and the bin scale, as JSON';
COMMENT ON COLUMN accuracy_stats_state.run_id IS 'The accuracy run that wrote them last';
COMMENT ON COLUMN accuracy_stats_state.updated_at IS 'When';

CREATE TABLE accuracy_stats (
  subject VARCHAR NOT NULL,
  model VARCHAR,
  grp VARCHAR NOT NULL,
  key VARCHAR NOT NULL,
  key_order DOUBLE,
  chunk BIGINT NOT NULL,
  name VARCHAR NOT NULL,
  value DOUBLE
);
COMMENT ON TABLE accuracy_stats IS 'Statistics of the ledger''s pairs per subject, model, group key and UTC day of valid time (src/accuracy/stats.ts): counts and sums add over days, min_ and max_ take the least and greatest';
COMMENT ON COLUMN accuracy_stats.subject IS 'forecast, model or quantiles';
COMMENT ON COLUMN accuracy_stats.model IS 'Model name for subject model';
COMMENT ON COLUMN accuracy_stats.grp IS 'Group: total, lead, hour, ...';
COMMENT ON COLUMN accuracy_stats.key IS 'Group key';
COMMENT ON COLUMN accuracy_stats.key_order IS 'Sort number of the key';
COMMENT ON COLUMN accuracy_stats.chunk IS 'UTC day of the valid times, days since 1970-01-01';
COMMENT ON COLUMN accuracy_stats.name IS 'The statistic: n, s_abs, min_o, n|0.1 (per quantile level), tp|high (per event), ...';
COMMENT ON COLUMN accuracy_stats.value IS 'Its value';

CREATE TABLE accuracy_histograms (
  subject VARCHAR NOT NULL,
  model VARCHAR,
  grp VARCHAR NOT NULL,
  key VARCHAR NOT NULL,
  key_order DOUBLE,
  bin INTEGER NOT NULL,
  n_o BIGINT NOT NULL,
  n_f BIGINT NOT NULL
);
COMMENT ON TABLE accuracy_histograms IS 'Scored actuals and forecasts of the ledger per group key and logarithmic bin (src/accuracy/stats.ts): KSI, OVER and the medians';
COMMENT ON COLUMN accuracy_histograms.subject IS 'forecast, model or quantiles';
COMMENT ON COLUMN accuracy_histograms.model IS 'Model name for subject model';
COMMENT ON COLUMN accuracy_histograms.grp IS 'Group: total, lead, hour, ...';
COMMENT ON COLUMN accuracy_histograms.key IS 'Group key';
COMMENT ON COLUMN accuracy_histograms.key_order IS 'Sort number of the key';
COMMENT ON COLUMN accuracy_histograms.bin IS 'sign(x) * (round(ln|x| * 250) + 1000000); 0 for 0';
COMMENT ON COLUMN accuracy_histograms.n_o IS 'Scored actuals in the bin';
COMMENT ON COLUMN accuracy_histograms.n_f IS 'Scored forecasts in the bin';
