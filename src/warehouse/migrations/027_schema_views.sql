-- The analyst views and table macros have one definition, ../views.sql, applied after the
-- numbered migrations whenever its digest differs from the one recorded here (migrate.ts), so an
-- up-to-date file opens without a write.

CREATE TABLE schema_views (
  digest VARCHAR NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL
);
