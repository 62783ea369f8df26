package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// TestGraphLoadingIsSaidHonestly: until the lineage graph is loaded the server answers, /healthz
// says "loading", lineage answers 503 with Retry-After (a partial graph would be a wrong answer),
// and the cleanup bot, which follows lineage downstream, refuses to judge anything unused.
func TestGraphLoadingIsSaidHonestly(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		a, err := app.Open(ctx, db, app.Config{}) // LoadGraph unset: serve loads it in the background
		if err != nil {
			t.Fatal(err)
		}
		h, err := a.Handler(server.Config{}, handlers.Config{Version: "test"}, web.Config{})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		res, err := a.Catalog.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		get := func(path string) (int, http.Header, string) {
			r, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Body.Close()
			b, _ := io.ReadAll(r.Body)
			return r.StatusCode, r.Header, string(b)
		}
		graph := func() string {
			code, _, body := get("/healthz")
			var hr struct{ Status, Graph string }
			if code != 200 || json.Unmarshal([]byte(body), &hr) != nil || hr.Status != "ok" {
				t.Fatalf("/healthz = %d %s", code, body)
			}
			return hr.Graph
		}
		lineagePath := "/api/v1/assets/" + res.Asset.ID.String() + "/lineage"

		if g := graph(); g != "loading" {
			t.Fatalf("graph = %q before loading, want loading", g)
		}
		code, hdr, body := get(lineagePath)
		if code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "still loading") {
			t.Fatalf("lineage while loading = %d (Retry-After %q) %s", code, hdr.Get("Retry-After"), body)
		}
		if _, err := a.Lineage.Downstream(ctx, res.Asset.ID, app.UnusedDownstreamDepth); err == nil {
			t.Fatal("Downstream answered from a graph not loaded yet")
		}

		if err := a.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if g := graph(); g != "ready" {
			t.Fatalf("graph = %q after loading, want ready", g)
		}
		if code, _, body := get(lineagePath); code != 200 {
			t.Fatalf("lineage after loading = %d %s", code, body)
		}
		if _, err := a.Lineage.Downstream(ctx, res.Asset.ID, app.UnusedDownstreamDepth); err != nil {
			t.Fatal(err)
		}
	})
}

// TestServeIndexesAssetsFromBeforeSearch: serve gives assets that have no search doc (a
// database from before search) one in the background, and stops when it is told to.
func TestServeIndexesAssetsFromBeforeSearch(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		a, err := app.Open(ctx, db, app.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Catalog.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: "ledger"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SQL.ExecContext(ctx, "DELETE FROM search_facets; DELETE FROM search_docs"); err != nil {
			t.Fatal(err)
		}
		found := func() int {
			res, err := a.Catalog.SearchAssets(ctx, catalog.SearchQuery{Text: "ledger"})
			if err != nil {
				t.Fatal(err)
			}
			return res.Total
		}
		if n := found(); n != 0 {
			t.Fatalf("found %d without a search doc", n)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h, err := a.Handler(server.Config{}, handlers.Config{Version: "test"}, web.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Serve(sctx, ln, &http.Server{Handler: h}, app.Schedule{}, time.Second) }()
		deadline := time.Now().Add(10 * time.Second)
		for found() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("serve did not index the asset from before search")
			}
			time.Sleep(10 * time.Millisecond)
		}
		// /healthz says so once the background indexing is done.
		for {
			res, err := http.Get("http://" + ln.Addr().String() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var h struct {
				SearchIndex string `json:"search_index"`
			}
			err = json.NewDecoder(res.Body).Decode(&h)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if h.SearchIndex == "ready" {
				break
			}
			if h.SearchIndex != "indexing" || time.Now().After(deadline) {
				t.Fatalf("/healthz search_index = %q; want indexing, then ready", h.SearchIndex)
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestPagesMountedWhereTheyRegister: every page the UI registers answers from the UI (HTML, its
// own 404 for an unknown ID), not the JSON API's 404, because the mounts are recorded as pages
// register; paths no page claims stay the API's.
func TestPagesMountedWhereTheyRegister(t *testing.T) {
	srv := serve(t, storagetest.Open(t, "sqlite"))
	unknown := "/00000000-0000-7000-8000-000000000000"
	for _, p := range []string{"/", "/assets" + unknown, "/proposals", "/proposals" + unknown, "/scans", "/scans" + unknown,
		"/migrations", "/migrations" + unknown, "/glossary", "/glossary" + unknown, "/audit", "/signin", "/static/app.js"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "problem+json") {
			t.Errorf("GET %s answered %d %s from the JSON API: the UI's page is not mounted there", p, resp.StatusCode, ct)
		}
	}
	// A person who mistypes a page gets a page; a client that mistypes an API path, the API's 404.
	for path, want := range map[string]string{"/no-such-page": "text/html", "/api/v1/no-such-route": "problem+json", "/iceberg/v1/no/such": "json"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 404 || !strings.Contains(ct, want) {
			t.Errorf("GET %s answered %d %s, want 404 %s", path, resp.StatusCode, ct, want)
		}
	}
	// A bad query is refused by the shell before any face runs: in the error model of the face
	// the path belongs to, a page for every path that is not the API's.
	for path, want := range map[string]string{"/no-such-page?q=%00": "text/html", "/search?q=%00": "text/html",
		"/assets" + unknown + "?q=%00": "text/html", "/api/v1/assets?q=%00": "problem+json", "/healthz?x=%ff": "problem+json"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 400 || !strings.Contains(ct, want) || !strings.Contains(string(body), "NUL character or invalid UTF-8") {
			t.Errorf("GET %s answered %d %s %.200s, want 400 %s saying what is wrong", path, resp.StatusCode, ct, body, want)
		}
	}
}

// TestIcebergFaceWithoutWarehouses: a Tidemark serving no warehouse still mounts the Iceberg face,
// so an engine pointed at it reads why in the Iceberg error model instead of a page or a
// problem document.
func TestIcebergFaceWithoutWarehouses(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		r, err := http.Get(serve(t, db).URL + "/iceberg/v1/config")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var m struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.StatusCode != 503 || m.Error.Code != 503 ||
			!strings.Contains(m.Error.Message, "--iceberg-warehouses") {
			t.Fatalf("GET /iceberg/v1/config = %d %+v (%v), want 503 naming --iceberg-warehouses", r.StatusCode, m, err)
		}
	})
}

// serve is the process app builds over db with the default configuration (no warehouse), on a
// test server closed with the test.
func serve(t *testing.T, db *storage.DB) *httptest.Server {
	t.Helper()
	a, err := app.Open(context.Background(), db, app.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.Handler(server.Config{}, handlers.Config{Version: "test"}, web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
