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
