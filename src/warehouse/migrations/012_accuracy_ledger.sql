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

CREATE TABLE accuracy_pair_quantiles (
  pid BIGINT NOT NULL,
  level DOUBLE NOT NULL,
  q DOUBLE
);

CREATE TABLE accuracy_ledger_vintages (
  site_id VARCHAR NOT NULL,
  issue_time TIMESTAMPTZ NOT NULL,
  points BIGINT NOT NULL
);

CREATE TABLE accuracy_ledger_flags (
  site_id VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  flags INTEGER NOT NULL
);

ALTER TABLE accuracy_runs ADD COLUMN mode VARCHAR;
ALTER TABLE accuracy_runs ADD COLUMN pairs_aligned BIGINT;
