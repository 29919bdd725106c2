-- What each site's reference rows were when a sync last loaded them (src/warehouse/reference.ts):
-- a site whose listing gives the same rows again is left out of the load, which would write
-- nothing for it. One row per site and resource, kept unique by the loader (a delete and an
-- insert in the load's transaction); no key index, as for managed_sites. A later migration that
-- changes what the sites or models tables hold must empty this table, so the next sync compares
-- every site in full.
CREATE TABLE reference_digests (
  site_id VARCHAR NOT NULL,
  resource VARCHAR NOT NULL,
  digest VARCHAR NOT NULL
);
