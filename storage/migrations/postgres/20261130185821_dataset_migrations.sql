-- Create "dataset_migrations" table
CREATE TABLE "dataset_migrations" ("id" uuid NOT NULL, "old_asset_id" uuid NOT NULL, "new_asset_id" uuid NOT NULL, "owner" character varying NOT NULL, "spec" text NOT NULL, "state" character varying NOT NULL DEFAULT 'active', "cut_over_at" timestamptz NULL, "version" bigint NOT NULL DEFAULT 1, "run_claimed_until" timestamptz NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "datasetmigration_new_asset_id" to table: "dataset_migrations"
CREATE INDEX "datasetmigration_new_asset_id" ON "dataset_migrations" ("new_asset_id");
-- Create index "datasetmigration_old_asset_id" to table: "dataset_migrations"
CREATE INDEX "datasetmigration_old_asset_id" ON "dataset_migrations" ("old_asset_id");
-- Create "reconciliation_findings" table
CREATE TABLE "reconciliation_findings" ("id" uuid NOT NULL, "migration_id" uuid NOT NULL, "kind" character varying NOT NULL, "side" character varying NOT NULL, "window_start" timestamptz NOT NULL, "owner" character varying NOT NULL, "detail" text NOT NULL, "opened_run_id" uuid NOT NULL, "opened_at" timestamptz NOT NULL, "closed_run_id" uuid NULL, "closed_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "reconciliationfinding_migration_id_closed_at" to table: "reconciliation_findings"
CREATE INDEX "reconciliationfinding_migration_id_closed_at" ON "reconciliation_findings" ("migration_id", "closed_at");
-- Create "reconciliation_runs" table
CREATE TABLE "reconciliation_runs" ("id" uuid NOT NULL, "migration_id" uuid NOT NULL, "started_at" timestamptz NOT NULL, "finished_at" timestamptz NULL, "origin" character varying NOT NULL, "clean" boolean NOT NULL DEFAULT false, "result" text NOT NULL DEFAULT '', "error" text NOT NULL DEFAULT '', PRIMARY KEY ("id"));
-- Create index "reconciliationrun_migration_id_started_at" to table: "reconciliation_runs"
CREATE INDEX "reconciliationrun_migration_id_started_at" ON "reconciliation_runs" ("migration_id", "started_at");
