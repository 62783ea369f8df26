package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

func manyAssets(t *testing.T, cat *catalog.Catalog) {
	t.Helper()
	for i := range 130 {
		ns := "warehouse"
		if i%13 == 0 {
			ns = "s3://Lake"
		}
		if _, err := cat.Create(context.Background(), catalog.CreateInput{Kind: catalog.KindTable, Namespace: ns, Name: fmt.Sprintf("t%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHomePaging: browsing pages through every asset with a total, and the namespace filter
// matches a part of the namespace, in any case.
func TestHomePaging(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		srv, cat := newUI(t, db)
		manyAssets(t, cat)
		first := readBody(mustGet(t, srv.Client(), srv.URL+"/"))
		if !strings.Contains(first, "1–100 of 130 assets") || !strings.Contains(first, `id="browse-next"`) || strings.Contains(first, ">t100<") {
			t.Fatalf("first page:\n%s", first)
		}
		next := strings.Split(strings.Split(first, `<a href="`)[len(strings.Split(first, `<a href="`))-1], `"`)[0]
		second := readBody(mustGet(t, srv.Client(), srv.URL+strings.ReplaceAll(next, "&amp;", "&")))
		if !strings.Contains(second, "101–130 of 130 assets") || !strings.Contains(second, ">t129<") || strings.Contains(second, ">t099<") || strings.Contains(second, `id="browse-next"`) {
			t.Fatalf("second page (%s):\n%s", next, second)
		}
		for q, want := range map[string]string{"?ns=ware": "1–100 of 120 assets", "?ns=lake": "1–10 of 10 assets", "?ns=nowhere": "No asset matches", "?ns=s3%3A%2F%2FLake&kind=table": "of 10 assets"} {
			if body := readBody(mustGet(t, srv.Client(), srv.URL+"/"+q)); !strings.Contains(body, want) {
				t.Errorf("GET /%s lacks %q", q, want)
			}
		}
	})
}

// TestHomePagingBrowser: in a real browser, the next link continues the list and the count follows.
func TestHomePagingBrowser(t *testing.T) {
	bin := chromium(t)
	db := storagetest.Open(t, storagetest.Backends[0])
	srv, cat := newUI(t, db)
	manyAssets(t, cat)
	bctx := chromiumContext(t, bin)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("browse"))); err != nil {
		t.Fatal(err)
	}
	shot(t, bctx, "home-paging")
	if _, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("browse-next")))); err != nil {
		t.Fatal(err)
	}
	count, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("browse-count")))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#browse tbody tr").length`))
	if err != nil || count != "101–130 of 130 assets" || rows != 30 {
		t.Fatalf("second page: %q, %d rows, %v", count, rows, err)
	}
}
