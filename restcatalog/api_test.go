package restcatalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// do sends a request with a bearer token and decodes a JSON answer into out (when not nil).
func (s *testServer) do(t *testing.T, method, path, token, body string, out any) (int, string) {
	t.Helper()
	return s.doWith(t, method, path, token, body, nil, out)
}

// doWith is do with extra request headers.
func (s *testServer) doWith(t *testing.T, method, path, token, body string, header map[string]string, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, string(b)
}

// TestCommitHealthAndInventoryAPI reads a served table's write path over the JSON API: commit
// health recommends batching for a table committed to every few hundred milliseconds and not
// for one committed to twice, and the inventory lists each commit's files, paged.
func TestCommitHealthAndInventoryAPI(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		hot := create(t, cat, "h", "hot")
		for i := range 12 {
			hot = s.append(t, hot, i, 1)
		}
		cold, err := cat.CreateTable(ctx, table.Identifier{"h", "cold"}, tablestest.Schema)
		if err != nil {
			t.Fatal(err)
		}
		cold = s.append(t, cold, 0, 1)
		type health struct {
			Commits          int     `json:"commits"`
			CommitsPerMinute float64 `json:"commits_per_minute"`
			BatchRecommended bool    `json:"batch_recommended"`
			Recommendation   string  `json:"recommendation"`
		}
		var hh, ch health
		if code, body := s.do(t, "GET", fmt.Sprintf("/api/v1/tables/%s/commit-health?window=1m", assetOf(t, s, hot)), s.Token, "", &hh); code != 200 {
			t.Fatalf("commit health: %d %s", code, body)
		}
		if hh.Commits != 13 || !hh.BatchRecommended || !strings.Contains(hh.Recommendation, "13 commits in the last 1 minute") {
			t.Fatalf("the hot table's health %+v: want 13 commits (the create and 12 appends) and batching recommended with the figures", hh)
		}
		if code, body := s.do(t, "GET", fmt.Sprintf("/api/v1/tables/%s/commit-health?window=1m", assetOf(t, s, cold)), s.Token, "", &ch); code != 200 {
			t.Fatalf("commit health: %d %s", code, body)
		}
		if ch.Commits != 2 || ch.BatchRecommended {
			t.Fatalf("the cold table's health %+v: want 2 commits and no recommendation", ch)
		}
		if code, body := s.do(t, "GET", fmt.Sprintf("/api/v1/tables/%s/commit-health?window=forever", assetOf(t, s, cold)), s.Token, "", nil); code != 400 || !strings.Contains(body, "window") {
			t.Fatalf("a bad window gave %d %s, want 400 naming window", code, body)
		}
		// The asset page says the table is served and shows its commit health over the last hour
		// (13 commits in an hour need no batching); once the
		// background round has inspected the committed tables, their layout health too.
		code, html := s.do(t, "GET", "/assets/"+assetOf(t, s, hot).String(), "", "", nil)
		if code != 200 || !strings.Contains(html, `id="served"`) || !strings.Contains(html, "warehouse main") ||
			!strings.Contains(html, "<dd>13 (0.2 a minute)</dd>") || !strings.Contains(html, "No batching needed") {
			t.Fatalf("the asset page (%d) does not show the served table's commit health:\n%s", code, html)
		}
		if n, err := s.App.Warehouse.RefreshServed(ctx); err != nil || n != 2 {
			t.Fatalf("inspected %d served tables after their commits (err %v), want 2", n, err)
		}
		if h, err := s.App.Tables.Health(ctx, assetOf(t, s, hot)); err != nil || h.DataFiles != 12 {
			t.Fatalf("the hot table's health after inspection: %d data files (err %v), want 12", h.DataFiles, err)
		}
		if n, err := s.App.Warehouse.RefreshServed(ctx); err != nil || n != 0 {
			t.Fatalf("a second round inspected %d tables (err %v); nothing was committed since", n, err)
		}

		// The inventory of the hot table's last commit: its manifest list, manifest and data file.
		snap := hot.CurrentSnapshot().SnapshotID
		type page struct {
			Items []struct {
				Path, Kind, Change string
				SnapshotID         int64 `json:"snapshot_id"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		var p page
		path := fmt.Sprintf("/api/v1/tables/%s/inventory?snapshot=%d", assetOf(t, s, hot), snap)
		if code, body := s.do(t, "GET", path, s.Token, "", &p); code != 200 {
			t.Fatalf("inventory: %d %s", code, body)
		}
		kinds := map[string]int{}
		for _, it := range p.Items {
			if it.Change != "added" || it.SnapshotID != snap {
				t.Fatalf("inventory item %+v: want added by snapshot %d", it, snap)
			}
			kinds[it.Kind]++
		}
		if kinds["manifest_list"] != 1 || kinds["manifest"] != 1 || kinds["data"] != 1 || len(p.Items) != 3 {
			t.Fatalf("the last append's inventory %v, want one manifest list, one manifest, one data file", kinds)
		}
		// Paged one at a time, the whole inventory comes back once: 13 metadata files and 12
		// appends of three files each.
		seen := map[string]bool{}
		cursor := ""
		for range 100 {
			var pg page
			if code, body := s.do(t, "GET", fmt.Sprintf("/api/v1/tables/%s/inventory?limit=7&cursor=%s", assetOf(t, s, hot), cursor), s.Token, "", &pg); code != 200 {
				t.Fatalf("inventory page: %d %s", code, body)
			}
			for _, it := range pg.Items {
				if seen[it.Path] {
					t.Fatalf("%s listed twice", it.Path)
				}
				seen[it.Path] = true
			}
			if cursor = pg.NextCursor; cursor == "" {
				break
			}
		}
		if len(seen) != 13+12*3 {
			t.Fatalf("paging listed %d files, want %d", len(seen), 13+12*3)
		}
	})
}

// TestBadInput: refused requests answer in the Iceberg error model, say what to fix, and write
// nothing.
func TestBadInput(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		tbl := create(t, cat, "b", "t")
		store := auth.NewStore(db.Client, nil)
		reader, _, err := store.Create(ctx, "reader", []auth.Scope{auth.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		tp := "/iceberg/v1/main/namespaces/b/tables/t"
		cases := []struct {
			name, method, path, token, body string
			status                          int
			typ, says                       string
		}{
			{"NotJSON", "POST", tp, s.Token, `{"requirements": [`, 400, "BadRequestException", "not the JSON"},
			{"UnknownRequirement", "POST", tp, s.Token, `{"requirements":[{"type":"assert-nothing"}],"updates":[]}`, 400, "BadRequestException", ""},
			{"UnknownUpdate", "POST", tp, s.Token, `{"requirements":[],"updates":[{"action":"paint-it-blue"}]}`, 400, "BadRequestException", ""},
			{"IdentifierNotThePath", "POST", tp, s.Token, `{"identifier":{"namespace":["b"],"name":"other"},"requirements":[],"updates":[]}`, 400, "BadRequestException", "not the table in the path"},
			{"NoToken", "POST", tp, "", `{"requirements":[],"updates":[]}`, 401, "NotAuthorizedException", "Bearer"},
			{"BadToken", "GET", "/iceberg/v1/main/namespaces", "nope", "", 401, "NotAuthorizedException", "not recognised"},
			{"ReadTokenWrites", "POST", tp, reader, `{"requirements":[],"updates":[]}`, 403, "ForbiddenException", "needs write"},
			{"PurgeNeedsAdmin", "DELETE", tp + "?purgeRequested=true", s.Writer, "", 403, "ForbiddenException", "admin"},
			{"RegisterNeedsAdmin", "POST", "/iceberg/v1/main/namespaces/b/register", s.Writer, `{"name":"x","metadata-location":"file:///x"}`, 403, "ForbiddenException", "admin"},
			{"UnknownWarehouse", "GET", "/iceberg/v1/config?warehouse=nope", s.Token, "", 400, "BadRequestException", "serves main"},
			{"UnknownPrefix", "GET", "/iceberg/v1/nope/namespaces", s.Token, "", 404, "NoSuchWarehouseException", "nope"},
			{"NoSuchNamespace", "GET", "/iceberg/v1/main/namespaces/zz/tables", s.Token, "", 404, "NoSuchNamespaceException", "zz"},
			{"NoSuchEndpoint", "GET", "/iceberg/v1/main/views", s.Token, "", 404, "NoSuchEndpointException", "config"},
			{"ControlCharacterInName", "POST", "/iceberg/v1/main/namespaces", s.Token, `{"namespace":["a\u0007b"]}`, 400, "BadRequestException", "control character"},
			// ["p","q"]/r, ["p"]/"q.r" and ["p.q"]/r would be one asset name.
			{"InvisibleInName", "POST", "/iceberg/v1/main/namespaces", s.Token, `{"namespace":["a\u202eb"]}`, 400, "BadRequestException", "U+202E"},
			{"DotInNamespaceLevel", "POST", "/iceberg/v1/main/namespaces", s.Token, `{"namespace":["p.q"]}`, 400, "BadRequestException", "holds a '.'"},
			{"DotInTableName", "POST", "/iceberg/v1/main/namespaces/b/tables", s.Token, `{"name":"q.r","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`, 400, "BadRequestException", "holds a '.'"},
			{"OverlappingLocation", "POST", "/iceberg/v1/main/namespaces/b/tables", s.Token,
				fmt.Sprintf(`{"name":"inside","location":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`, tbl.Location()+"/data/nested"),
				409, "AlreadyExistsException", "overlaps"},
			{"OutsideTheWarehouse", "POST", "/iceberg/v1/main/namespaces/b/tables", s.Token,
				`{"name":"away","location":"file:///tmp/elsewhere","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`,
				400, "BadRequestException", "not under warehouse"},
			{"DotSegmentsInLocation", "POST", "/iceberg/v1/main/namespaces/b/tables", s.Token,
				fmt.Sprintf(`{"name":"dots","location":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`, "file://"+s.Warehouse+"/b/../../escape"),
				400, "BadRequestException", `".." segment`},
			{"MetadataPathOutside", "POST", tp, s.Token, `{"requirements":[],"updates":[{"action":"set-properties","updates":{"write.metadata.path":"file:///tmp/tidemark-escape"}}]}`,
				400, "BadRequestException", "outside the table's location"},
			{"ManifestListOutside", "POST", tp, s.Token, fmt.Sprintf(`{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":7,"sequence-number":1,"timestamp-ms":%d,"manifest-list":"file:///etc/hostname","summary":{"operation":"append"},"schema-id":0}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":7}]}`, time.Now().UnixMilli()+1000),
				400, "BadRequestException", "outside the table's location"},
			{"UnregisterNeedsAdmin", "POST", tp + "/unregister", s.Writer, "", 403, "ForbiddenException", "admin"},
			{"BodyTooLarge", "POST", tp, s.Token, `{"requirements":[],"updates":[],"pad":"` + strings.Repeat("x", 9<<20) + `"}`, 413, "BadRequestException", "over"},
		}
		// A drop with an oversized Idempotency-Key is refused before it drops anything.
		cases = append(cases, struct {
			name, method, path, token, body string
			status                          int
			typ, says                       string
		}{"IdempotencyKeyTooLong", "DELETE", tp, s.Token, "", 400, "BadRequestException", "Idempotency-Key"})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var header map[string]string
				if c.name == "IdempotencyKeyTooLong" {
					header = map[string]string{"Idempotency-Key": strings.Repeat("k", 200)}
				}
				code, body := s.doWith(t, c.method, c.path, c.token, c.body, header, nil)
				if code != c.status {
					t.Fatalf("status %d, want %d: %s", code, c.status, body)
				}
				var e struct {
					Error struct {
						Message, Type string
						Code          int
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &e); err != nil {
					t.Fatalf("the answer is not the Iceberg error model: %s", body)
				}
				if e.Error.Type != c.typ || e.Error.Code != c.status || !strings.Contains(e.Error.Message, c.says) {
					t.Fatalf("error %+v, want type %s, code %d, a message saying %q", e.Error, c.typ, c.status, c.says)
				}
			})
		}
		// Nothing was written: the table is at its first metadata file, and no other table exists.
		after, err := cat.LoadTable(ctx, table.Identifier{"b", "t"})
		if err != nil {
			t.Fatal(err)
		}
		if after.MetadataLocation() != tbl.MetadataLocation() {
			t.Fatalf("a refused request moved the table to %s", after.MetadataLocation())
		}
		n := 0
		for _, err := range cat.ListTables(ctx, table.Identifier{"b"}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("namespace b holds %d tables after refused creates, want 1", n)
		}
	})
}

