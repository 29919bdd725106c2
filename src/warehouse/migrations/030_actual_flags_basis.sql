-- What each site's data-quality flags were last computed over in full (src/warehouse/flags.ts,
-- reflagActuals): the rules (a digest of the statement that computes them, thresholds included),
-- the site's basis (its type, place, nameplate, capacity timeline and outage windows) and the
-- first valid time recomputed. The accuracy step recomputes a site's flags over its window only
-- when one of these changed or its window starts earlier; new actuals are flagged as they load.

CREATE TABLE actual_flags_basis (
  site_id VARCHAR NOT NULL,
  rules VARCHAR NOT NULL,
  basis VARCHAR NOT NULL,
  flagged_from TIMESTAMPTZ,
  flagged_at TIMESTAMPTZ NOT NULL
);
