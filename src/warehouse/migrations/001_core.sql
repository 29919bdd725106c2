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
COMMENT ON TABLE sites IS 'One row per site of the account, as the service last described it';
COMMENT ON COLUMN sites.site_id IS 'The service''s site id';
COMMENT ON COLUMN sites.name IS 'Site name';
COMMENT ON COLUMN sites.type IS 'solar, wind or load';
COMMENT ON COLUMN sites.latitude IS 'Degrees north, -90 to 90';
COMMENT ON COLUMN sites.longitude IS 'Degrees east, -180 to 180';
COMMENT ON COLUMN sites.nameplate_kw IS 'Installed capacity in kW: sum of asset capacities (solar), site capacity (wind, load)';
COMMENT ON COLUMN sites.created_at IS 'creation_timestamp_utc from the service';
COMMENT ON COLUMN sites.settings IS 'The site settings object as the service returns it';
COMMENT ON COLUMN sites.details IS 'Fields of the site response that have no column of their own';
COMMENT ON COLUMN sites.synced_at IS 'When efsync last read this site';

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
COMMENT ON TABLE site_assets IS 'PV assets of solar sites, in the order the service lists them';
COMMENT ON COLUMN site_assets.site_id IS 'The site the asset belongs to';
COMMENT ON COLUMN site_assets.asset_index IS 'Position of the asset in the site''s assets array, from 0';
COMMENT ON COLUMN site_assets.mount IS 'fixed, single_axis_tracking or dual_axis_tracking';
COMMENT ON COLUMN site_assets.capacity_kw IS 'DC capacity in kW';
COMMENT ON COLUMN site_assets.install_date IS 'Installation date';
COMMENT ON COLUMN site_assets.azimuth IS 'Degrees clockwise from north (180 = south), fixed mounts';
COMMENT ON COLUMN site_assets.tilt IS 'Degrees from horizontal, fixed mounts';
COMMENT ON COLUMN site_assets.axis_tilt IS 'Tilt of the tracker axis in degrees, single-axis trackers';
COMMENT ON COLUMN site_assets.axis_azimuth IS 'Azimuth of the tracker axis in degrees, single-axis trackers';
COMMENT ON COLUMN site_assets.max_angle IS 'Maximum rotation of the tracker in degrees, single-axis trackers';
COMMENT ON COLUMN site_assets.details IS 'The asset object as the service returns it';

CREATE TABLE site_capacity (
  site_id VARCHAR NOT NULL,
  segment_index INTEGER NOT NULL,
  valid_from TIMESTAMPTZ,
  valid_to TIMESTAMPTZ,
  value_kw DOUBLE NOT NULL,
  details JSON,
  PRIMARY KEY (site_id, segment_index)
);
COMMENT ON TABLE site_capacity IS 'The site''s available-capacity timeline (capacity_kw_array), one row per segment';
COMMENT ON COLUMN site_capacity.site_id IS 'The site';
COMMENT ON COLUMN site_capacity.segment_index IS 'Position in capacity_kw_array, from 0';
COMMENT ON COLUMN site_capacity.valid_from IS 'Start of the segment (dateStart); NULL when open to the past';
COMMENT ON COLUMN site_capacity.valid_to IS 'End of the segment (dateEnd), exclusive; NULL when it holds forward';
COMMENT ON COLUMN site_capacity.value_kw IS 'Available capacity in kW during the segment';
COMMENT ON COLUMN site_capacity.details IS 'The segment object as the service returns it';

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
COMMENT ON TABLE models IS 'Models of each site, with their current serving settings';
COMMENT ON COLUMN models.model_id IS 'The service''s model id';
COMMENT ON COLUMN models.site_id IS 'The site the model forecasts';
COMMENT ON COLUMN models.name IS 'Model name; forecasts.model_name refers to it';
COMMENT ON COLUMN models.label IS 'Model label';
COMMENT ON COLUMN models.version IS 'Model version';
COMMENT ON COLUMN models.display_name IS 'Human name, when the service gives one';
COMMENT ON COLUMN models.model_type IS 'ai or physical, as the model_type filter of list-site-models classifies it';
COMMENT ON COLUMN models.quantile IS 'Quantile level in (0,1) for quantile models (name quantile_p<percent>), NULL for point forecasts';
COMMENT ON COLUMN models.priority IS 'Serving priority: the lower number wins when the site forecast is stitched';
COMMENT ON COLUMN models.serving_active IS 'Whether the model serves the site forecast (requested with extra=serving_active)';
COMMENT ON COLUMN models.output_types IS 'Output types the model produces';
COMMENT ON COLUMN models.schedule_cron IS 'Cron expression of the model''s issue schedule';
COMMENT ON COLUMN models.latest_state IS 'The newest training state';
COMMENT ON COLUMN models.synced_at IS 'When efsync last read this model';

