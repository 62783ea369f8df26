-- Create "tidemark_iceberg_views" table
CREATE TABLE "tidemark_iceberg_views" ("id" uuid NOT NULL, "warehouse" character varying NOT NULL, "view_uuid" character varying NOT NULL, "identifier" character varying NOT NULL DEFAULT '', "rest_namespace" character varying NULL, "rest_key" character varying NULL, "location" character varying NOT NULL, "metadata_dir" character varying NOT NULL, "metadata_location" character varying NOT NULL, "current_version_id" bigint NOT NULL DEFAULT 0, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "gone_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "icebergview_rest_namespace" to table: "tidemark_iceberg_views"
CREATE INDEX "icebergview_rest_namespace" ON "tidemark_iceberg_views" ("rest_namespace");
-- Create index "icebergview_warehouse_metadata_dir" to table: "tidemark_iceberg_views"
CREATE INDEX "icebergview_warehouse_metadata_dir" ON "tidemark_iceberg_views" ("warehouse", "metadata_dir");
-- Create index "tidemark_iceberg_views_rest_key_key" to table: "tidemark_iceberg_views"
CREATE UNIQUE INDEX "tidemark_iceberg_views_rest_key_key" ON "tidemark_iceberg_views" ("rest_key");
-- Create index "tidemark_iceberg_views_view_uuid_key" to table: "tidemark_iceberg_views"
CREATE UNIQUE INDEX "tidemark_iceberg_views_view_uuid_key" ON "tidemark_iceberg_views" ("view_uuid");
