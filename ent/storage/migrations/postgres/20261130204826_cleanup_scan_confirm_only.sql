-- Modify "cleanup_scans" table
ALTER TABLE "cleanup_scans" ADD COLUMN "confirm_only" boolean NOT NULL DEFAULT false;