CREATE TABLE model_states (
  model_id VARCHAR NOT NULL,
  state VARCHAR NOT NULL,
  state_at TIMESTAMPTZ NOT NULL,
  details JSON,
  PRIMARY KEY (model_id, state_at, state)
);
COMMENT ON TABLE model_states IS 'Training state history of each model; entries accumulate across syncs';
COMMENT ON COLUMN model_states.model_id IS 'The model';
COMMENT ON COLUMN model_states.state IS 'queued, training, complete, retry, failed, or a state the service added';
COMMENT ON COLUMN model_states.state_at IS 'timestamp_utc of the state entry';
COMMENT ON COLUMN model_states.details IS 'The state entry as the service returns it';

CREATE TABLE model_settings_history (
  model_id VARCHAR NOT NULL,
  observed_at TIMESTAMPTZ NOT NULL,
  priority INTEGER NOT NULL,
  serving_active BOOLEAN,
  PRIMARY KEY (model_id, observed_at)
);
COMMENT ON TABLE model_settings_history IS 'Serving settings of each model whenever a sync saw them change';
COMMENT ON COLUMN model_settings_history.model_id IS 'The model';
COMMENT ON COLUMN model_settings_history.observed_at IS 'When the sync saw these settings first';
COMMENT ON COLUMN model_settings_history.priority IS 'Serving priority';
COMMENT ON COLUMN model_settings_history.serving_active IS 'Serving switch';

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
COMMENT ON TABLE forecasts IS 'Site forecasts, every issued vintage (update_time) kept; an older vintage is never overwritten';
COMMENT ON COLUMN forecasts.site_id IS 'The site';
COMMENT ON COLUMN forecasts.model_name IS 'The model that served this value';
COMMENT ON COLUMN forecasts.model_version IS 'Version of that model';
COMMENT ON COLUMN forecasts.update_time IS 'Issue time of the value; lead time = valid_time - update_time';
COMMENT ON COLUMN forecasts.valid_time IS 'The time the value is for';
COMMENT ON COLUMN forecasts.forecast IS 'Forecast power in kW';
COMMENT ON COLUMN forecasts.capacity IS 'Available capacity in kW at valid_time, as the service applied it';

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
COMMENT ON TABLE model_outputs IS 'Each model''s own output, one vintage per as_of';
COMMENT ON COLUMN model_outputs.model_id IS 'The model';
COMMENT ON COLUMN model_outputs.as_of IS 'Issue time of the vintage the service returned';
COMMENT ON COLUMN model_outputs.valid_time IS 'The time the value is for';
COMMENT ON COLUMN model_outputs.site_id IS 'The site of the model';
COMMENT ON COLUMN model_outputs.model_name IS 'Model name';
COMMENT ON COLUMN model_outputs.model_version IS 'Model version';
COMMENT ON COLUMN model_outputs.forecast IS 'Forecast power in kW';
COMMENT ON COLUMN model_outputs.capacity IS 'Available capacity in kW at valid_time';

CREATE TABLE actuals (
  site_id VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  value DOUBLE,
  first_seen_at TIMESTAMPTZ NOT NULL,
  revised_at TIMESTAMPTZ
  -- key: (site_id, valid_time), enforced by the loader
);
COMMENT ON TABLE actuals IS 'Measured power per site; the newest value, earlier values in actual_revisions';
COMMENT ON COLUMN actuals.site_id IS 'The site';
COMMENT ON COLUMN actuals.valid_time IS 'The time the measurement is for';
COMMENT ON COLUMN actuals.value IS 'Measured power in kW (NULL when the service has a gap)';
COMMENT ON COLUMN actuals.first_seen_at IS 'When efsync first stored a value for this point';
COMMENT ON COLUMN actuals.revised_at IS 'When efsync last saw the value change; NULL if never revised';

