-- The analyst views and table macros, in their current form: the one definition of each, applied
-- after the numbered migrations (CREATE OR REPLACE) whenever this file's digest differs from the
-- one schema_views records (src/warehouse/migrate.ts). Edit a view here, never in a migration; a
-- migration holds tables, columns and data moves, and drops a view it must drop before changing
-- a table (this file then creates it again). Removing a view takes a migration that drops it.
-- The views' and their columns' comments are in comments.yaml, applied after this file.
--
-- UTC days are computed from epoch milliseconds, never with date_trunc on a TIMESTAMPTZ: that
-- truncates in the session's TimeZone, which differs between analysts' machines, and these views
-- must answer the same everywhere.

CREATE OR REPLACE VIEW forecast_latest AS
SELECT site_id, valid_time, update_time, valid_time - update_time AS lead_time,
       model_name, model_version, forecast, capacity
FROM forecasts
QUALIFY row_number() OVER (PARTITION BY site_id, valid_time ORDER BY update_time DESC, model_name, model_version DESC) = 1;

CREATE OR REPLACE VIEW forecast_vs_actual AS
SELECT f.site_id, f.valid_time, f.update_time, f.lead_time, f.model_name, f.model_version,
       f.forecast, a.value AS actual, f.forecast - a.value AS error, abs(f.forecast - a.value) AS abs_error,
       f.capacity, (f.forecast - a.value) / NULLIF(f.capacity, 0) AS error_of_capacity
FROM forecast_latest f
JOIN actuals a USING (site_id, valid_time);

CREATE OR REPLACE VIEW forecast_day_ahead AS
SELECT site_id, valid_time, update_time, valid_time - update_time AS lead_time,
       model_name, model_version, forecast, capacity
FROM forecasts
WHERE epoch_ms(update_time) // 86400000 =
      (epoch_ms(valid_time) - CASE WHEN (SELECT label FROM interval_labels WHERE resource = 'forecasts') = 'ending' THEN 1 ELSE 0 END) // 86400000 - 1
QUALIFY row_number() OVER (PARTITION BY site_id, valid_time ORDER BY update_time DESC, model_name, model_version DESC) = 1;

CREATE OR REPLACE VIEW model_output_vs_actual AS
SELECT o.model_id, o.site_id, o.model_name, o.model_version, m.quantile, o.as_of, o.valid_time,
       o.valid_time - o.as_of AS lead_time, o.forecast, a.value AS actual,
       o.forecast - a.value AS error, o.capacity
FROM model_outputs o
JOIN actuals a USING (site_id, valid_time)
LEFT JOIN models m USING (site_id, model_id);

CREATE OR REPLACE VIEW site_freshness AS
SELECT s.site_id, s.name, s.type,
       a.newest_actual, f.newest_forecast_valid_time, f.newest_forecast_update_time,
       st.last_synced_at
FROM sites s
LEFT JOIN (SELECT site_id, max(valid_time) AS newest_actual FROM actuals WHERE value IS NOT NULL GROUP BY site_id) a USING (site_id)
LEFT JOIN (SELECT site_id, max(valid_time) AS newest_forecast_valid_time, max(update_time) AS newest_forecast_update_time
           FROM forecasts GROUP BY site_id) f USING (site_id)
LEFT JOIN (SELECT site_id, max(updated_at) AS last_synced_at FROM sync_state GROUP BY site_id) st USING (site_id);

CREATE OR REPLACE VIEW accuracy_latest AS
SELECT r.* FROM accuracy_results r
WHERE r.run_id = (SELECT run_id FROM accuracy_runs WHERE source = 'warehouse' ORDER BY scored_at DESC LIMIT 1);

CREATE OR REPLACE VIEW job_last_runs AS
WITH ranked AS (
  SELECT r.*, row_number() OVER (PARTITION BY r.job ORDER BY r.started_at DESC, r.run_id DESC) AS recency
  FROM runs r
),
last_ok AS (
  SELECT job, max(started_at) AS last_ok_at FROM runs WHERE status = 'ok' GROUP BY job
),
failure_counts AS (
  SELECT run_id, count(*) AS failures FROM run_failures GROUP BY run_id
)
SELECT ranked.job, ranked.run_id, ranked.trigger, ranked.scheduled_for, ranked.attempt,
  ranked.started_at, ranked.ended_at, ranked.status, ranked.rows_written, ranked.error_summary,
  ranked.host, ranked.pid, coalesce(failure_counts.failures, 0) AS failures, last_ok.last_ok_at
FROM ranked
LEFT JOIN failure_counts USING (run_id)
LEFT JOIN last_ok USING (job)
WHERE ranked.recency = 1;

CREATE OR REPLACE VIEW actuals_quality AS
SELECT a.site_id, a.valid_time, a.value, coalesce(f.flags, 0) AS flags,
  list(q.name ORDER BY q.bit) FILTER (WHERE q.bit IS NOT NULL) AS flag_names
FROM actuals a
LEFT JOIN actual_flags f USING (site_id, valid_time)
LEFT JOIN quality_flags q ON f.flags & q.bit <> 0
GROUP BY a.site_id, a.valid_time, a.value, f.flags;

CREATE OR REPLACE VIEW actual_flag_counts AS
SELECT f.site_id, q.name AS flag, q.bit, count(*) AS flagged, min(f.valid_time) AS first_time, max(f.valid_time) AS last_time
FROM actual_flags f JOIN quality_flags q ON f.flags & q.bit <> 0
GROUP BY f.site_id, q.name, q.bit;

CREATE OR REPLACE MACRO forecast_as_of(at_time) AS TABLE
SELECT site_id, valid_time, update_time, valid_time - update_time AS lead_time,
       model_name, model_version, forecast, capacity
FROM forecasts
WHERE update_time <= CAST(at_time AS TIMESTAMPTZ)
QUALIFY row_number() OVER (PARTITION BY site_id, valid_time ORDER BY update_time DESC, model_name, model_version DESC) = 1;

CREATE OR REPLACE MACRO model_output_as_of(at_time) AS TABLE
SELECT model_id, site_id, model_name, model_version, valid_time, as_of, valid_time - as_of AS lead_time,
       forecast, capacity
FROM model_outputs
WHERE as_of <= CAST(at_time AS TIMESTAMPTZ)
QUALIFY row_number() OVER (PARTITION BY site_id, model_id, valid_time ORDER BY as_of DESC) = 1;

