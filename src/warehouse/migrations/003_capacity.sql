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
CREATE INDEX capacity_pushes_site ON capacity_pushes (site_id, pushed_at);
