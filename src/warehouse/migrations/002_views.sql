-- Views analysts need first. UTC days are computed from epoch milliseconds, never with
-- date_trunc on a TIMESTAMPTZ: that truncates in the session's TimeZone, which differs between
-- analysts' machines, and these views must answer the same everywhere.

-- sites.synced_at and models.synced_at are bookkeeping: the loader rewrites a row only when the
-- service changed it (so a rerun writes nothing), and stamps it then.
COMMENT ON COLUMN sites.synced_at IS 'When efsync last stored a change to this site (a sync that found nothing new leaves it)';
COMMENT ON COLUMN models.synced_at IS 'When efsync last stored a change to this model (a sync that found nothing new leaves it)';

CREATE VIEW forecast_latest AS
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

CREATE VIEW forecast_vs_actual AS
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

CREATE VIEW forecast_day_ahead AS
SELECT site_id, valid_time, update_time, valid_time - update_time AS lead_time,
       model_name, model_version, forecast, capacity
FROM forecasts
WHERE epoch_ms(update_time) // 86400000 = epoch_ms(valid_time) // 86400000 - 1
QUALIFY row_number() OVER (PARTITION BY site_id, valid_time ORDER BY update_time DESC, model_name, model_version DESC) = 1;
COMMENT ON VIEW forecast_day_ahead IS 'Per site and valid time, the last vintage issued on the UTC day before valid_time''s UTC day';
COMMENT ON COLUMN forecast_day_ahead.site_id IS 'The site';
COMMENT ON COLUMN forecast_day_ahead.valid_time IS 'The time the value is for';
COMMENT ON COLUMN forecast_day_ahead.update_time IS 'Issue time: the latest on the UTC day before valid_time''s';
COMMENT ON COLUMN forecast_day_ahead.lead_time IS 'valid_time - update_time';
COMMENT ON COLUMN forecast_day_ahead.model_name IS 'The model that served the value';
COMMENT ON COLUMN forecast_day_ahead.model_version IS 'Version of that model';
COMMENT ON COLUMN forecast_day_ahead.forecast IS 'Forecast power in kW';
COMMENT ON COLUMN forecast_day_ahead.capacity IS 'Available capacity in kW at valid_time, as the service applied it';

CREATE VIEW model_output_vs_actual AS
SELECT o.model_id, o.site_id, o.model_name, o.model_version, m.quantile, o.as_of, o.valid_time,
       o.valid_time - o.as_of AS lead_time, o.forecast, a.value AS actual,
       o.forecast - a.value AS error, o.capacity
FROM model_outputs o
JOIN actuals a USING (site_id, valid_time)
LEFT JOIN models m USING (model_id);
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

CREATE VIEW site_freshness AS
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
