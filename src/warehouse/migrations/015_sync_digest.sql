-- What an actuals read found, so that a rerun which finds the same can skip staging and merging
-- it (docs/sync.md, "Windows and vintages"): written with the sync state, in the transaction of
-- the rows it describes.

ALTER TABLE sync_state ADD COLUMN digest VARCHAR;
