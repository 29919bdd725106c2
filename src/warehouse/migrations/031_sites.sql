-- Sites as code (docs/sites.md): the sites efsync manages from the sites folder, every change an
-- apply made or tried, field by field, and the newest drift check of each site. No DEFAULT now():
-- see docs/warehouse.md, "After a crash".

-- A site is managed once an apply saw its file; deleting it ever after needs --allow-delete, and
-- never happens while the last file seen said protect: true. One row per site_id (src/sites/
-- ledger.ts replaces a site's row); no key index, whose upserts in one transaction cost more
-- memory than a thousand rows deserve.
CREATE TABLE managed_sites (
  site_id VARCHAR NOT NULL,
  name VARCHAR NOT NULL,
  file VARCHAR NOT NULL,
  protect BOOLEAN NOT NULL,
  content_hash VARCHAR NOT NULL,
  managed_since TIMESTAMPTZ NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL,
  run_id VARCHAR
);

CREATE TABLE site_changes (
  run_id VARCHAR,
  plan_fingerprint VARCHAR NOT NULL,
  site_id VARCHAR,
  site_name VARCHAR NOT NULL,
  file VARCHAR,
  action VARCHAR NOT NULL CHECK (action IN ('create', 'update', 'serving', 'delete')),
  field VARCHAR NOT NULL,
  before JSON,
  after JSON,
  status VARCHAR NOT NULL CHECK (status IN ('ok', 'failed')),
  error VARCHAR,
  git_commit VARCHAR,
  applied_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX site_changes_site ON site_changes (site_name, applied_at);

-- One row per site the newest sites-drift run looked at: in_sync, drifted (fields differ),
-- absent (a file whose site does not exist), orphaned (managed, its file removed) or error.
CREATE TABLE site_drift (
  site_name VARCHAR PRIMARY KEY,
  site_id VARCHAR,
  file VARCHAR,
  state VARCHAR NOT NULL CHECK (state IN ('in_sync', 'drifted', 'absent', 'orphaned', 'error')),
  fields INTEGER NOT NULL,
  summary VARCHAR NOT NULL,
  checked_at TIMESTAMPTZ NOT NULL,
  run_id VARCHAR
);
