-- Modify "tidemark_iceberg_tables" table
ALTER TABLE "tidemark_iceberg_tables" ADD COLUMN "columns_schema_id" bigint NULL;
