-- The analyst views and table macros, in their current form: the one definition of each, applied
-- after the numbered migrations (CREATE OR REPLACE) whenever this file's digest differs from the
-- one schema_views records (src/warehouse/views.ts). Edit a view here, never in a migration; a
-- migration holds tables, columns, data moves and comments, and drops a view it must drop
-- before changing a table (this file then creates it again). Removing a view takes a migration
-- that drops it.
--
-- UTC days are computed from epoch milliseconds, never with date_trunc on a TIMESTAMPTZ: that
-- truncates in the session's TimeZone, which differs between analysts' machines, and these views
-- must answer the same everywhere.

CREATE OR REPLACE VIEW forecast_latest AS
SELECT site_id, valid_time, update_time, valid_time - update_time AS lead_time,
       model_name, model_version, forecast, capacity
FROM forecasts
QUALIFY row_number() OVER (PARTITION BY site_id, valid_time ORDER BY update_time DESC, model_name, model_version DESC) = 1;
COMMENT ON VIEW forecast_latest IS 'Per site and valid time, the value of the newest forecast vintage (largest update_time)';
COMMENT ON COLUMN forecast_latest.site_id IS 'The site';
COMMENT ON COLUMN forecast_latest.valid_time IS 'The time the value is for';
COMMENT ON COLUMN forecast_latest.update_time IS 'Issue time of the newest vintage covering valid_time';
COMMENT ON COLUMN forecast_latest.lead_time IS 'valid_time - update_time';
COMMENT ON COLUMN forecast_latest.model_name IS 'The model that served the value';
COMMENT ON COLUMN forecast_latest.model_version IS 'Version of that model';
COMMENT ON COLUMN forecast_latest.forecast IS 'Forecast power in kW';
COMMENT ON COLUMN forecast_latest.capacity IS 'Available capacity in kW at valid_time, as the service applied it';

CREATE OR REPLACE VIEW forecast_vs_actual AS
SELECT f.site_id, f.valid_time, f.update_time, f.lead_time, f.model_name, f.model_version,
       f.forecast, a.value AS actual, f.forecast - a.value AS error, abs(f.forecast - a.value) AS abs_error,
       f.capacity, (f.forecast - a.value) / NULLIF(f.capacity, 0) AS error_of_capacity
FROM forecast_latest f
JOIN actuals a USING (site_id, valid_time);
COMMENT ON VIEW forecast_vs_actual IS 'The latest forecast beside the measured value, for every site and valid time that has both (actual NULL where the service reports a gap)';
COMMENT ON COLUMN forecast_vs_actual.site_id IS 'The site';
COMMENT ON COLUMN forecast_vs_actual.valid_time IS 'The time forecast and measurement are for';
COMMENT ON COLUMN forecast_vs_actual.update_time IS 'Issue time of the forecast vintage';
COMMENT ON COLUMN forecast_vs_actual.lead_time IS 'valid_time - update_time';
COMMENT ON COLUMN forecast_vs_actual.model_name IS 'The model that served the forecast';
COMMENT ON COLUMN forecast_vs_actual.model_version IS 'Version of that model';
COMMENT ON COLUMN forecast_vs_actual.forecast IS 'Forecast power in kW';
COMMENT ON COLUMN forecast_vs_actual.actual IS 'Measured power in kW (the newest revision)';
COMMENT ON COLUMN forecast_vs_actual.error IS 'forecast - actual in kW: positive when the forecast was too high';
COMMENT ON COLUMN forecast_vs_actual.abs_error IS '|forecast - actual| in kW';
COMMENT ON COLUMN forecast_vs_actual.capacity IS 'Available capacity in kW at valid_time';
COMMENT ON COLUMN forecast_vs_actual.error_of_capacity IS 'error / capacity (a fraction; NULL when capacity is 0 or unknown)';

CREATE OR REPLACE VIEW forecast_day_ahead AS
SELECT site_id, valid_time, update_time, valid_time - update_time AS lead_time,
       model_name, model_version, forecast, capacity
FROM forecasts
WHERE epoch_ms(update_time) // 86400000 =
      (epoch_ms(valid_time) - CASE WHEN (SELECT label FROM interval_labels WHERE resource = 'forecasts') = 'ending' THEN 1 ELSE 0 END) // 86400000 - 1
QUALIFY row_number() OVER (PARTITION BY site_id, valid_time ORDER BY update_time DESC, model_name, model_version DESC) = 1;
COMMENT ON VIEW forecast_day_ahead IS 'Per site and valid time, the last vintage issued on the UTC day before the UTC day of the value''s interval (interval_labels)';
COMMENT ON COLUMN forecast_day_ahead.site_id IS 'The site';
COMMENT ON COLUMN forecast_day_ahead.valid_time IS 'The time the value is for';
COMMENT ON COLUMN forecast_day_ahead.update_time IS 'Issue time: the latest on the UTC day before the day of the value''s interval';
COMMENT ON COLUMN forecast_day_ahead.lead_time IS 'valid_time - update_time';
COMMENT ON COLUMN forecast_day_ahead.model_name IS 'The model that served the value';
COMMENT ON COLUMN forecast_day_ahead.model_version IS 'Version of that model';
COMMENT ON COLUMN forecast_day_ahead.forecast IS 'Forecast power in kW';
COMMENT ON COLUMN forecast_day_ahead.capacity IS 'Available capacity in kW at valid_time, as the service applied it';

