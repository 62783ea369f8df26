package web_test

import (
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

// mustReconcile returns a reconcile service over db, or the test stops.
func mustReconcile(tb testing.TB, db *storage.DB, cat *catalog.Catalog, tbls *tables.Service, use *usage.Service, opts ...reconcile.Option) *reconcile.Service {
	tb.Helper()
	svc, err := reconcile.New(db, cat, tbls, use, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return svc
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
