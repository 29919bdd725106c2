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
COMMENT ON TABLE writer_recoveries IS 'Each time the writer file would not open and was rebuilt from the published snapshot';
COMMENT ON COLUMN writer_recoveries.recovered_at IS 'When it was rebuilt';
COMMENT ON COLUMN writer_recoveries.moved_to IS 'Where the writer file that would not open was moved (its WAL beside it, with .wal)';
COMMENT ON COLUMN writer_recoveries.reason IS 'Why it would not open: DuckDB''s error';
COMMENT ON COLUMN writer_recoveries.rebuilt_from IS 'published snapshot, or empty warehouse when nothing was published yet';
COMMENT ON COLUMN writer_recoveries.job IS 'The job whose open found it';
COMMENT ON COLUMN writer_recoveries.run_id IS 'The run whose open found it';

-- A run left `running` by a process that died is now marked `crashed` (was `interrupted`).
COMMENT ON COLUMN runs.status IS 'running, ok, partial, failed, interrupted (SIGINT/SIGTERM), crashed (its process died; set by the next run) or skipped';
