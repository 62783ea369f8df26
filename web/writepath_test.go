package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers the "rest" catalog type
	"github.com/apache/iceberg-go/table"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/warehouse"
)

// writePathWorld is a Tidemark serving warehouse "main" with the UI, a table committed to by
// iceberg-go through its REST catalog (two appends, a commit refused with 409, a tag on the
// first snapshot) and a registered table it does not serve.
type writePathWorld struct {
	url                  string
	app                  *app.App
	cat                  icecat.Catalog // iceberg-go's REST client of Tidemark
	served, registered   string         // asset IDs
	first, second, third int64          // the served table's snapshots, oldest first
}

func newWritePathWorld(t *testing.T, db *storage.DB) *writePathWorld {
	t.Helper()
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "warehouse")
	a, err := app.Open(ctx, db, app.Config{Tables: []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: wh}),
		tables.WithWarehouseRoots(os.TempDir())}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.DefaultHandler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tok, _, err := auth.NewStore(db.Client, nil).Create(ctx, "engine", []auth.Scope{auth.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := icecat.Load(ctx, "tidemark", iceberg.Properties{"type": "rest", "uri": srv.URL + "/iceberg", "token": tok, "warehouse": "main"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"shop", "orders"}, tablestest.Schema)
	if err != nil {
		t.Fatal(err)
	}
	lake := tablestest.NewLake(t)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	w := &writePathWorld{url: srv.URL, app: a, cat: cat}
	tbl = lake.Append(tbl, tablestest.Rows(0, 3, start))
	w.first = tbl.CurrentSnapshot().SnapshotID
	stale := tbl
	tbl = lake.Append(tbl, tablestest.Rows(3, 2, start))
	w.second = tbl.CurrentSnapshot().SnapshotID
	// A writer on the old snapshot: Tidemark refuses its commit (409), and iceberg-go says so.
	if _, err := stale.Append(ctx, lake.Record(stale, tablestest.Rows(5, 1, start)), nil); err == nil {
		t.Fatal("a commit on a stale base was accepted")
	}
	if _, _, err := cat.CommitTable(ctx, table.Identifier{"shop", "orders"}, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("v1", w.first, table.TagRef, -1, -1, -1)}); err != nil {
		t.Fatalf("tag: %v", err)
	}
	tbl, err = cat.LoadTable(ctx, table.Identifier{"shop", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	tbl = lake.Append(tbl, tablestest.Rows(6, 4, start))
	w.third = tbl.CurrentSnapshot().SnapshotID
	// The scheduler's round after commits: the served table is inspected.
	if n, err := a.Warehouse.RefreshServed(ctx); err != nil || n != 1 {
		t.Fatalf("inspect the served table: %d, %v", n, err)
	}
	id, _, err := a.Warehouse.ServedPointer(ctx, "main", warehouse.TableIdent{Namespace: []string{"shop"}, Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	w.served = id.String()
	other := lake.Append(lake.Create("db.events", nil), tablestest.Rows(0, 2, start))
	reg, _, err := a.Tables.Register(ctx, tables.RegisterInput{MetadataLocation: other.MetadataLocation()})
	if err != nil {
		t.Fatal(err)
	}
	w.registered = reg.AssetID.String()
	return w
}

func (w *writePathWorld) get(t *testing.T, path string) (int, string) {
	t.Helper()
	r, err := http.Get(w.url + path)
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, readBody(r)
}

// TestWritePathPagesBrowser: after iceberg-go commits through the REST catalog, the commits,
// inventory and snapshot pages of the served table show them in a real browser (committed and
// refused commits with their files; inventory sizes for every kind; the timeline with the tag),
// reached from the asset page; a registered table's timeline is shown while its commits and
// inventory pages say it is not served; an unknown table is the HTML 404 page.
func TestWritePathPagesBrowser(t *testing.T) {
	bin := chromium(t)
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		w := newWritePathWorld(t, db)

		// The inventory records real sizes for metadata files and manifest lists.
		id := uuid.MustParse(w.served)
		files, _, err := w.app.Warehouse.Inventory(ctx, id, warehouse.InventoryFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, f := range files {
			if f.Change == "added" {
				kinds[f.Kind]++
				if f.Size <= 0 {
					t.Errorf("inventory %s %s has size %d", f.Kind, f.Path, f.Size)
				}
			}
		}
		if kinds["metadata"] < 5 || kinds["manifest_list"] != 3 || kinds["manifest"] < 3 || kinds["data"] < 3 {
			t.Fatalf("inventory kinds added: %v", kinds)
		}

		bctx := chromiumContext(t, bin)
		must, text, click := browserOps(t, bctx)
		eval := func(js string) []string {
			t.Helper()
			out, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](js))
			must(err)
			return out
		}
		must(chromedp.Do(bctx, chromedp.Navigate(w.url+"/assets/"+w.served), chromedp.WaitVisible(chromedp.ID("commit-advice"))))
		click("#commits-link")
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("commits"))))
		if h := text("#commit-health"); !strings.Contains(h, "Refused (409)") || !strings.Contains(h, "1 (") {
			t.Fatalf("commit health on the commits page: %q", h)
		}
		rows := eval(`[...document.querySelectorAll("#commits tbody tr")].map(r => r.dataset.state + "|" + r.querySelector(".commit-kind").textContent + "|" + r.querySelector(".commit-files").textContent + "|" + r.querySelector(".outcome").textContent)`)
		// Newest first: append, tag, refused append, append, append, create.
		if len(rows) != 6 {
			t.Fatalf("commits listed: %q", rows)
		}
		want := []struct{ state, kind, files string }{
			{"committed", "snapshot " + strconv.FormatInt(w.third, 10), "+1 file"},
			{"committed", "commit", "no data or delete files"},
			{"conflict", "commit", "none committed"},
			{"committed", "snapshot " + strconv.FormatInt(w.second, 10), "+1 file"},
			{"committed", "snapshot " + strconv.FormatInt(w.first, 10), "+1 file"},
			{"committed", "create", "no data or delete files"},
		}
		for i, c := range want {
			p := strings.Split(rows[i], "|")
			if p[0] != c.state || !strings.Contains(p[1], c.kind) || !strings.Contains(p[2], c.files) {
				t.Errorf("commit %d: %q, want %+v", i, rows[i], c)
			}
		}
		if !strings.Contains(rows[2], "refused (409)") {
			t.Errorf("the refused commit's outcome: %q", rows[2])
		}
		shot(t, bctx, "writepath-commits")

		click("#tab-inventory")
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(".inventory-group"))))
		sizes := eval(`[...document.querySelectorAll("table.inventory tbody tr")].map(r => r.dataset.kind + " " + r.dataset.size + " " + r.cells[2].textContent)`)
		seen := map[string]bool{}
		for _, s := range sizes {
			p := strings.Fields(s)
			if p[2] == "added" {
				seen[p[0]] = true
				if p[1] == "0" {
					t.Errorf("the inventory page shows size 0: %q", s)
				}
			}
		}
		if !seen["metadata"] || !seen["manifest_list"] || !seen["manifest"] || !seen["data"] {
			t.Fatalf("kinds on the inventory page: %q", sizes)
		}
		groups := eval(`[...document.querySelectorAll(".inventory-group h3")].map(h => h.textContent)`)
		if !strings.Contains(strings.Join(groups, "\n"), "Snapshot "+strconv.FormatInt(w.second, 10)) {
			t.Fatalf("inventory groups: %q", groups)
		}
		shot(t, bctx, "writepath-inventory")

		click("#tab-snapshots")
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("snapshots"))))
		snaps := eval(`[...document.querySelectorAll("#snapshots tbody tr")].map(r => r.id + "|" + r.querySelector(".operation").textContent + "|" + r.querySelector(".refs").textContent + "|" + r.textContent)`)
		if len(snaps) != 3 || !strings.HasPrefix(snaps[0], "snapshot-"+strconv.FormatInt(w.third, 10)+"|append|main") ||
			!strings.HasPrefix(snaps[2], "snapshot-"+strconv.FormatInt(w.first, 10)+"|append|v1") || !strings.Contains(snaps[0], "+4") {
			t.Fatalf("the snapshot timeline: %q", snaps)
		}
		if c := text("#snapshots-count"); !strings.Contains(c, "1–3 of 3 snapshots") {
			t.Fatalf("snapshot count: %q", c)
		}
		shot(t, bctx, "writepath-snapshots")

		// A registered table: its timeline, and no commits or inventory (it is not served).
		must(chromedp.Do(bctx, chromedp.Navigate(w.url+"/tables"), chromedp.WaitVisible(chromedp.ID("tables"))))
		click("#table-" + w.registered + " .write-path a")
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("snapshots"))))
		if got := eval(`[...document.querySelectorAll("#snapshots tbody tr .operation")].map(c => c.textContent)`); len(got) != 1 || got[0] != "append" {
			t.Fatalf("the registered table's timeline: %q", got)
		}
		for _, p := range []string{"commits", "inventory"} {
			code, body := w.get(t, "/tables/"+w.registered+"/"+p)
			if code != 200 || !strings.Contains(body, `id="not-served"`) || !strings.Contains(body, "not served by Tidemark") {
				t.Fatalf("the registered table's %s page: %d\n%.600s", p, code, body)
			}
		}
		for _, p := range []string{"/tables/0193a5f8-0000-7000-8000-000000000000/commits", "/tables/0193a5f8-0000-7000-8000-000000000000/snapshots",
			"/tables/0193a5f8-0000-7000-8000-000000000000/inventory"} {
			code, body := w.get(t, p)
			if code != 404 || !strings.Contains(body, "<html") || !strings.Contains(body, "No Iceberg table has asset ID") {
				t.Fatalf("GET %s: %d\n%.400s", p, code, body)
			}
		}
		if code, body := w.get(t, "/tables/"+w.served+"/commits?before=nope"); code != 400 || !strings.Contains(body, "<html") {
			t.Fatalf("a damaged cursor: %d\n%.400s", code, body)
		}
	})
}

