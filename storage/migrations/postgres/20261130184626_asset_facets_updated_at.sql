-- Create index "assetfacet_updated_at" to table: "asset_facets"
CREATE INDEX "assetfacet_updated_at" ON "asset_facets" ("updated_at");
