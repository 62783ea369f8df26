package web_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/web"
)

// impactWorld: raw.orders feeds mart.orders through clean_orders, and mart.orders feeds
// reports.revenue through build_report; the two downstream tables have owners and readers.
func impactWorld(t *testing.T, db *storage.DB) (base string, raw uuid.UUID) {
	t.Helper()
	var cfg web.Config
	srv, cat := newUIWith(t, db, func(c *web.Config) { cfg = *c })
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).UTC()
	for i, step := range [][3]string{{"raw.orders", "clean_orders", "mart.orders"}, {"mart.orders", "build_report", "reports.revenue"}} {
		ev := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"producer":"test","run":{"runId":"0190a000-0000-7000-8000-00000000010%d"},
			"job":{"namespace":"spark","name":%q},"inputs":[{"namespace":"w","name":%q}],"outputs":[{"namespace":"w","name":%q}]}`,
			at.Format(time.RFC3339Nano), i, step[1], step[0], step[2])
		if _, err := cfg.Lineage.Ingest(ctx, []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]uuid.UUID{}
	for _, n := range []string{"raw.orders", "mart.orders", "reports.revenue"} {
		ref, ok, err := cat.Lookup(ctx, catalog.SpaceDataset, "w", n)
		if err != nil || !ok {
			t.Fatalf("%s: %v", n, err)
		}
		ids[n] = ref.ID
	}
	for n, o := range map[string]string{"mart.orders": "team-sales", "reports.revenue": "team-finance"} {
		if _, err := cat.SetOwner(ctx, ids[n], catalog.AnyVersion, catalog.OwnerInput{Principal: o, Role: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	var recs []usage.Record
	for i, r := range []struct {
		asset, actor string
		n            int
	}{{"mart.orders", "alice", 3}, {"mart.orders", "bob", 1}, {"reports.revenue", "carol", 7}, {"reports.revenue", "dashboards", 2}} {
		for j := range r.n {
			recs = append(recs, usage.Record{AssetID: ids[r.asset], Kind: "read", Actor: r.actor, At: at, QueryID: fmt.Sprintf("q-%d-%d", i, j), Source: "trino"})
		}
	}
	if _, err := cfg.Usage.Record(ctx, recs); err != nil {
		t.Fatal(err)
	}
	return srv.URL, ids["raw.orders"]
}

// TestImpactPage: the asset page links to its impact page, which lists the owners to notify and
// every asset downstream with depth, owners and top readers, most read first; bad input is a 400
// page.
func TestImpactPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		base, raw := impactWorld(t, db)
		if body := readBody(mustGet(t, http.DefaultClient, base+"/assets/"+raw.String())); !strings.Contains(body, `href="/assets/`+raw.String()+`/impact" id="impact-link">What would a change touch?`) {
			t.Errorf("the asset page does not link its impact page")
		}
		body := readBody(mustGet(t, http.DefaultClient, base+"/assets/"+raw.String()+"/impact"))
		var at []int
		for _, want := range []string{"team-finance</strong>", "team-sales</strong>", ">reports.revenue</a>", "carol (7), dashboards (2)",
			">mart.orders</a>", "alice (3), bob (1)", ">clean_orders</a>", ">build_report</a>"} {
			i := strings.Index(body, want)
			if i < 0 {
				t.Fatalf("impact page lacks %q", want)
			}
			at = append(at, i)
		}
		if !slices.IsSorted(at) {
			t.Errorf("impact page order %v: want owners by reads, then assets most read first", at)
		}
		if r := mustGet(t, http.DefaultClient, base+"/assets/"+raw.String()+"/impact?depth=99"); r.StatusCode != 400 || !strings.Contains(readBody(r), "depth must be a number from 1 to 20") {
			t.Errorf("depth=99: %d", r.StatusCode)
		}
	})
}

// TestImpactBrowser: from the asset page a person follows "What would a change touch?" and reads
// the downstream assets, most read first.
func TestImpactBrowser(t *testing.T) {
	bin := chromium(t)
	base, raw := impactWorld(t, storagetest.Open(t, storagetest.Backends[0]))
	bctx := chromiumContext(t, bin)
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/assets/"+raw.String()), chromedp.Click(chromedp.ID("impact-link")),
		chromedp.WaitVisible(chromedp.ID("impact-assets"))); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#impact-assets tbody tr td:first-child a")].map(a => a.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"reports.revenue", "mart.orders", "clean_orders", "build_report"}; !slices.Equal(rows, want) {
		t.Fatalf("impact rows %v, want %v", rows, want)
	}
	shot(t, bctx, "impact")
}
