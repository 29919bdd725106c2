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