// TestWritePathPaging: the commits page pages by cursor (50 a page, newest first, each commit
// once) and the snapshot timeline by position.
func TestWritePathPaging(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		w := newWritePathWorld(t, db)
		for i := range 50 { // 56 commits in all
			if _, _, err := w.cat.CommitTable(ctx, table.Identifier{"shop", "orders"}, nil, []table.Update{
				table.NewSetSnapshotRefUpdate("t"+strconv.Itoa(i), w.second, table.TagRef, -1, -1, -1)}); err != nil {
				t.Fatalf("tag %d: %v", i, err)
			}
		}
		rowID := regexp.MustCompile(`<tr id="commit-([0-9a-f-]+)"`)
		next := regexp.MustCompile(`<a href="([^"]+)" rel="next" id="commits-next">`)
		seen := map[string]bool{}
		path, pages := "/tables/"+w.served+"/commits", 0
		for path != "" {
			code, body := w.get(t, strings.ReplaceAll(path, "&amp;", "&"))
			if code != 200 {
				t.Fatalf("GET %s: %d", path, code)
			}
			pages++
			for _, m := range rowID.FindAllStringSubmatch(body, -1) {
				if seen[m[1]] {
					t.Fatalf("commit %s listed twice", m[1])
				}
				seen[m[1]] = true
			}
			if pages == 2 && !strings.Contains(body, "← newest") {
				t.Fatal("the second page has no link back to the newest")
			}
			path = ""
			if m := next.FindStringSubmatch(body); m != nil {
				path = m[1]
			}
		}
		if pages != 2 || len(seen) != 56 {
			t.Fatalf("%d pages, %d commits; want 2 pages of 56 commits", pages, len(seen))
		}
		recs, _, err := w.app.Warehouse.Commits(ctx, uuid.MustParse(w.served), uuid.Nil, 1)
		if err != nil || len(recs) != 1 || !seen[recs[0].ID.String()] {
			t.Fatalf("the newest commit %v (%v) is not listed", recs, err)
		}
		// The timeline: 3 snapshots, one page; a page past the end shows the last one.
		if code, body := w.get(t, "/tables/"+w.served+"/snapshots?from=99"); code != 200 || !strings.Contains(body, "3–3 of 3 snapshots") {
			t.Fatalf("the timeline past its end: %d\n%.800s", code, body)
		}
	})
}
