-- Modify "dataset_migrations" table
ALTER TABLE "dataset_migrations" ADD COLUMN "archive" text NOT NULL DEFAULT '';
-- Modify "reconciliation_runs" table
ALTER TABLE "reconciliation_runs" ADD COLUMN "against" character varying NOT NULL DEFAULT 'live';
-- Create "migration_events" table
CREATE TABLE "migration_events" ("id" uuid NOT NULL, "migration_id" uuid NOT NULL, "kind" character varying NOT NULL, "at" timestamptz NOT NULL, "note" character varying NOT NULL DEFAULT '', "recorded_by" character varying NOT NULL DEFAULT '', "created_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "migrationevent_migration_id_at" to table: "migration_events"
CREATE INDEX "migrationevent_migration_id_at" ON "migration_events" ("migration_id", "at");
