-- Modify "proposal_files" table
ALTER TABLE "proposal_files" ADD COLUMN "modified_at" timestamptz NULL;