CREATE OR REPLACE VIEW model_output_vs_actual AS
SELECT o.model_id, o.site_id, o.model_name, o.model_version, m.quantile, o.as_of, o.valid_time,
       o.valid_time - o.as_of AS lead_time, o.forecast, a.value AS actual,
       o.forecast - a.value AS error, o.capacity
FROM model_outputs o
JOIN actuals a USING (site_id, valid_time)
LEFT JOIN models m USING (site_id, model_id);
COMMENT ON VIEW model_output_vs_actual IS 'Every model output vintage beside the measured value, with its lead time';
COMMENT ON COLUMN model_output_vs_actual.model_id IS 'The model';
COMMENT ON COLUMN model_output_vs_actual.site_id IS 'The site of the model';
COMMENT ON COLUMN model_output_vs_actual.model_name IS 'Model name';
COMMENT ON COLUMN model_output_vs_actual.model_version IS 'Model version';
COMMENT ON COLUMN model_output_vs_actual.quantile IS 'Quantile level in (0,1) of a quantile model, NULL for point forecasts';
COMMENT ON COLUMN model_output_vs_actual.as_of IS 'Issue time of the vintage';
COMMENT ON COLUMN model_output_vs_actual.valid_time IS 'The time forecast and measurement are for';
COMMENT ON COLUMN model_output_vs_actual.lead_time IS 'valid_time - as_of';
COMMENT ON COLUMN model_output_vs_actual.forecast IS 'The model''s forecast power in kW';
COMMENT ON COLUMN model_output_vs_actual.actual IS 'Measured power in kW (the newest revision)';
COMMENT ON COLUMN model_output_vs_actual.error IS 'forecast - actual in kW';
COMMENT ON COLUMN model_output_vs_actual.capacity IS 'Available capacity in kW at valid_time';

CREATE OR REPLACE VIEW site_freshness AS
SELECT s.site_id, s.name, s.type,
       a.newest_actual, f.newest_forecast_valid_time, f.newest_forecast_update_time,
       st.last_synced_at
FROM sites s
LEFT JOIN (SELECT site_id, max(valid_time) AS newest_actual FROM actuals WHERE value IS NOT NULL GROUP BY site_id) a USING (site_id)
LEFT JOIN (SELECT site_id, max(valid_time) AS newest_forecast_valid_time, max(update_time) AS newest_forecast_update_time
           FROM forecasts GROUP BY site_id) f USING (site_id)
LEFT JOIN (SELECT site_id, max(updated_at) AS last_synced_at FROM sync_state GROUP BY site_id) st USING (site_id);
COMMENT ON VIEW site_freshness IS 'Per site: how recent its data in the warehouse is';
COMMENT ON COLUMN site_freshness.site_id IS 'The site';
COMMENT ON COLUMN site_freshness.name IS 'Site name';
COMMENT ON COLUMN site_freshness.type IS 'solar, wind or load';
COMMENT ON COLUMN site_freshness.newest_actual IS 'Newest valid_time with a measured value (not a gap)';
COMMENT ON COLUMN site_freshness.newest_forecast_valid_time IS 'Furthest valid_time any stored forecast reaches';
COMMENT ON COLUMN site_freshness.newest_forecast_update_time IS 'Issue time of the newest stored forecast vintage';
COMMENT ON COLUMN site_freshness.last_synced_at IS 'When a sync last advanced any of the site''s resources (sync_state.updated_at)';

