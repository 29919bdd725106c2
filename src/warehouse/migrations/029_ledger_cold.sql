-- The accuracy ledger's closed days go to the cold store as the series' do (docs/warehouse.md,
-- "Hot and cold"), partitioned by the UTC day of valid_time: a quantile set takes its pair's
-- valid time, so that it moves, and is thinned, with its pair. A quantile whose pair is gone was
-- read by nothing. Rebuilt rather than altered: DuckDB refuses SET NOT NULL after an UPDATE in
-- the same transaction.

CREATE TABLE accuracy_pair_quantiles_029 (
  pid BIGINT NOT NULL,
  level DOUBLE NOT NULL,
  q DOUBLE,
  valid_time TIMESTAMPTZ NOT NULL
);
INSERT INTO accuracy_pair_quantiles_029
  SELECT q.pid, q.level, q.q, p.valid_time FROM accuracy_pair_quantiles q JOIN accuracy_pairs p USING (pid);
DROP TABLE accuracy_pair_quantiles;
ALTER TABLE accuracy_pair_quantiles_029 RENAME TO accuracy_pair_quantiles;

-- A move records its files pending, deletes the hot rows a slice of sites at a time, then makes
-- them current (src/warehouse/cold.ts, moveChunk); a writer that opens completes a pending one.
-- (DuckDB adds no column with a constraint: false for every row, never null, as the code writes it)
ALTER TABLE cold_files ADD COLUMN pending BOOLEAN DEFAULT false;
