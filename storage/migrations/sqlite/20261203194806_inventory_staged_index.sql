-- Create index "iceberginventoryfile_asset_id_change" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_asset_id_change` ON `tidemark_iceberg_inventory` (`asset_id`, `change`);