CREATE OR REPLACE VIEW accuracy_latest AS
SELECT r.* FROM accuracy_results r
WHERE r.run_id = (SELECT run_id FROM accuracy_runs WHERE source = 'warehouse' ORDER BY scored_at DESC LIMIT 1);
COMMENT ON VIEW accuracy_latest IS 'Results of the newest accuracy run over the warehouse';
COMMENT ON COLUMN accuracy_latest.run_id IS 'The run (accuracy_runs.run_id)';
COMMENT ON COLUMN accuracy_latest.subject IS 'forecast (the site forecast as served), model (one model''s own output), quantiles (the quantile models of a site as one set) or pairs (a scored CSV)';
COMMENT ON COLUMN accuracy_latest.model IS 'Model name for subject model; empty for the other subjects';
COMMENT ON COLUMN accuracy_latest.group_name IS 'total, lead, hour, weekday, month, date, site or model';
COMMENT ON COLUMN accuracy_latest.group_key IS 'The group''s value: all, 0-6h, 13 (hour in the run''s time zone), Mon, Jan, 2026-01-31, a site id, a model name';
COMMENT ON COLUMN accuracy_latest.key_order IS 'Sort order of the keys within a group (hours, weekdays, months and lead buckets in their natural order)';
COMMENT ON COLUMN accuracy_latest.metric IS 'n, dropped*, mape_skipped, mae, mbe, rmse, mape, nmae, nmbe, nrmse, skill, rmse_ref, r, r2, crmse, red, ksi, over, cpi, actual_<mean|min|max|median|std>, forecast_<mean|min|max|median|std>, per quantile level <pinball|qss|below|bs|rel|res|unc>_q<percent>, crps, crps_pinball, crps_ref, crpss, coverage, coverage_nominal, per event <tp|fp|tn|fn|pod|far|pofd|csi|ebias|ea>_<event name>';
COMMENT ON COLUMN accuracy_latest.value IS 'The value: kW for mae, mbe, rmse, rmse_ref, crmse, ksi, over, cpi, pinball, crps; percent for mape, nmae, nmbe, nrmse, coverage; NaN and +-Infinity as DuckDB doubles';

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
COMMENT ON VIEW job_last_runs IS 'The newest run of each job with its outcome, failure count and last fully successful run';
COMMENT ON COLUMN job_last_runs.job IS 'Job name';
COMMENT ON COLUMN job_last_runs.run_id IS 'The newest run of the job';
COMMENT ON COLUMN job_last_runs.trigger IS 'manual, schedule, catch-up or retry';
COMMENT ON COLUMN job_last_runs.scheduled_for IS 'The schedule slot the run stands for; NULL for manual runs';
COMMENT ON COLUMN job_last_runs.attempt IS 'Attempt number for that slot, from 1';
COMMENT ON COLUMN job_last_runs.started_at IS 'Start of the run';
COMMENT ON COLUMN job_last_runs.ended_at IS 'End of the run; NULL while running';
COMMENT ON COLUMN job_last_runs.status IS 'running, ok, partial, failed, interrupted, crashed or skipped';
COMMENT ON COLUMN job_last_runs.rows_written IS 'Rows written per table, as a JSON object';
COMMENT ON COLUMN job_last_runs.error_summary IS 'What went wrong, in a line';
COMMENT ON COLUMN job_last_runs.host IS 'Host that ran it';
COMMENT ON COLUMN job_last_runs.pid IS 'Process id that ran it';
COMMENT ON COLUMN job_last_runs.failures IS 'Rows of run_failures for this run';
COMMENT ON COLUMN job_last_runs.last_ok_at IS 'Start of the newest run of the job that ended ok';

CREATE OR REPLACE VIEW actuals_quality AS
SELECT a.site_id, a.valid_time, a.value, coalesce(f.flags, 0) AS flags,
  list(q.name ORDER BY q.bit) FILTER (WHERE q.bit IS NOT NULL) AS flag_names
FROM actuals a
LEFT JOIN actual_flags f USING (site_id, valid_time)
LEFT JOIN quality_flags q ON f.flags & q.bit <> 0
GROUP BY a.site_id, a.valid_time, a.value, f.flags;
COMMENT ON VIEW actuals_quality IS 'Every actual with its data-quality flags (0 and an empty list when it passed every check)';
COMMENT ON COLUMN actuals_quality.site_id IS 'The site';
COMMENT ON COLUMN actuals_quality.valid_time IS 'The time the measurement is for';
COMMENT ON COLUMN actuals_quality.value IS 'Measured power in kW (NULL when the service has a gap)';
COMMENT ON COLUMN actuals_quality.flags IS 'Bitmask of quality_flags.bit; 0 when no check failed';
COMMENT ON COLUMN actuals_quality.flag_names IS 'Names of the flags set, in bit order; empty when none';

CREATE OR REPLACE VIEW actual_flag_counts AS
SELECT f.site_id, q.name AS flag, q.bit, count(*) AS flagged, min(f.valid_time) AS first_time, max(f.valid_time) AS last_time
FROM actual_flags f JOIN quality_flags q ON f.flags & q.bit <> 0
GROUP BY f.site_id, q.name, q.bit;
COMMENT ON VIEW actual_flag_counts IS 'Per site and flag: how many actuals carry it, and the first and last valid time flagged';
COMMENT ON COLUMN actual_flag_counts.site_id IS 'The site';
COMMENT ON COLUMN actual_flag_counts.flag IS 'Flag name (quality_flags.name)';
COMMENT ON COLUMN actual_flag_counts.bit IS 'Flag bit (quality_flags.bit)';
COMMENT ON COLUMN actual_flag_counts.flagged IS 'Actuals of the site with this flag';
COMMENT ON COLUMN actual_flag_counts.first_time IS 'Earliest valid time flagged';
COMMENT ON COLUMN actual_flag_counts.last_time IS 'Latest valid time flagged';

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
COMMENT ON MACRO TABLE forecast_as_of IS 'forecast_as_of(instant): per site and valid time, the newest forecast vintage issued (update_time) at or before the instant: what forecast_latest answered then, of the vintages retention kept';
COMMENT ON MACRO TABLE model_output_as_of IS 'model_output_as_of(instant): per site, model and valid time, the newest output vintage (as_of) at or before the instant, of the vintages retention kept';

