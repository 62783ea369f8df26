package reconcile

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/lib/pq"

	"github.com/tidemark/tidemark/storage/storagetest"
)

// sourceDB opens a fresh PostgreSQL database standing for a migration's source, closed when the
// test ends.
func sourceDB(t *testing.T) (context.Context, *sql.DB) {
	t.Helper()
	db, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return context.Background(), db
}
