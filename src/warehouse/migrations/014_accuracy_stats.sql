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
