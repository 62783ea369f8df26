-- Modify "tidemark_iceberg_tables" table
ALTER TABLE "tidemark_iceberg_tables" ADD COLUMN "warehouse" character varying NOT NULL DEFAULT '', ADD COLUMN "rest_namespace" character varying NULL, ADD COLUMN "rest_key" character varying NULL;
-- Create index "icebergtable_rest_namespace" to table: "tidemark_iceberg_tables"
CREATE INDEX "icebergtable_rest_namespace" ON "tidemark_iceberg_tables" ("rest_namespace");
-- Create index "tidemark_iceberg_tables_rest_key_key" to table: "tidemark_iceberg_tables"
CREATE UNIQUE INDEX "tidemark_iceberg_tables_rest_key_key" ON "tidemark_iceberg_tables" ("rest_key");
-- Create "tidemark_iceberg_commits" table
CREATE TABLE "tidemark_iceberg_commits" ("id" uuid NOT NULL, "asset_id" uuid NOT NULL, "warehouse" character varying NOT NULL, "kind" character varying NOT NULL, "state" character varying NOT NULL, "base_location" character varying NOT NULL DEFAULT '', "new_location" character varying NOT NULL DEFAULT '', "snapshot_id" bigint NULL, "reason" text NOT NULL DEFAULT '', "idempotency_key" character varying NOT NULL DEFAULT '', "transaction_id" uuid NULL, "actor" character varying NOT NULL DEFAULT '', "added_files" bigint NOT NULL DEFAULT 0, "removed_files" bigint NOT NULL DEFAULT 0, "added_bytes" bigint NOT NULL DEFAULT 0, "started_at" timestamptz NOT NULL, "finished_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "icebergcommit_asset_id_started_at" to table: "tidemark_iceberg_commits"
CREATE INDEX "icebergcommit_asset_id_started_at" ON "tidemark_iceberg_commits" ("asset_id", "started_at");
-- Create index "icebergcommit_state_started_at" to table: "tidemark_iceberg_commits"
CREATE INDEX "icebergcommit_state_started_at" ON "tidemark_iceberg_commits" ("state", "started_at");
-- Create index "icebergcommit_warehouse_idempotency_key" to table: "tidemark_iceberg_commits"
CREATE INDEX "icebergcommit_warehouse_idempotency_key" ON "tidemark_iceberg_commits" ("warehouse", "idempotency_key");
-- Create "tidemark_iceberg_inventory" table
CREATE TABLE "tidemark_iceberg_inventory" ("id" uuid NOT NULL, "asset_id" uuid NOT NULL, "commit_id" uuid NOT NULL, "snapshot_id" bigint NOT NULL DEFAULT 0, "path" text NOT NULL, "kind" character varying NOT NULL, "change" character varying NOT NULL, "size" bigint NOT NULL DEFAULT 0, "records" bigint NOT NULL DEFAULT 0, "recorded_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "iceberginventoryfile_asset_id_snapshot_id" to table: "tidemark_iceberg_inventory"
CREATE INDEX "iceberginventoryfile_asset_id_snapshot_id" ON "tidemark_iceberg_inventory" ("asset_id", "snapshot_id");
-- Create index "iceberginventoryfile_commit_id" to table: "tidemark_iceberg_inventory"
CREATE INDEX "iceberginventoryfile_commit_id" ON "tidemark_iceberg_inventory" ("commit_id");
-- Create "tidemark_iceberg_namespaces" table
CREATE TABLE "tidemark_iceberg_namespaces" ("id" uuid NOT NULL, "warehouse" character varying NOT NULL, "key" character varying NOT NULL, "levels" text NOT NULL, "depth" bigint NOT NULL, "properties" text NOT NULL DEFAULT '{}', "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "icebergnamespace_warehouse_depth" to table: "tidemark_iceberg_namespaces"
CREATE INDEX "icebergnamespace_warehouse_depth" ON "tidemark_iceberg_namespaces" ("warehouse", "depth");
-- Create index "tidemark_iceberg_namespaces_key_key" to table: "tidemark_iceberg_namespaces"
CREATE UNIQUE INDEX "tidemark_iceberg_namespaces_key_key" ON "tidemark_iceberg_namespaces" ("key");
