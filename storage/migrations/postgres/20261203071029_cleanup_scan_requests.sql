-- Create "cleanup_scan_requests" table
CREATE TABLE "cleanup_scan_requests" ("id" uuid NOT NULL, "asset_id" uuid NOT NULL, "requested_at" timestamptz NOT NULL, "actor" character varying NOT NULL DEFAULT '', "from_inventory" boolean NOT NULL DEFAULT false, "done_at" timestamptz NULL, "scan_id" uuid NULL, "note" text NOT NULL DEFAULT '', PRIMARY KEY ("id"));
-- Create index "cleanupscanrequest_asset_id_requested_at" to table: "cleanup_scan_requests"
CREATE INDEX "cleanupscanrequest_asset_id_requested_at" ON "cleanup_scan_requests" ("asset_id", "requested_at");
-- Create index "cleanupscanrequest_done_at" to table: "cleanup_scan_requests"
CREATE INDEX "cleanupscanrequest_done_at" ON "cleanup_scan_requests" ("done_at");
