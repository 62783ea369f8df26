package web_test

import (
	"testing"

	"github.com/tidemark/tidemark/catalog"
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
