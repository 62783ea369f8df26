-- Create index "assetname_asset_id" to table: "asset_names"
CREATE INDEX `assetname_asset_id` ON `asset_names` (`asset_id`);