// TestOAuthClientCredentials: iceberg-go's REST client trades a client ID and secret (a
// Tidemark token's name and the token) for a bearer token at /v1/oauth/tokens.
func TestOAuthClientCredentials(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat, err := icecat.Load(ctx, "tidemark", iceberg.Properties{"type": "rest", "uri": s.URL + "/iceberg",
			"credential": "engine:" + s.Token, "warehouse": "main"})
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.CreateNamespace(ctx, table.Identifier{"o"}, nil); err != nil {
			t.Fatalf("a client authenticated through the token endpoint could not write: %v", err)
		}
		if _, err := icecat.Load(ctx, "tidemark", iceberg.Properties{"type": "rest", "uri": s.URL + "/iceberg",
			"credential": "someone-else:" + s.Token, "warehouse": "main"}); err == nil {
			t.Fatal("a client ID that is not the token's name was given a token")
		}
	})
}

// TestTokenRateLimit: requests under /iceberg count against their token's rate limit.
func TestTokenRateLimit(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	s := newServerWith(t, db, func(_ *app.Config, shell *server.Config) { shell.RateLimit = 1 })
	codes := map[int]int{}
	var last string
	for range 6 {
		code, body := s.do(t, "GET", "/iceberg/v1/main/namespaces", s.Token, "", nil)
		codes[code]++
		if code == 429 {
			last = body
		}
	}
	if codes[429] == 0 || !strings.Contains(last, "TooManyRequestsException") || !strings.Contains(last, `token \"engine\"`) {
		t.Fatalf("six quick requests with a token limited to 1/s (bursts of 2) gave %v; last refusal %s", codes, last)
	}
}

