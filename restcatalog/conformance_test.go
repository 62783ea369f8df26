package restcatalog_test

import (
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"

	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestConformance runs iceberg-go's own catalog conformance suite against Tidemark over HTTP,
// through iceberg-go's REST client, on both stores.
func TestConformance(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		catalogtest.RunCatalogTests(t, catalogtest.Config{
			NewCatalog:                  func(t *testing.T) icecat.Catalog { return s.client(t) },
			SupportsNamespaceProperties: true,
		})
	})
}
