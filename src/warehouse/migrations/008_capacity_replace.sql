-- Capacity pushes that leave the service's timeline equal to the file: an upload merges its points
-- into the service's timeline, so a push that must remove points deletes the service's points
-- first (Delete Site Capacity) and then uploads the file's. The ledger keeps what was deleted.

ALTER TABLE capacity_pushes ADD COLUMN deleted_points JSON;
