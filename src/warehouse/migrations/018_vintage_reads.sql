-- The vintages a sync could not read (docs/sync.md, "Vintages one by one"): each site forecast
-- as_of, and each model's output vintage, is an item of its own; one that fails is kept here as
-- pending and read again on the next nights, up to sync.vintage_retries more times, then kept as
-- given up (shown by `efsync status`). A vintage read again successfully is deleted.

CREATE TABLE vintage_reads (
  site_id VARCHAR NOT NULL,
  resource VARCHAR NOT NULL,
  model_id VARCHAR NOT NULL,
  issue TIMESTAMPTZ NOT NULL,
  status VARCHAR NOT NULL,
  attempts INTEGER NOT NULL,
  reason VARCHAR NOT NULL,
  first_failed_at TIMESTAMPTZ NOT NULL,
  last_failed_at TIMESTAMPTZ NOT NULL,
  run_id VARCHAR NOT NULL,
  PRIMARY KEY (site_id, resource, model_id, issue)
);
COMMENT ON TABLE vintage_reads IS 'Vintages whose read failed: pending (read again next sync) or given up after sync.vintage_retries retries';
COMMENT ON COLUMN vintage_reads.site_id IS 'The site';
COMMENT ON COLUMN vintage_reads.resource IS 'forecasts (the site forecast) or outputs (a model''s output)';
COMMENT ON COLUMN vintage_reads.model_id IS 'The model of an output vintage; empty for the site forecast';
COMMENT ON COLUMN vintage_reads.issue IS 'forecasts: the issue time listed by Get Site Forecast Updates (to the microsecond); outputs: the model''s cron fire whose vintage is awaited';
COMMENT ON COLUMN vintage_reads.status IS 'pending or given_up';
COMMENT ON COLUMN vintage_reads.attempts IS 'Reads that failed so far';
COMMENT ON COLUMN vintage_reads.reason IS 'Why the last read failed';
COMMENT ON COLUMN vintage_reads.first_failed_at IS 'When the first read failed';
COMMENT ON COLUMN vintage_reads.last_failed_at IS 'When the last read failed';
COMMENT ON COLUMN vintage_reads.run_id IS 'The run of the last failed read';
