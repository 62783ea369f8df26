package tables_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func newService(t *testing.T, db *storage.DB, c *clock, opts ...tables.Option) (*tables.Service, *catalog.Catalog) {
	t.Helper()
	cat := mustCatalog(t, db, catalog.WithClock(c.Now))
	svc, err := tables.New(db, cat, append([]tables.Option{tables.WithClock(c.Now), tables.WithWarehouseRoots(os.TempDir())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return svc, cat
}

// listed pages through the service's file listing of a snapshot.
func listed(t *testing.T, svc *tables.Service, id uuid.UUID, snap int64, pageSize int) map[string][3]int64 {
	t.Helper()
	out := map[string][3]int64{}
	cursor := ""
	for {
		p, err := svc.Files(context.Background(), id, &snap, cursor, pageSize)
		if err != nil {
			t.Fatalf("files of snapshot %d: %v", snap, err)
		}
		for _, f := range p.Files {
			if _, dup := out[f.Path]; dup {
				t.Fatalf("file %s listed twice", f.Path)
			}
			out[f.Path] = [3]int64{f.Size, f.Records, map[string]int64{"data": 0, "position_deletes": 1, "equality_deletes": 2}[f.Content]}
		}
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
}

// mustCatalog returns a catalog over db, or the test stops.
func mustCatalog(tb testing.TB, db *storage.DB, opts ...catalog.Option) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.New(db, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}
