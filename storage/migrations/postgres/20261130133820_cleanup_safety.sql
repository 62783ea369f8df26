-- Modify "cleanup_exemptions" table
ALTER TABLE "cleanup_exemptions" ADD COLUMN "kinds" character varying NOT NULL DEFAULT 'unused_asset';
-- Modify "cleanup_shard_walks" table
ALTER TABLE "cleanup_shard_walks" ADD COLUMN "too_soon" boolean NOT NULL DEFAULT false;
-- Modify "tidemark_iceberg_tables" table
ALTER TABLE "tidemark_iceberg_tables" ADD COLUMN "missing_at" timestamptz NULL;
