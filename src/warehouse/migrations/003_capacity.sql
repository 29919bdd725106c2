-- The capacity push ledger: every push of a site's capacity timeline, successful or not, with
-- the file and content it came from, so that plan can diff against what was pushed last.

CREATE TABLE capacity_pushes (
  push_id VARCHAR PRIMARY KEY,
  run_id VARCHAR,
  site_id VARCHAR NOT NULL,
  file VARCHAR NOT NULL,
  content_hash VARCHAR NOT NULL,
  git_commit VARCHAR,
  points JSON NOT NULL,
  response JSON,
  status VARCHAR NOT NULL CHECK (status IN ('ok', 'failed')),
  error VARCHAR,
  pushed_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE capacity_pushes IS 'Ledger of capacity timelines pushed to the service: one row per site and push attempt';
COMMENT ON COLUMN capacity_pushes.push_id IS 'Unique id of the push';
COMMENT ON COLUMN capacity_pushes.run_id IS 'The run that pushed (runs.run_id); NULL when pushed outside the run ledger';
COMMENT ON COLUMN capacity_pushes.site_id IS 'The service''s site id the timeline was pushed to';
COMMENT ON COLUMN capacity_pushes.file IS 'The capacity file the timeline came from, as given (folder and file name)';
COMMENT ON COLUMN capacity_pushes.content_hash IS 'sha256 (hex) of the file''s bytes at the time of the push';
COMMENT ON COLUMN capacity_pushes.git_commit IS 'HEAD commit of the git repository holding the capacity folder; NULL when it is not in one';
COMMENT ON COLUMN capacity_pushes.points IS 'The timeline sent, in kW: a JSON array of {valid_time (YYYY-MM-DDTHH:MMZ), value}';
COMMENT ON COLUMN capacity_pushes.response IS 'The service''s response body on success, or the error body on failure';
COMMENT ON COLUMN capacity_pushes.status IS 'ok when the service accepted the timeline, failed otherwise';
COMMENT ON COLUMN capacity_pushes.error IS 'Why the push failed, as the error said it (never holding the API key); NULL when ok';
COMMENT ON COLUMN capacity_pushes.pushed_at IS 'When the push was sent';
CREATE INDEX capacity_pushes_site ON capacity_pushes (site_id, pushed_at);
