-- Which end of its interval a valid time labels (service.interval_label): the sync records the
-- configured labels here at every run, and the day-ahead view assigns each value to the UTC day
-- its interval lies in: the day of valid_time for interval-beginning labels (the service's
-- guides), the day of valid_time minus a millisecond for interval-ending ones.

CREATE TABLE interval_labels (
  resource VARCHAR PRIMARY KEY,
  label VARCHAR NOT NULL
);
INSERT INTO interval_labels VALUES ('forecasts', 'beginning'), ('actuals', 'beginning');
