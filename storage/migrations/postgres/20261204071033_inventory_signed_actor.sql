-- Modify "tidemark_iceberg_inventory" table
ALTER TABLE "tidemark_iceberg_inventory" ADD COLUMN "actor" character varying NOT NULL DEFAULT '';
