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


ALTER TABLE runs ADD COLUMN rows_removed JSON;
