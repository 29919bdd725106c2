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
COMMENT ON TABLE actuals_by_type IS 'Measured values of the other actuals series of a site (type other than power, as configured in sync.actual_types); the newest value, earlier values in actual_revisions_by_type';
COMMENT ON COLUMN actuals_by_type.site_id IS 'The site';
COMMENT ON COLUMN actuals_by_type.type IS 'The series type, as the service tags it (the type parameter of Get Site Actuals), e.g. availability';
COMMENT ON COLUMN actuals_by_type.valid_time IS 'The time the value is for';
COMMENT ON COLUMN actuals_by_type.value IS 'The measured value, in the unit the series was uploaded in (NULL when the service has a gap)';
COMMENT ON COLUMN actuals_by_type.first_seen_at IS 'When efsync first stored a value for this point';
COMMENT ON COLUMN actuals_by_type.revised_at IS 'When efsync last saw the value change; NULL if never revised';

CREATE TABLE actual_revisions_by_type (
  site_id VARCHAR NOT NULL,
  type VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  replaced_at TIMESTAMPTZ NOT NULL,
  old_value DOUBLE,
  new_value DOUBLE,
  PRIMARY KEY (site_id, type, valid_time, replaced_at)
);
COMMENT ON TABLE actual_revisions_by_type IS 'Every change of a value of actuals_by_type: what it was and what replaced it';
COMMENT ON COLUMN actual_revisions_by_type.site_id IS 'The site';
COMMENT ON COLUMN actual_revisions_by_type.type IS 'The series type';
COMMENT ON COLUMN actual_revisions_by_type.valid_time IS 'The time the value is for';
COMMENT ON COLUMN actual_revisions_by_type.replaced_at IS 'When efsync saw the revision';
COMMENT ON COLUMN actual_revisions_by_type.old_value IS 'The value before the revision';
COMMENT ON COLUMN actual_revisions_by_type.new_value IS 'The value after the revision';

COMMENT ON TABLE actuals IS 'Measured power per site (the actuals series of type power); the newest value, earlier values in actual_revisions. Other series types: actuals_by_type';
COMMENT ON COLUMN sync_state.resource IS 'forecasts, outputs or actuals (power), or actuals:<type> for another actuals series';
