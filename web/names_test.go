package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// reusedName builds issue 35's case: db.orders renamed db.sales_orders, then an OpenLineage run
// (a token's) reading db.orders after the rename, which made a new asset. It returns both IDs.
func reusedName(t *testing.T, db *storage.DB) (srvURL string, sales, reused uuid.UUID) {
	t.Helper()
	var lin *lineage.Service
	srv, cat := newUIWith(t, db, func(c *web.Config) { lin = c.Lineage })
	ctx := context.Background()
	res, err := cat.Create(catalog.WithActor(ctx, "token:sync"), catalog.CreateInput{Kind: catalog.KindTable, Namespace: "iceberg://lake", Name: "db.orders"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Rename(ctx, res.Asset.ID, catalog.AnyVersion, "", "db.sales_orders"); err != nil {
		t.Fatal(err)
	}
	ev := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"producer":"test","run":{"runId":"0190a000-0000-7000-8000-0000000000b1"},
		"job":{"namespace":"spark","name":"daily_revenue"},"inputs":[{"namespace":"iceberg://lake","name":"db.orders"}],"outputs":[]}`,
		time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
	ir, err := lin.Ingest(catalog.WithActor(ctx, "token:airflow"), []byte(ev))
	if err != nil || len(ir.Warnings) != 1 {
		t.Fatalf("ingest: %+v %v", ir, err)
	}
	ref, ok, err := cat.Lookup(ctx, catalog.SpaceDataset, "iceberg://lake", "db.orders")
	if err != nil || !ok || ref.Former || ref.ID == res.Asset.ID {
		t.Fatalf("db.orders after the run: %+v %v %v", ref, ok, err)
	}
	return srv.URL, res.Asset.ID, ref.ID
}

// TestNameShareWarning: both assets' pages say that db.orders belonged to db.sales_orders until
// a time and was then taken by another asset, each linking the other.
func TestNameShareWarning(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		base, sales, reused := reusedName(t, db)
		for _, tc := range []struct {
			name string
			id   uuid.UUID
			has  []string
		}{
			{"NewAsset", reused, []string{"was the name of <a href=\"/assets/" + sales.String() + "\">db.sales_orders</a> until 20",
				"created under that name at", "by <code>token:airflow</code>", "have it send db.sales_orders"}},
			{"RenamedAsset", sales, []string{"Its former name <strong>db.orders</strong>", "has belonged to another asset, <a href=\"/assets/" + reused.String() + "\">db.orders</a>",
				"created by <code>token:airflow</code>", "have it send db.sales_orders, then delete that asset"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := readBody(mustGet(t, http.DefaultClient, base+"/assets/"+tc.id.String()))
				for _, want := range tc.has {
					if !strings.Contains(body, want) {
						t.Errorf("page lacks %q", want)
					}
				}
			})
		}
	})
}

// TestNameShareBrowser: the warnings as a person sees them, on both pages.
func TestNameShareBrowser(t *testing.T) {
	bin := chromium(t)
	base, sales, reused := reusedName(t, storagetest.Open(t, storagetest.Backends[0]))
	bctx := chromiumContext(t, bin)
	for _, p := range []struct {
		shot string
		id   uuid.UUID
		want string
	}{{"name-share-new-asset", reused, "was the name of db.sales_orders"}, {"name-share-renamed-asset", sales, "has belonged to another asset, db.orders"}} {
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/assets/"+p.id.String()), chromedp.WaitVisible(chromedp.CSS(".name-share"))); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(".name-share")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, p.want) {
			t.Errorf("%s: warning reads %q, want %q", p.shot, text, p.want)
		}
		shot(t, bctx, p.shot)
	}
}
