-- Capacity pushes that leave the service's timeline equal to the file: an upload merges its points
-- into the service's timeline, so a push that must remove points deletes the service's points
-- first (Delete Site Capacity) and then uploads the file's. The ledger keeps what was deleted.

ALTER TABLE capacity_pushes ADD COLUMN deleted_points JSON;
COMMENT ON COLUMN capacity_pushes.deleted_points IS 'The service''s points deleted before the upload, in kW: a JSON array of {valid_time (YYYY-MM-DDTHH:MMZ), value}; NULL when the upload alone made the service equal the file (nothing to remove)';
COMMENT ON COLUMN capacity_pushes.points IS 'The timeline uploaded, in kW: a JSON array of {valid_time (YYYY-MM-DDTHH:MMZ), value}; after an ok push the service''s timeline equals it';
COMMENT ON COLUMN capacity_pushes.response IS 'The service''s response body to the upload on success, or the error body on failure';