CREATE TABLE actual_revisions (
  site_id VARCHAR NOT NULL,
  valid_time TIMESTAMPTZ NOT NULL,
  replaced_at TIMESTAMPTZ NOT NULL,
  old_value DOUBLE,
  new_value DOUBLE,
  PRIMARY KEY (site_id, valid_time, replaced_at)
);
COMMENT ON TABLE actual_revisions IS 'Every change of an actual value: what it was and what replaced it';
COMMENT ON COLUMN actual_revisions.site_id IS 'The site';
COMMENT ON COLUMN actual_revisions.valid_time IS 'The time the measurement is for';
COMMENT ON COLUMN actual_revisions.replaced_at IS 'When efsync saw the revision';
COMMENT ON COLUMN actual_revisions.old_value IS 'The value before the revision';
COMMENT ON COLUMN actual_revisions.new_value IS 'The value after the revision';

CREATE TABLE sync_state (
  site_id VARCHAR NOT NULL,
  resource VARCHAR NOT NULL,
  synced_to TIMESTAMPTZ NOT NULL,
  last_as_of TIMESTAMPTZ,
  updated_at TIMESTAMPTZ NOT NULL,
  run_id VARCHAR NOT NULL,
  PRIMARY KEY (site_id, resource)
);
COMMENT ON TABLE sync_state IS 'How far each site and resource has been synced: the next run starts here minus the lookback';
COMMENT ON COLUMN sync_state.site_id IS 'The site';
COMMENT ON COLUMN sync_state.resource IS 'forecasts, outputs or actuals';
COMMENT ON COLUMN sync_state.synced_to IS 'End of the last window synced (valid time)';
COMMENT ON COLUMN sync_state.last_as_of IS 'Newest as_of vintage read, for resources read by vintage';
COMMENT ON COLUMN sync_state.updated_at IS 'When the state was last written';
COMMENT ON COLUMN sync_state.run_id IS 'The run that wrote it';

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
COMMENT ON TABLE runs IS 'The run ledger: one row per job run';
COMMENT ON COLUMN runs.run_id IS 'Run id, also on every log line of the run';
COMMENT ON COLUMN runs.job IS 'Job name (nightly, sync-forecasts, ...)';
COMMENT ON COLUMN runs.trigger IS 'manual, schedule, catch-up or retry';
COMMENT ON COLUMN runs.scheduled_for IS 'The schedule slot the run stands for; NULL for manual runs';
COMMENT ON COLUMN runs.attempt IS 'Attempt number for that slot, from 1';
COMMENT ON COLUMN runs.started_at IS 'Start of the run';
COMMENT ON COLUMN runs.ended_at IS 'End of the run; NULL while running';
COMMENT ON COLUMN runs.status IS 'running, ok, partial, failed, interrupted or skipped';
COMMENT ON COLUMN runs.rows_written IS 'Rows written per table, as a JSON object';
COMMENT ON COLUMN runs.error_summary IS 'What went wrong, in a line';
COMMENT ON COLUMN runs.host IS 'Host that ran it';
COMMENT ON COLUMN runs.pid IS 'Process id that ran it';

CREATE TABLE run_failures (
  run_id VARCHAR NOT NULL,
  site_id VARCHAR,
  resource VARCHAR,
  error VARCHAR NOT NULL,
  failed_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE run_failures IS 'What failed in a run, per site and resource, with the reason';
COMMENT ON COLUMN run_failures.run_id IS 'The run';
COMMENT ON COLUMN run_failures.site_id IS 'The site that failed, NULL for a failure of the whole run';
COMMENT ON COLUMN run_failures.resource IS 'sites, models, forecasts, outputs, actuals, capacity, accuracy';
COMMENT ON COLUMN run_failures.error IS 'The reason, as the error said it (never holding the API key)';
COMMENT ON COLUMN run_failures.failed_at IS 'When it failed';