// TestPaging: lists of tables and namespaces come back whole, once each, a page at a time.
func TestPaging(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		for _, ns := range []string{"p1", "p2", "p3"} {
			if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 5 {
			if _, err := cat.CreateTable(ctx, table.Identifier{"p2", fmt.Sprintf("t%d", i)}, tablestest.Schema); err != nil {
				t.Fatal(err)
			}
		}
		paged := cat.(*rest.Catalog).SetPageSize(ctx, 2)
		seen := map[string]int{}
		for id, err := range cat.ListTables(paged, table.Identifier{"p2"}) {
			if err != nil {
				t.Fatal(err)
			}
			seen[strings.Join(id, ".")]++
		}
		if len(seen) != 5 {
			t.Fatalf("paged table list %v, want p2.t0..p2.t4 once each", seen)
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("%s listed %d times", k, n)
			}
		}
		nss, err := cat.ListNamespaces(paged, nil)
		if err != nil || len(nss) != 3 {
			t.Fatalf("paged namespace list %v (err %v), want 3", nss, err)
		}
		var p struct {
			Identifiers []struct{ Name string } `json:"identifiers"`
			Next        string                  `json:"next-page-token"`
		}
		if code, body := s.do(t, "GET", "/iceberg/v1/main/namespaces/p2/tables?pageSize=5", s.Token, "", &p); code != 200 || len(p.Identifiers) != 5 || p.Next != "" {
			t.Fatalf("a page as large as the list: %d %s, want 5 tables and no next-page-token", code, body)
		}
		if code, body := s.do(t, "GET", "/iceberg/v1/main/namespaces/p2/tables?pageSize=0", s.Token, "", nil); code != 400 || !strings.Contains(body, "pageSize") {
			t.Fatalf("pageSize=0 gave %d %s, want 400", code, body)
		}
	})
}

