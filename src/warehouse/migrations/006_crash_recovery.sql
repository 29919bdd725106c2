-- Crash recovery. The writer file that would not open (a WAL DuckDB cannot replay, a torn file) is moved aside
-- and rebuilt from the published snapshot (src/warehouse/writer-file.ts); each time is recorded.

CREATE TABLE writer_recoveries (
  recovered_at TIMESTAMPTZ NOT NULL,
  moved_to VARCHAR NOT NULL,
  reason VARCHAR NOT NULL,
  rebuilt_from VARCHAR NOT NULL,
  job VARCHAR NOT NULL,
  run_id VARCHAR NOT NULL
);

-- A run left `running` by a process that died is now marked `crashed` (was `interrupted`).
