-- Add column "columns_schema_id" to table: "tidemark_iceberg_tables"
ALTER TABLE `tidemark_iceberg_tables` ADD COLUMN `columns_schema_id` integer NULL;
