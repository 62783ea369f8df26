-- Modify "lineage_events" table
ALTER TABLE "lineage_events" ADD COLUMN "principal" character varying NOT NULL DEFAULT '';
-- Modify "usage_events" table
ALTER TABLE "usage_events" ADD COLUMN "version" character varying NOT NULL DEFAULT '';
-- Create "dataset_versions" table
CREATE TABLE "dataset_versions" ("id" uuid NOT NULL, "asset_id" uuid NOT NULL, "version" character varying NOT NULL, "snapshot_id" bigint NULL, "parent_version" character varying NOT NULL DEFAULT '', "sequence_number" bigint NULL, "operation" character varying NOT NULL DEFAULT '', "summary" text NOT NULL DEFAULT '', "principal" character varying NOT NULL DEFAULT '', "committed_at" timestamptz NULL, "source" character varying NOT NULL, "seen_in_table" boolean NOT NULL DEFAULT false, "commit_id" uuid NULL, "run_id" character varying NOT NULL DEFAULT '', "first_seen" timestamptz NOT NULL, "expired_at" timestamptz NULL, "expired_by" character varying NOT NULL DEFAULT '', PRIMARY KEY ("id"));
-- Create index "datasetversion_asset_id_committed_at" to table: "dataset_versions"
CREATE INDEX "datasetversion_asset_id_committed_at" ON "dataset_versions" ("asset_id", "committed_at");
-- Create index "datasetversion_asset_id_version" to table: "dataset_versions"
CREATE UNIQUE INDEX "datasetversion_asset_id_version" ON "dataset_versions" ("asset_id", "version");
-- Create "run_versions" table
CREATE TABLE "run_versions" ("id" uuid NOT NULL, "run_id" character varying NOT NULL, "asset_id" uuid NOT NULL, "role" character varying NOT NULL, "version" character varying NOT NULL DEFAULT '', "kind" character varying NOT NULL, "basis" character varying NOT NULL DEFAULT '', "flagged" boolean NOT NULL DEFAULT false, "conflict" character varying NOT NULL DEFAULT '', "at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "runversion_asset_id_at" to table: "run_versions"
CREATE INDEX "runversion_asset_id_at" ON "run_versions" ("asset_id", "at");
-- Create index "runversion_asset_id_version_role" to table: "run_versions"
CREATE INDEX "runversion_asset_id_version_role" ON "run_versions" ("asset_id", "version", "role");
-- Create index "runversion_run_id_asset_id_role" to table: "run_versions"
CREATE UNIQUE INDEX "runversion_run_id_asset_id_role" ON "run_versions" ("run_id", "asset_id", "role");
-- Create "version_cursors" table
CREATE TABLE "version_cursors" ("id" character varying NOT NULL, "after" uuid NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
