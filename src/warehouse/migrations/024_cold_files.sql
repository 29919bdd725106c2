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
