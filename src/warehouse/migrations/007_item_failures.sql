-- One bad item fails that item alone: a malformed site of List Sites, a malformed model, one
-- malformed model-output vintage is recorded with where it is and what in it was wrong, and
-- a run counts the documented variants it had to fill in (docs/interface-assumptions.md).

ALTER TABLE run_failures ADD COLUMN item VARCHAR;
ALTER TABLE run_failures ADD COLUMN field_path VARCHAR;

ALTER TABLE runs ADD COLUMN defaulted JSON;
