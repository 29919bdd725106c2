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


-- A capacity push uploads the file first and then deletes the service's points the file removed
-- (src/capacity/apply.ts), so a failure half-way never leaves the service less than the file; a
-- failed push records what the service held after it.
ALTER TABLE capacity_pushes ADD COLUMN held_points JSON;
