-- vintage_reads without its primary key: a first sync of a year defers ~44,000 output vintages a
-- site, and the key's index (DuckDB's ART, ~90 bytes a key) held ~4 MB a site in the buffer pool
-- until each checkpoint, and made each batch's inserts 2.3x slower. A key is still never
-- duplicated, by the code that writes it (src/warehouse/vintage-reads.ts, src/sync/vintages.ts):
-- a deferred key is inserted only where no row holds it (an anti join against the batch's staged
-- keys), and a failed read updates the row of its key or inserts one (MERGE INTO). Rebuilt rather
-- than altered: DuckDB drops no primary key.

CREATE TABLE vintage_reads_032 (
  site_id VARCHAR NOT NULL,
  resource VARCHAR NOT NULL,
  model_id VARCHAR NOT NULL,
  issue TIMESTAMPTZ NOT NULL,
  status VARCHAR NOT NULL,
  attempts INTEGER NOT NULL,
  reason VARCHAR NOT NULL,
  first_failed_at TIMESTAMPTZ NOT NULL,
  last_failed_at TIMESTAMPTZ NOT NULL,
  run_id VARCHAR NOT NULL
);
INSERT INTO vintage_reads_032 SELECT * FROM vintage_reads ORDER BY site_id, resource, issue;
DROP TABLE vintage_reads;
ALTER TABLE vintage_reads_032 RENAME TO vintage_reads;