// TestDroppedStaysDropped: the inspection a commit queues may run after the table is dropped
// (iceberg-go's REST suite hit this: append, drop, then a table at the parent location). It must
// not make the dropped table live again, so its location is free for the next table.
func TestDroppedStaysDropped(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		tbl := s.append(t, create(t, cat, "d", "t"), 0, 2)
		id := assetOf(t, s, tbl)
		if err := cat.DropTable(ctx, table.Identifier{"d", "t"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.App.Tables.Refresh(ctx, id); err != nil { // what the inspection round does
			t.Fatal(err)
		}
		got, err := s.App.Tables.Get(ctx, id)
		if err != nil || got.GoneAt == nil {
			t.Fatalf("after a refresh the dropped table is %+v (err %v), want it gone", got, err)
		}
		parent := strings.TrimSuffix(tbl.Location(), "/"+path.Base(tbl.Location()))
		if _, err := cat.CreateTable(ctx, table.Identifier{"d", "u"}, iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64}),
			icecat.WithLocation(parent)); err != nil {
			t.Fatalf("a table at %s, over the dropped table's location: %v", parent, err)
		}
	})
}

// TestServedPointerMovesOnlyByCommits: registering an older metadata file of a served table
// through the JSON API (even with force) is refused, and a refresh leaves the pointer alone.
func TestServedPointerMovesOnlyByCommits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		tbl := create(t, cat, "m", "t")
		first := tbl.MetadataLocation()
		tbl = s.append(t, tbl, 0, 2)
		body := fmt.Sprintf(`{"metadata_location":%q,"force":true}`, first)
		if code, resp := s.do(t, "POST", "/api/v1/tables", s.Token, body, nil); code != 409 || !strings.Contains(resp, "moves only by commits") {
			t.Fatalf("registering the served table's first metadata gave %d %s, want 409", code, resp)
		}
		id := assetOf(t, s, tbl)
		if _, err := s.App.Tables.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
		got, err := s.App.Tables.Get(ctx, id)
		if err != nil || got.MetadataLocation != tbl.MetadataLocation() || got.Identifier != "m.t" || got.Warehouse != "main" {
			t.Fatalf("after a refused registration and a refresh the table is %+v (err %v), want it at %s, named m.t in main", got, err, tbl.MetadataLocation())
		}
	})
}
