-- The actuals whose data-quality flags are still to be computed (docs/sync.md, "Data-quality
-- flags"): a load of actuals records here, in its own transaction, each site whose values changed
-- and from when; the sync computes the flags of every such site once, after its series, and
-- deletes the rows in the transaction that writes the flags. A run killed in between leaves the
-- rows, and the next sync computes those flags.

CREATE TABLE actual_flags_pending (
  site_id VARCHAR NOT NULL,
  from_time TIMESTAMPTZ NOT NULL
);
