-- The runner's additions to the run ledger (runs, run_failures in 001_core.sql): an index for
-- the schedule's slot lookups and one for a run's failures (the view job_last_runs that `efsync
-- status` and operators read is in ../views.sql).

CREATE INDEX runs_job_slot ON runs (job, scheduled_for);

CREATE INDEX run_failures_run ON run_failures (run_id);
