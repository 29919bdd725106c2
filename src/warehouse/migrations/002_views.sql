-- The analyst views were first created here; they are defined in ../views.sql now.

-- sites.synced_at and models.synced_at are bookkeeping: the loader rewrites a row only when the
-- service changed it (so a rerun writes nothing), and stamps it then.
COMMENT ON COLUMN sites.synced_at IS 'When efsync last stored a change to this site (a sync that found nothing new leaves it)';
COMMENT ON COLUMN models.synced_at IS 'When efsync last stored a change to this model (a sync that found nothing new leaves it)';
