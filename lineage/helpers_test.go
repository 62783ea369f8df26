package lineage_test

import (
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
)

// mustCatalog returns a catalog over db, or the test stops.
func mustCatalog(tb testing.TB, db *storage.DB, opts ...catalog.Option) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.New(db, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// mustLineage returns a lineage service over db, or the test stops.
func mustLineage(tb testing.TB, db *storage.DB, cat *catalog.Catalog, opts ...lineage.Option) *lineage.Service {
	tb.Helper()
	lin, err := lineage.New(db, cat, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return lin
}
