-- The analyst views and table macros have one definition, ../views.sql, applied after the
-- numbered migrations whenever its digest differs from the one recorded here (migrate.ts), so an
-- up-to-date file opens without a write.

CREATE TABLE schema_views (
  digest VARCHAR NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE schema_views IS 'The views definition (views.sql) applied to this warehouse file: one row';
COMMENT ON COLUMN schema_views.digest IS 'SHA-256 of views.sql as applied, hex';
COMMENT ON COLUMN schema_views.applied_at IS 'When it was applied to this file';
