-- The analyst views were first created here; they are defined in ../views.sql now.

-- sites.synced_at and models.synced_at are bookkeeping: the loader rewrites a row only when the
-- service changed it (so a rerun writes nothing), and stamps it then.
