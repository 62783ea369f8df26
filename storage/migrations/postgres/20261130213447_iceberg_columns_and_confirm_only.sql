-- Modify "cleanup_scans" table
ALTER TABLE "cleanup_scans" ADD COLUMN "confirm_only" boolean NOT NULL DEFAULT false;
-- Modify "tidemark_iceberg_tables" table
ALTER TABLE "tidemark_iceberg_tables" ADD COLUMN "columns_schema_id" bigint NULL;
