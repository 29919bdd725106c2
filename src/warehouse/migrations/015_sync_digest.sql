-- What an actuals read found, so that a rerun which finds the same can skip staging and merging
-- it (docs/sync.md, "Windows and vintages"): written with the sync state, in the transaction of
-- the rows it describes.

ALTER TABLE sync_state ADD COLUMN digest VARCHAR;
COMMENT ON COLUMN sync_state.digest IS 'Actuals: a SHA-256 of the values stored from synced_to minus the lookback on, as the last read found them (the next read starts there); NULL: none, the next read merges in full';
