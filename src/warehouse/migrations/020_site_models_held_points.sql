-- Models keyed by site and model id (issue 29): the service may list one model id under two sites,
-- and keyed by model_id alone one site's listing of it was lost. models, model_states and
-- model_settings_history are rebuilt with site_id in their key (DuckDB cannot change a primary
-- key in place); what a warehouse holds moves over with the one site each model had. model_outputs
-- (no primary key; the loader keeps its key) is keyed by site too: a model's output is read by its
-- id, so every site listing it stores the same rows, each under its own site.

-- The view reads models (views.sql creates it again after the migrations).
DROP VIEW IF EXISTS model_output_vs_actual;

CREATE TABLE models_by_site (
  model_id VARCHAR NOT NULL,
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
  synced_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (site_id, model_id)
);
INSERT INTO models_by_site SELECT * FROM models;
DROP TABLE models;
ALTER TABLE models_by_site RENAME TO models;
COMMENT ON TABLE models IS 'Models of each site, with their current serving settings; a model listed under two sites has a row under each';
COMMENT ON COLUMN models.model_id IS 'The service''s model id';
COMMENT ON COLUMN models.site_id IS 'The site that lists the model';
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

CREATE TABLE model_states_by_site (
  site_id VARCHAR NOT NULL,
  model_id VARCHAR NOT NULL,
  state VARCHAR NOT NULL,
  state_at TIMESTAMPTZ NOT NULL,
  details JSON,
  PRIMARY KEY (site_id, model_id, state_at, state)
);
INSERT INTO model_states_by_site
SELECT m.site_id, s.model_id, s.state, s.state_at, s.details FROM model_states s JOIN models m USING (model_id);
DROP TABLE model_states;
ALTER TABLE model_states_by_site RENAME TO model_states;
COMMENT ON TABLE model_states IS 'Training state history of each model of each site; entries accumulate across syncs';
COMMENT ON COLUMN model_states.site_id IS 'The site that lists the model';
COMMENT ON COLUMN model_states.model_id IS 'The model';
COMMENT ON COLUMN model_states.state IS 'queued, training, complete, retry, failed, or a state the service added';
COMMENT ON COLUMN model_states.state_at IS 'timestamp_utc of the state entry';
COMMENT ON COLUMN model_states.details IS 'The state entry as the service returns it';

CREATE TABLE model_settings_history_by_site (
  site_id VARCHAR NOT NULL,
  model_id VARCHAR NOT NULL,
  observed_at TIMESTAMPTZ NOT NULL,
  priority INTEGER NOT NULL,
  serving_active BOOLEAN,
  PRIMARY KEY (site_id, model_id, observed_at)
);
INSERT INTO model_settings_history_by_site
SELECT m.site_id, h.model_id, h.observed_at, h.priority, h.serving_active
FROM model_settings_history h JOIN models m USING (model_id);
DROP TABLE model_settings_history;
ALTER TABLE model_settings_history_by_site RENAME TO model_settings_history;
COMMENT ON TABLE model_settings_history IS 'Serving settings of each model of each site whenever a sync saw them change';
COMMENT ON COLUMN model_settings_history.site_id IS 'The site that lists the model';
COMMENT ON COLUMN model_settings_history.model_id IS 'The model';
COMMENT ON COLUMN model_settings_history.observed_at IS 'When the sync saw these settings first';
COMMENT ON COLUMN model_settings_history.priority IS 'Serving priority';
COMMENT ON COLUMN model_settings_history.serving_active IS 'Serving switch';

COMMENT ON TABLE model_outputs IS 'Each model''s own output, one vintage per as_of, under each site that lists the model (key: site_id, model_id, as_of, valid_time)';
COMMENT ON COLUMN model_outputs.site_id IS 'The site that lists the model';

-- A capacity push uploads the file first and then deletes the service's points the file removed
-- (src/capacity/apply.ts), so a failure half-way never leaves the service less than the file; a
-- failed push records what the service held after it.
ALTER TABLE capacity_pushes ADD COLUMN held_points JSON;
COMMENT ON COLUMN capacity_pushes.held_points IS 'After a failed push: the service''s timeline read back over the compared window, as change points in kW, a JSON array of {valid_time (YYYY-MM-DDTHH:MMZ), value}; NULL when the push landed or the read failed';
COMMENT ON COLUMN capacity_pushes.deleted_points IS 'The service''s points the file removed, deleted after the upload (as plan saw them, in kW): a JSON array of {valid_time (YYYY-MM-DDTHH:MMZ), value}; NULL when there were none';
