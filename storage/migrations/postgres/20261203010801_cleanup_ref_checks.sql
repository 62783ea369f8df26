-- Modify "cleanup_scans" table
ALTER TABLE "cleanup_scans" ADD COLUMN "from_inventory" boolean NOT NULL DEFAULT false;
-- Create index "iceberginventoryfile_asset_id_path" to table: "tidemark_iceberg_inventory"
CREATE INDEX "iceberginventoryfile_asset_id_path" ON "tidemark_iceberg_inventory" ("asset_id", "path");
-- Create "cleanup_ref_checks" table
CREATE TABLE "cleanup_ref_checks" ("id" uuid NOT NULL, "asset_id" uuid NOT NULL, "started_at" timestamptz NOT NULL, "finished_at" timestamptz NULL, "state" character varying NOT NULL, "metadata_location" character varying NOT NULL DEFAULT '', "runs" bigint NOT NULL DEFAULT 1, "heartbeat_at" timestamptz NULL, "report" text NOT NULL DEFAULT '', "error" text NOT NULL DEFAULT '', PRIMARY KEY ("id"));
-- Create index "cleanuprefcheck_asset_id_started_at" to table: "cleanup_ref_checks"
CREATE INDEX "cleanuprefcheck_asset_id_started_at" ON "cleanup_ref_checks" ("asset_id", "started_at");
-- Create "cleanup_ref_check_units" table
CREATE TABLE "cleanup_ref_check_units" ("id" uuid NOT NULL, "check_id" uuid NOT NULL, "unit" text NOT NULL, "files" bigint NOT NULL DEFAULT 0, "unchecked" bigint NOT NULL DEFAULT 0, "missing" text NOT NULL DEFAULT '', "checked_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "cleanuprefcheckunit_check_id" to table: "cleanup_ref_check_units"
CREATE INDEX "cleanuprefcheckunit_check_id" ON "cleanup_ref_check_units" ("check_id");
