-- The cold store (docs/warehouse.md, "Hot and cold"): the closed UTC days of the series tables
-- live in immutable Parquet files under <dir>/<base>.cold/, one per table and day and generation;
-- this table says which exist and which is current. A publish reads it to write the published
-- file's views; a superseded file is kept for warehouse.cold_grace, for readers of older snapshots.
-- No DEFAULT now(): see docs/warehouse.md, "After a crash".

CREATE TABLE cold_files (
  table_name VARCHAR NOT NULL,
  day DATE NOT NULL,
  generation INTEGER NOT NULL,
  file VARCHAR NOT NULL,
  row_count BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  written_at TIMESTAMPTZ NOT NULL,
  superseded_at TIMESTAMPTZ
  -- key: (table_name, day, generation); at most one row per (table_name, day) has superseded_at NULL
);
COMMENT ON TABLE cold_files IS 'Parquet files of the cold store: one per series table, closed UTC day of valid_time, and generation';
COMMENT ON COLUMN cold_files.table_name IS 'The series table whose rows the file holds (forecasts, model_outputs, actuals, ...)';
COMMENT ON COLUMN cold_files.day IS 'The UTC day of valid_time of every row in the file';
COMMENT ON COLUMN cold_files.generation IS 'Counts the rewrites of the day: a changed day gets a new file with the next generation';
COMMENT ON COLUMN cold_files.file IS 'Path of the file, relative to the cold folder (<dir>/<base>.cold/)';
COMMENT ON COLUMN cold_files.row_count IS 'Rows in the file';
COMMENT ON COLUMN cold_files.bytes IS 'Size of the file in bytes';
COMMENT ON COLUMN cold_files.written_at IS 'When the file was written';
COMMENT ON COLUMN cold_files.superseded_at IS 'When a newer generation (or an emptied day) replaced it; NULL while current. Deleted warehouse.cold_grace later';
