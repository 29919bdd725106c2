-- Retention (docs/warehouse.md, "Retention"): the nightly chain's retention step removes what the
-- config no longer keeps, a UTC day of valid times and a slice of sites to a transaction. Each
-- day it finished is recorded with the rows it left, so that the next run reads only the days
-- whose rows or rule changed since (new days, a backfill, a run killed mid-day, another keep), not
-- the whole history.

CREATE TABLE retention_days (
  table_name VARCHAR NOT NULL,
  day DATE NOT NULL,
  rows_kept BIGINT NOT NULL,
  rule VARCHAR NOT NULL,
  run_id VARCHAR NOT NULL,
  PRIMARY KEY (table_name, day)
);
COMMENT ON TABLE retention_days IS 'Per table and UTC day of valid time, the rows retention left there: a day whose count differs is read again';
COMMENT ON COLUMN retention_days.table_name IS 'forecasts, model_outputs, actual_revisions, actual_revisions_by_type or accuracy_pairs';
COMMENT ON COLUMN retention_days.day IS 'The UTC day of valid_time';
COMMENT ON COLUMN retention_days.rows_kept IS 'Rows of that day left after retention';
COMMENT ON COLUMN retention_days.rule IS 'What was kept, e.g. day_ahead,latest,6h (beginning): a day kept by another rule is read again';
COMMENT ON COLUMN retention_days.run_id IS 'The run that applied retention to the day';

COMMENT ON TABLE forecasts IS 'Site forecasts: every issued vintage (update_time) kept, never overwritten, for retention.all_vintages after its valid time, then those of retention.keep';
COMMENT ON TABLE model_outputs IS 'Each model''s own output, one vintage per as_of: kept as forecasts are (retention)';
COMMENT ON TABLE actual_revisions IS 'Every change of an actual value: what it was and what replaced it, for retention.actual_revisions after its valid time';
COMMENT ON TABLE actual_revisions_by_type IS 'Every change of a value of actuals_by_type: what it was and what replaced it, for retention.actual_revisions after its valid time';

ALTER TABLE runs ADD COLUMN rows_removed JSON;
COMMENT ON COLUMN runs.rows_removed IS 'Rows removed per table (the retention step), as a JSON object; NULL when none';
