-- The runner's additions to the run ledger (runs, run_failures in 001_core.sql): an index for
-- the schedule's slot lookups and the views that `efsync status` and operators read.

CREATE INDEX runs_job_slot ON runs (job, scheduled_for);
COMMENT ON INDEX runs_job_slot IS 'Finds the runs of a job for a schedule slot: a slot already run is never run again';

CREATE INDEX run_failures_run ON run_failures (run_id);
COMMENT ON INDEX run_failures_run IS 'Finds the failures of a run';

CREATE VIEW job_last_runs AS
WITH ranked AS (
  SELECT r.*, row_number() OVER (PARTITION BY r.job ORDER BY r.started_at DESC, r.run_id DESC) AS recency
  FROM runs r
),
last_ok AS (
  SELECT job, max(started_at) AS last_ok_at FROM runs WHERE status = 'ok' GROUP BY job
),
failure_counts AS (
  SELECT run_id, count(*) AS failures FROM run_failures GROUP BY run_id
)
SELECT ranked.job, ranked.run_id, ranked.trigger, ranked.scheduled_for, ranked.attempt,
  ranked.started_at, ranked.ended_at, ranked.status, ranked.rows_written, ranked.error_summary,
  ranked.host, ranked.pid, coalesce(failure_counts.failures, 0) AS failures, last_ok.last_ok_at
FROM ranked
LEFT JOIN failure_counts USING (run_id)
LEFT JOIN last_ok USING (job)
WHERE ranked.recency = 1;
COMMENT ON VIEW job_last_runs IS 'The newest run of each job with its outcome, failure count and last fully successful run';
COMMENT ON COLUMN job_last_runs.job IS 'Job name';
COMMENT ON COLUMN job_last_runs.run_id IS 'The newest run of the job';
COMMENT ON COLUMN job_last_runs.trigger IS 'manual, schedule, catch-up or retry';
COMMENT ON COLUMN job_last_runs.scheduled_for IS 'The schedule slot the run stands for; NULL for manual runs';
COMMENT ON COLUMN job_last_runs.attempt IS 'Attempt number for that slot, from 1';
COMMENT ON COLUMN job_last_runs.started_at IS 'Start of the run';
COMMENT ON COLUMN job_last_runs.ended_at IS 'End of the run; NULL while running';
COMMENT ON COLUMN job_last_runs.status IS 'running, ok, partial, failed, interrupted or skipped';
COMMENT ON COLUMN job_last_runs.rows_written IS 'Rows written per table, as a JSON object';
COMMENT ON COLUMN job_last_runs.error_summary IS 'What went wrong, in a line';
COMMENT ON COLUMN job_last_runs.host IS 'Host that ran it';
COMMENT ON COLUMN job_last_runs.pid IS 'Process id that ran it';
COMMENT ON COLUMN job_last_runs.failures IS 'Rows of run_failures for this run';
COMMENT ON COLUMN job_last_runs.last_ok_at IS 'Start of the newest run of the job that ended ok';
