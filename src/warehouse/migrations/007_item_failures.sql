-- One bad item fails that item alone: a malformed site of List Sites, a malformed model, one
-- malformed model-output vintage is recorded with where it is and what in it was wrong, and
-- a run counts the documented variants it had to fill in (docs/interface-assumptions.md).

ALTER TABLE run_failures ADD COLUMN item VARCHAR;
ALTER TABLE run_failures ADD COLUMN field_path VARCHAR;
COMMENT ON COLUMN run_failures.item IS 'The item that failed alone, e.g. "site [3] 1f0c…", "model 9a2e…", "model 9a2e… as_of 2026-03-01T06:00:00Z"; NULL when a whole resource failed';
COMMENT ON COLUMN run_failures.field_path IS 'Where in the item the answer broke the interface, e.g. latitude, state[0], forecast[12]; NULL when not a malformed answer';

ALTER TABLE runs ADD COLUMN defaulted JSON;
COMMENT ON COLUMN runs.defaulted IS 'Documented variants the run filled in, per resource and field, e.g. {"sites.assets": 2, "forecasts.capacity": 48}: a null or missing field read as the interface allows';
