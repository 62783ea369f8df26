-- Add column "modified_at" to table: "proposal_files"
ALTER TABLE `proposal_files` ADD COLUMN `modified_at` datetime NULL;
