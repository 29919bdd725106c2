-- Which end of its interval a valid time labels (service.interval_label): the sync records the
-- configured labels here at every run, and the day-ahead view assigns each value to the UTC day
-- its interval lies in: the day of valid_time for interval-beginning labels (the service's
-- guides), the day of valid_time minus a millisecond for interval-ending ones.

CREATE TABLE interval_labels (
  resource VARCHAR PRIMARY KEY,
  label VARCHAR NOT NULL
);
COMMENT ON TABLE interval_labels IS 'The interval label of each series as the last sync was configured (service.interval_label)';
COMMENT ON COLUMN interval_labels.resource IS 'forecasts or actuals';
COMMENT ON COLUMN interval_labels.label IS 'beginning: the value at t is for [t, t + step); ending: for (t - step, t]';
INSERT INTO interval_labels VALUES ('forecasts', 'beginning'), ('actuals', 'beginning');

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
