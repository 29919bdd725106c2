-- The days whose statistics a score has still to compute (src/accuracy/compute/stats-store.ts):
-- a score lists them, with the histograms they changed, in one transaction, and takes each day
-- off in the transaction that stores its statistics, so that a run stopped part way (its timeout,
-- a kill) leaves the next run those days alone to compute. `count_bins`: the day's pairs are not
-- in the histograms yet (a full computation adds them a run of days at a time). The statistics'
-- state (accuracy_stats_state) is written with the list; without it, every day is computed anew.
CREATE TABLE accuracy_stats_pending (
  chunk BIGINT NOT NULL,
  count_bins BOOLEAN NOT NULL
);
