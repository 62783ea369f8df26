package cleanup_test

import (
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
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

// mustCleanup returns a cleanup service over db, or the test stops.
func mustCleanup(tb testing.TB, db *storage.DB, cat *catalog.Catalog, tbls *tables.Service, opts ...cleanup.Option) *cleanup.Service {
	tb.Helper()
	svc, err := cleanup.New(db, cat, tbls, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return svc
}
