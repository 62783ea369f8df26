-- Create "iceberg_manifests" table
CREATE TABLE "iceberg_manifests" ("id" uuid NOT NULL, "path" character varying NOT NULL, "entry_count" bigint NOT NULL, "entries" bytea NOT NULL, "read_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "iceberg_manifests_path_key" to table: "iceberg_manifests"
CREATE UNIQUE INDEX "iceberg_manifests_path_key" ON "iceberg_manifests" ("path");
-- Create "iceberg_manifest_lists" table
CREATE TABLE "iceberg_manifest_lists" ("id" uuid NOT NULL, "path" character varying NOT NULL, "manifests" bytea NOT NULL, "read_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "iceberg_manifest_lists_path_key" to table: "iceberg_manifest_lists"
CREATE UNIQUE INDEX "iceberg_manifest_lists_path_key" ON "iceberg_manifest_lists" ("path");
-- Create "tidemark_iceberg_tables" table
CREATE TABLE "tidemark_iceberg_tables" ("id" uuid NOT NULL, "connection" character varying NOT NULL DEFAULT '', "identifier" character varying NOT NULL DEFAULT '', "table_uuid" character varying NOT NULL, "location" character varying NOT NULL, "metadata_location" character varying NOT NULL, "format_version" bigint NOT NULL DEFAULT 0, "current_snapshot_id" bigint NULL, "last_updated_at" timestamptz NULL, "refreshed_at" timestamptz NULL, "inspection" text NOT NULL DEFAULT '', "health" text NOT NULL DEFAULT '', "error" text NOT NULL DEFAULT '', "error_at" timestamptz NULL, "gone_at" timestamptz NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "icebergtable_connection_identifier" to table: "tidemark_iceberg_tables"
CREATE INDEX "icebergtable_connection_identifier" ON "tidemark_iceberg_tables" ("connection", "identifier");
-- Create index "tidemark_iceberg_tables_table_uuid_key" to table: "tidemark_iceberg_tables"
CREATE UNIQUE INDEX "tidemark_iceberg_tables_table_uuid_key" ON "tidemark_iceberg_tables" ("table_uuid");
-- Create "table_syncs" table
CREATE TABLE "table_syncs" ("id" uuid NOT NULL, "started_at" timestamptz NOT NULL, "finished_at" timestamptz NOT NULL, "report" text NOT NULL, PRIMARY KEY ("id"));
