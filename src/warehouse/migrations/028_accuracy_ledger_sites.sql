-- The accuracy ledger's fingerprint per site (docs/accuracy.md, "Incremental scoring"): a site
-- whose description, capacity timeline, models or quantile levels changed, or that is new to the
-- score, has its pairs aligned anew, the other sites' only where their data changed. Before, one
-- digest over every site made a capacity push for one site align every site's month again.

CREATE TABLE accuracy_ledger_sites (
  site_id VARCHAR NOT NULL,
  digest VARCHAR NOT NULL
);
