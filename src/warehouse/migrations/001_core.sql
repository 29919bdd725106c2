-- The core tables: what the service holds, as synced, and the ledgers of what efsync did.
-- Every instant is a UTC TIMESTAMPTZ. Keys of the small tables are declared as PRIMARY KEYs
-- so that a rerun can never duplicate a row. The big series tables (forecasts, model_outputs,
-- actuals) have no PRIMARY KEY index: maintaining one made bulk merges ~6x slower, so their
-- key (named in a comment on each) is enforced by the loader's anti-join merge
-- (src/warehouse/loader.ts), the only writer of those tables.

CREATE TABLE sites (
  site_id VARCHAR PRIMARY KEY,
  name VARCHAR NOT NULL,
  type VARCHAR NOT NULL,
  latitude DOUBLE NOT NULL,
  longitude DOUBLE NOT NULL,
  nameplate_kw DOUBLE,
  created_at TIMESTAMPTZ,
  settings JSON,
  details JSON,
  synced_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE site_assets (
  site_id VARCHAR NOT NULL,
  asset_index INTEGER NOT NULL,
  mount VARCHAR,
  capacity_kw DOUBLE,
  install_date DATE,
  azimuth DOUBLE,
  tilt DOUBLE,
  axis_tilt DOUBLE,
  axis_azimuth DOUBLE,
  max_angle DOUBLE,
  details JSON,
  PRIMARY KEY (site_id, asset_index)
);

CREATE TABLE site_capacity (
  site_id VARCHAR NOT NULL,
  segment_index INTEGER NOT NULL,
  valid_from TIMESTAMPTZ,
  valid_to TIMESTAMPTZ,
  value_kw DOUBLE NOT NULL,
  details JSON,
  PRIMARY KEY (site_id, segment_index)
);

CREATE TABLE models (
  model_id VARCHAR PRIMARY KEY,
  site_id VARCHAR NOT NULL,
  name VARCHAR NOT NULL,
  label VARCHAR NOT NULL,
  version INTEGER NOT NULL,
  display_name VARCHAR,
  model_type VARCHAR,
  quantile DOUBLE,
  priority INTEGER NOT NULL,
  serving_active BOOLEAN,
  output_types VARCHAR[],
  schedule_cron VARCHAR,
  latest_state VARCHAR,
  synced_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE model_states (
  model_id VARCHAR NOT NULL,
  state VARCHAR NOT NULL,
  state_at TIMESTAMPTZ NOT NULL,
  details JSON,
  PRIMARY KEY (model_id, state_at, state)
);

CREATE TABLE model_settings_history (
  model_id VARCHAR NOT NULL,
  observed_at TIMESTAMPTZ NOT NULL,
  priority INTEGER NOT NULL,
  serving_active BOOLEAN,
  PRIMARY KEY (model_id, observed_at)
);

CREATE TABLE forecasts (
  site_id VARCHAR NOT NULL,
  model_name VARCHAR NOT NULL,
  model_version INTEGER NOT NULL,
  update_time TIMESTAMPTZ NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  forecast DOUBLE,
  capacity DOUBLE
  -- key: (site_id, model_name, model_version, update_time, valid_time), enforced by the loader
);

CREATE TABLE model_outputs (
  model_id VARCHAR NOT NULL,
  as_of TIMESTAMPTZ NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  site_id VARCHAR NOT NULL,
  model_name VARCHAR NOT NULL,
  model_version INTEGER NOT NULL,
  forecast DOUBLE,
  capacity DOUBLE
  -- key: (model_id, as_of, valid_time), enforced by the loader
);

CREATE TABLE actuals (
  site_id VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  value DOUBLE,
  first_seen_at TIMESTAMPTZ NOT NULL,
  revised_at TIMESTAMPTZ
  -- key: (site_id, valid_time), enforced by the loader
);

CREATE TABLE actual_revisions (
  site_id VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  replaced_at TIMESTAMPTZ NOT NULL,
  old_value DOUBLE,
  new_value DOUBLE,
  PRIMARY KEY (site_id, valid_time, replaced_at)
);

CREATE TABLE sync_state (
  site_id VARCHAR NOT NULL,
  resource VARCHAR NOT NULL,
  synced_to TIMESTAMPTZ NOT NULL,
  last_as_of TIMESTAMPTZ,
  updated_at TIMESTAMPTZ NOT NULL,
  run_id VARCHAR NOT NULL,
  PRIMARY KEY (site_id, resource)
);

CREATE TABLE runs (
  run_id VARCHAR PRIMARY KEY,
  job VARCHAR NOT NULL,
  trigger VARCHAR NOT NULL,
  scheduled_for TIMESTAMPTZ,
  attempt INTEGER NOT NULL DEFAULT 1,
  started_at TIMESTAMPTZ NOT NULL,
  ended_at TIMESTAMPTZ,
  status VARCHAR NOT NULL,
  rows_written JSON,
  error_summary VARCHAR,
  host VARCHAR,
  pid INTEGER
);

CREATE TABLE run_failures (
  run_id VARCHAR NOT NULL,
  site_id VARCHAR,
  resource VARCHAR,
  error VARCHAR NOT NULL,
  failed_at TIMESTAMPTZ NOT NULL
);
