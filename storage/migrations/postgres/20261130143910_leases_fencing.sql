-- Modify "cleanup_leases" table
ALTER TABLE "cleanup_leases" ADD COLUMN "token" bigint NOT NULL DEFAULT 0;
-- Modify "cleanup_scans" table
ALTER TABLE "cleanup_scans" ADD COLUMN "heartbeat_at" timestamptz NULL;
