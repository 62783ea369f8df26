-- Add column "last_used_at" to table: "api_tokens"
ALTER TABLE `api_tokens` ADD COLUMN `last_used_at` datetime NULL;
