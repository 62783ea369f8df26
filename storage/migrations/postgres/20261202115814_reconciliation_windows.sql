-- Modify "reconciliation_runs" table
ALTER TABLE "reconciliation_runs" ADD COLUMN "summary" text NOT NULL DEFAULT '';
-- Create "reconciliation_windows" table
CREATE TABLE "reconciliation_windows" ("id" uuid NOT NULL, "run_id" uuid NOT NULL, "start" timestamptz NOT NULL, "clean" boolean NOT NULL, "differs" boolean NOT NULL, "body" text NOT NULL, PRIMARY KEY ("id"));
-- Create index "reconciliationwindow_run_id_differs_start" to table: "reconciliation_windows"
CREATE INDEX "reconciliationwindow_run_id_differs_start" ON "reconciliation_windows" ("run_id", "differs", "start");
-- Create index "reconciliationwindow_run_id_start" to table: "reconciliation_windows"
CREATE UNIQUE INDEX "reconciliationwindow_run_id_start" ON "reconciliation_windows" ("run_id", "start");
