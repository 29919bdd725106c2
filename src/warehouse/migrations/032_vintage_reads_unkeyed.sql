-- vintage_reads without its primary key (#54): a first sync of months records every vintage it
-- defers, and the key's index (DuckDB's ART, ~90 bytes a key) stayed in the buffer pool until a
-- checkpoint wrote it out (352,000 keys inserted without one ran out of the sync's 64 MB) and
-- made the inserts slower. A key is still never duplicated, by the code that writes the table
-- (src/warehouse/vintage-reads.ts, src/sync/vintages.ts): a deferred key is inserted only where no
-- row holds it (an anti join against the batch's staged keys, each key once), and a failed read
-- updates its key's row or inserts one (MERGE INTO). Rebuilt rather than altered: DuckDB drops
-- no primary key.

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
