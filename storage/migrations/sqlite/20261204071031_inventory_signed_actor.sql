-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_tidemark_iceberg_inventory" table
CREATE TABLE `new_tidemark_iceberg_inventory` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `commit_id` uuid NOT NULL, `snapshot_id` integer NOT NULL DEFAULT (0), `path` text NOT NULL, `kind` text NOT NULL, `change` text NOT NULL, `size` integer NOT NULL DEFAULT (0), `records` integer NOT NULL DEFAULT (0), `recorded_at` datetime NOT NULL, `actor` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Copy rows from old table "tidemark_iceberg_inventory" to new temporary table "new_tidemark_iceberg_inventory"
INSERT INTO `new_tidemark_iceberg_inventory` (`id`, `asset_id`, `commit_id`, `snapshot_id`, `path`, `kind`, `change`, `size`, `records`, `recorded_at`) SELECT `id`, `asset_id`, `commit_id`, `snapshot_id`, `path`, `kind`, `change`, `size`, `records`, `recorded_at` FROM `tidemark_iceberg_inventory`;
-- Drop "tidemark_iceberg_inventory" table after copying rows
DROP TABLE `tidemark_iceberg_inventory`;
-- Rename temporary table "new_tidemark_iceberg_inventory" to "tidemark_iceberg_inventory"
ALTER TABLE `new_tidemark_iceberg_inventory` RENAME TO `tidemark_iceberg_inventory`;
-- Create index "iceberginventoryfile_asset_id_snapshot_id" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_asset_id_snapshot_id` ON `tidemark_iceberg_inventory` (`asset_id`, `snapshot_id`);
-- Create index "iceberginventoryfile_commit_id" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_commit_id` ON `tidemark_iceberg_inventory` (`commit_id`);
-- Create index "iceberginventoryfile_asset_id_path" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_asset_id_path` ON `tidemark_iceberg_inventory` (`asset_id`, `path`);
-- Create index "iceberginventoryfile_asset_id_change" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_asset_id_change` ON `tidemark_iceberg_inventory` (`asset_id`, `change`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
