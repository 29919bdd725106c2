-- Actuals of other time series than power (Get Site Actuals with `type`, config
-- sync.actual_types): their own tables beside `actuals` and `actual_revisions`, which keep the
-- measured power that the views and the accuracy scores read.

CREATE TABLE actuals_by_type (
  site_id VARCHAR NOT NULL,
  type VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  value DOUBLE,
  first_seen_at TIMESTAMPTZ NOT NULL,
  revised_at TIMESTAMPTZ
  -- key: (site_id, type, valid_time), enforced by the loader
);

CREATE TABLE actual_revisions_by_type (
  site_id VARCHAR NOT NULL,
  type VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  replaced_at TIMESTAMPTZ NOT NULL,
  old_value DOUBLE,
  new_value DOUBLE,
  PRIMARY KEY (site_id, type, valid_time, replaced_at)
);

