-- Point-in-time queries for backtests (docs/warehouse.md, "Point in time"): what the warehouse
-- knew at an instant. Table macros live in the file's catalog, so the published copy, the DuckDB
-- CLI and Python see them as they see the views. The instant is cast, so a TIMESTAMPTZ or ISO
-- text (read in the session's TimeZone when it has no offset) both work.

CREATE MACRO forecast_as_of(at_time) AS TABLE
SELECT site_id, valid_time, update_time, valid_time - update_time AS lead_time,
       model_name, model_version, forecast, capacity
FROM forecasts
WHERE update_time <= CAST(at_time AS TIMESTAMPTZ)
QUALIFY row_number() OVER (PARTITION BY site_id, valid_time ORDER BY update_time DESC, model_name, model_version DESC) = 1;

CREATE MACRO model_output_as_of(at_time) AS TABLE
SELECT model_id, site_id, model_name, model_version, valid_time, as_of, valid_time - as_of AS lead_time,
       forecast, capacity
FROM model_outputs
WHERE as_of <= CAST(at_time AS TIMESTAMPTZ)
QUALIFY row_number() OVER (PARTITION BY site_id, model_id, valid_time ORDER BY as_of DESC) = 1;
COMMENT ON MACRO TABLE forecast_as_of IS 'forecast_as_of(instant): per site and valid time, the newest forecast vintage issued (update_time) at or before the instant: what forecast_latest answered then, of the vintages retention kept';
COMMENT ON MACRO TABLE model_output_as_of IS 'model_output_as_of(instant): per site, model and valid time, the newest output vintage (as_of) at or before the instant, of the vintages retention kept';
