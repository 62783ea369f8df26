package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// TestAssetPageHoldsTheLineageBudget: the asset page's graph walk reserves from the same lineage
// budget as the API, per client. While the client's share is held elsewhere the page still
// answers, without the graph and saying why; once the share is free the graph is drawn, and the
// page gives back what it held once written.
func TestAssetPageHoldsTheLineageBudget(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var lin *lineage.Service
		srv, _ := newUIWith(t, db, func(c *web.Config) {
			var err error
			if lin, err = lineage.New(db, c.Catalog, lineage.WithMaxNodes(200), lineage.WithBudget(200, 200), lineage.WithBudgetWait(50*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if err := lin.Open(ctx); err != nil {
				t.Fatal(err)
			}
			c.Lineage = lin
		})
		id := fanOut(t, lin, 20)
		other, err := lin.Reserve(ctx, "address 127.0.0.1", 200) // the same client, elsewhere
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(mustGet(t, srv.Client(), srv.URL+"/assets/"+id.String()))
		if !strings.Contains(body, "the lineage graph (the server is drawing many graphs at once: reload the page in a moment)") || strings.Contains(body, "Nodes as a list (43)") {
			t.Errorf("with the budget held elsewhere the page should leave the graph out and say why")
		}
		if got := lin.Budget().Reserved(); got != 200 {
			t.Errorf("reserved %d nodes after a refused page, want the 200 held elsewhere", got)
		}
		other.Release()
		body = readBody(mustGet(t, srv.Client(), srv.URL+"/assets/"+id.String()))
		if !strings.Contains(body, "Nodes as a list (43)") || strings.Contains(body, "drawing many graphs") {
			t.Errorf("with the budget free the page should draw the graph")
		}
		if got := lin.Budget().Reserved(); got != 0 {
			t.Errorf("reserved %d nodes after the page was written, want 0", got)
		}
	})
}
