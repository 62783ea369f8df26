package handlers_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
)

// TestRenameStoryOverHTTP: create warehouse.orders, add an owner, rename to
// warehouse.sales_orders; the ID, owner and audit trail survive; the old name resolves to the
// same asset as a former name; a new "orders" is allowed and gets its own ID; history is intact.
func TestRenameStoryOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		orders := s.createAsset(t, "warehouse", "orders")
		var owned asset
		s.must(t, 200, req{method: "PUT", path: "/api/v1/assets/" + orders.ID + "/owners/alice", token: s.Write,
			body: map[string]string{"role": "business"}}).decode(t, &owned)

		get := s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + orders.ID})
		etag := get.header.Get("ETag")
		if etag != fmt.Sprintf(`"%d"`, owned.Version) {
			t.Fatalf("ETag = %s, want version %d", etag, owned.Version)
		}
		var renamed asset
		s.must(t, 200, req{method: "POST", path: "/api/v1/assets/" + orders.ID + "/rename", token: s.Write,
			headers: map[string]string{"If-Match": etag}, body: map[string]string{"name": "sales_orders"}}).decode(t, &renamed)
		if renamed.ID != orders.ID || renamed.Name != "sales_orders" || renamed.Namespace != "warehouse" {
			t.Fatalf("renamed = %+v", renamed)
		}
		if len(renamed.Owners) != 1 || renamed.Owners[0].Principal != "alice" || renamed.Owners[0].Role != "business" {
			t.Fatalf("owners after rename = %+v", renamed.Owners)
		}

		var res struct {
			Asset       asset `json:"asset"`
			Matched     struct{ Namespace, Name string }
			Former      bool                              `json:"former"`
			CurrentName *struct{ Namespace, Name string } `json:"current_name"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?name=orders"}).decode(t, &res)
		if res.Asset.ID != orders.ID || !res.Former || res.CurrentName == nil || res.CurrentName.Name != "sales_orders" || res.Matched.Name != "orders" {
			t.Fatalf("resolve orders = %+v, want %s flagged former with current name sales_orders", res, orders.ID)
		}

		newcomer := s.createAsset(t, "warehouse", "orders")
		if newcomer.ID == orders.ID {
			t.Fatal("new orders reused the old ID")
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=warehouse&name=orders"}).decode(t, &res)
		if res.Asset.ID != newcomer.ID || res.Former {
			t.Fatalf("resolve after reuse = %+v, want the newcomer, current", res)
		}

		var names struct {
			Names []struct {
				Name    string `json:"name"`
				Current bool   `json:"current"`
			} `json:"names"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + orders.ID + "/names"}).decode(t, &names)
		if len(names.Names) != 2 || names.Names[0].Name != "orders" || names.Names[0].Current || names.Names[1].Name != "sales_orders" {
			t.Fatalf("name history = %+v", names.Names)
		}
		var audit struct {
			Items []struct{ Action, Actor string } `json:"items"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + orders.ID + "/audit"}).decode(t, &audit)
		var actions []string
		for _, it := range audit.Items {
			actions = append(actions, it.Action)
			if it.Actor != "token:writer" {
				t.Fatalf("audit actor = %q, want token:writer", it.Actor)
			}
		}
		if !slices.Equal(actions, []string{"asset.create", "owner.set", "asset.rename"}) {
			t.Fatalf("audit actions = %v", actions)
		}
		var again asset
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + orders.ID}).decode(t, &again)
		if again.Name != "sales_orders" || len(again.Owners) != 1 {
			t.Fatalf("old asset after reuse of its name = %+v", again)
		}
	})
}

// TestConcurrentRenamesOverHTTP sends two renames with the same If-Match at once, 50 times:
// exactly one wins, the other gets 412, and the stored name is the winner's.
func TestConcurrentRenamesOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "w", "start")
		version := a.Version
		for round := range 50 {
			var (
				wg    sync.WaitGroup
				resps [2]resp
			)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resps[i] = s.do(t, req{method: "POST", path: "/api/v1/assets/" + a.ID + "/rename", token: s.Write,
						headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, version)},
						body:    map[string]string{"name": fmt.Sprintf("n%d_%d", round, i)}})
				}()
			}
			wg.Wait()
			statuses := []int{resps[0].status, resps[1].status}
			slices.Sort(statuses)
			if !slices.Equal(statuses, []int{200, 412}) {
				t.Fatalf("round %d: statuses %v, want one 200 and one 412: %s / %s", round, statuses, resps[0].body, resps[1].body)
			}
			var won asset
			for _, r := range resps {
				if r.status == 200 {
					r.decode(t, &won)
				}
			}
			var cur asset
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID}).decode(t, &cur)
			if cur.Name != won.Name || cur.Version != version+1 {
				t.Fatalf("round %d: stored %s v%d, winner %s; lost update", round, cur.Name, cur.Version, won.Name)
			}
			version = cur.Version
		}
	})
}

// TestIdempotentCreateOverHTTP: ten concurrent creates with one Idempotency-Key make one asset
// and all return it.
func TestIdempotentCreateOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		const n = 10
		var (
			wg    sync.WaitGroup
			resps [n]resp
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resps[i] = s.do(t, req{method: "POST", path: "/api/v1/assets", token: s.Write,
					headers: map[string]string{"Idempotency-Key": "create-events-1"},
					body:    map[string]any{"kind": "topic", "namespace": "kafka://prod", "name": "events"}})
			}()
		}
		wg.Wait()
		ids := map[string]bool{}
		created := 0
		for i, r := range resps {
			if r.status != 201 && r.status != 200 {
				t.Fatalf("create %d = %d: %s", i, r.status, r.body)
			}
			if r.status == 201 {
				created++
			}
			var a asset
			r.decode(t, &a)
			ids[a.ID] = true
		}
		if len(ids) != 1 || created != 1 {
			t.Fatalf("%d distinct assets, %d 201s; want 1 and 1", len(ids), created)
		}
		if c := s.counts(t); c["assets"] != 1 {
			t.Fatalf("%d assets stored, want 1", c["assets"])
		}
		p := s.must(t, 409, req{method: "POST", path: "/api/v1/assets", token: s.Write,
			headers: map[string]string{"Idempotency-Key": "create-events-1"},
			body:    map[string]any{"kind": "topic", "namespace": "kafka://prod", "name": "other"}})
		if !strings.Contains(string(p.body), "different request") {
			t.Fatalf("key reuse detail: %s", p.body)
		}
	})
}

// TestBadInputChangesNothing: each bad request gets the right 4xx, a problem+json body whose
// detail says what to fix, and leaves every table as it was.
func TestBadInputChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "w", "existing")
		s.createAsset(t, "w", "other")
		path := "/api/v1/assets/" + a.ID
		ifm := map[string]string{"If-Match": fmt.Sprintf(`"%d"`, a.Version)}
		admin := map[string]any{"kind": "table", "namespace": "w", "name": "x"}
		huge := `{"kind":"table","namespace":"w","name":"x","description":"` + strings.Repeat("a", handlers.DefaultBodyLimit) + `"}`
		cases := []struct {
			name   string
			r      req
			status int
			detail string
		}{
			{"MalformedJSON", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: `{"kind":"table",`}, 400, "ends in the middle"},
			{"SyntaxError", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: `{"kind":table}`}, 400, "malformed JSON at byte"},
			{"UnknownField", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: `{"kind":"table","namespace":"w","name":"x","colour":"red"}`}, 400, `unknown field "colour"`},
			{"WrongType", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: `{"kind":"table","namespace":"w","name":7}`}, 400, `"name" must be a string`},
			{"NotAnObject", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: `[1,2]`}, 400, "must be a JSON object"},
			{"TrailingData", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: `{"kind":"table","namespace":"w","name":"x"} {}`}, 400, "after the JSON object"},
			{"EmptyBody", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: ``}, 400, "empty"},
			{"EmptyName", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: map[string]any{"kind": "table", "namespace": "w", "name": ""}}, 400, "name is empty"},
			{"NameTooLong", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: map[string]any{"kind": "table", "namespace": "w", "name": strings.Repeat("x", 1025)}}, 400, "the limit is 1024"},
			{"BadKind", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: map[string]any{"kind": "spreadsheet", "namespace": "w", "name": "x"}}, 400, "kind \"spreadsheet\" is not one of"},
			{"NameTaken", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: map[string]any{"kind": "table", "namespace": "w", "name": "existing"}}, 409, "is held by asset " + a.ID},
			{"OversizedBody", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: huge}, 413, "exceeds the limit of 1048576 bytes"},
			{"NotJSONContentType", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: admin, headers: map[string]string{"Content-Type": "text/plain"}}, 415, "not JSON"},
			// A page on any site can send a body without Content-Type without a preflight.
			{"NoContentType", req{method: "POST", path: "/api/v1/assets", token: s.Write, body: admin, headers: map[string]string{"Content-Type": ""}}, 415, "send Content-Type: application/json"},
			{"NoContentTypeLineage", req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: map[string]any{}, headers: map[string]string{"Content-Type": ""}}, 415, "send Content-Type: application/json"},
			{"InvalidUUID", req{method: "GET", path: "/api/v1/assets/not-a-uuid"}, 400, "is not a UUID"},
			{"InvalidUUIDOnWrite", req{method: "POST", path: "/api/v1/assets/1234/rename", token: s.Write, headers: ifm, body: map[string]string{"name": "y"}}, 400, "is not a UUID"},
			{"UnknownAsset", req{method: "GET", path: "/api/v1/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70"}, 404, "does not exist"},
			{"BadCursor", req{method: "GET", path: "/api/v1/assets?cursor=bogus"}, 400, "cursor"},
			{"LimitTooLarge", req{method: "GET", path: "/api/v1/assets?limit=100000"}, 400, "limit must be a whole number from 1 to 500"},
			{"LimitZero", req{method: "GET", path: "/api/v1/assets?limit=0"}, 400, "limit must be"},
			{"BadStatusFilter", req{method: "GET", path: "/api/v1/assets?status=gone"}, 400, "status \"gone\""},
			{"ResolveWithoutName", req{method: "GET", path: "/api/v1/resolve?namespace=w"}, 400, "name is required"},
			{"ResolveBadTime", req{method: "GET", path: "/api/v1/resolve?name=existing&at=yesterday"}, 400, "RFC 3339"},
			{"MissingToken", req{method: "POST", path: "/api/v1/assets", body: admin}, 401, "needs a token with the write scope"},
			{"InvalidToken", req{method: "POST", path: "/api/v1/assets", token: "tdm_forged", body: admin}, 401, "not recognised"},
			{"NotBearer", req{method: "POST", path: "/api/v1/assets", body: admin, headers: map[string]string{"Authorization": "Basic YTpi"}}, 401, "Bearer <token>"},
			{"InsufficientScope", req{method: "POST", path: "/api/v1/assets", token: s.Read, body: admin}, 403, `token "reader" has scopes [read]; this request needs write`},
			{"RenameWithoutIfMatch", req{method: "POST", path: path + "/rename", token: s.Write, body: map[string]string{"name": "y"}}, 428, "needs If-Match"},
			{"RenameBadIfMatch", req{method: "POST", path: path + "/rename", token: s.Write, headers: map[string]string{"If-Match": "abc"}, body: map[string]string{"name": "y"}}, 400, "is not an asset ETag"},
			{"RenameStale", req{method: "POST", path: path + "/rename", token: s.Write, headers: map[string]string{"If-Match": `"99"`}, body: map[string]string{"name": "y"}}, 412, "is at version 1, not 99"},
			{"RenameToTaken", req{method: "POST", path: path + "/rename", token: s.Write, headers: ifm, body: map[string]string{"name": "other"}}, 409, "is held by asset"},
			{"RenameEmpty", req{method: "POST", path: path + "/rename", token: s.Write, headers: ifm, body: map[string]string{"name": ""}}, 400, "name is empty"},
			{"BadOwnerRole", req{method: "PUT", path: path + "/owners/bob", token: s.Write, body: map[string]string{"role": "Chief Person"}}, 400, "role"},
			{"RemoveNonOwner", req{method: "DELETE", path: path + "/owners/nobody", token: s.Write}, 404, "is not an owner"},
			{"OwnerStale", req{method: "PUT", path: path + "/owners/bob", token: s.Write, headers: map[string]string{"If-Match": `"99"`}}, 412, "is at version 1, not 99"},
			{"RemoveOwnerStale", req{method: "DELETE", path: path + "/owners/bob", token: s.Write, headers: map[string]string{"If-Match": `"99"`}}, 412, "is at version 1, not 99"},
			{"OwnerBadIfMatch", req{method: "PUT", path: path + "/owners/bob", token: s.Write, headers: map[string]string{"If-Match": "abc"}}, 400, "is not an asset ETag"},
			{"PatchToDeleted", req{method: "PATCH", path: path, token: s.Write, headers: ifm, body: map[string]string{"status": "deleted"}}, 400, "use DELETE"},
			{"UnknownRoute", req{method: "GET", path: "/api/v1/nope"}, 404, "no such route"},
			{"WrongMethod", req{method: "PUT", path: "/api/v1/resolve", token: s.Write}, 405, "does not take that method"},
		}
		before := s.counts(t)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := s.do(t, tc.r)
				if got.status != tc.status {
					t.Fatalf("status = %d, want %d: %s", got.status, tc.status, got.body)
				}
				if ct := got.header.Get("Content-Type"); ct != "application/problem+json" {
					t.Fatalf("Content-Type = %q, want application/problem+json", ct)
				}
				var p problem
				got.decode(t, &p)
				if p.Status != tc.status || p.Type == "" || p.Title == "" || !strings.Contains(p.Detail, tc.detail) {
					t.Fatalf("problem = %+v, want status %d and detail containing %q", p, tc.status, tc.detail)
				}
				if tc.status == 401 && got.header.Get("WWW-Authenticate") == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			})
		}
		if after := s.counts(t); !maps.Equal(before, after) {
			t.Fatalf("refused requests changed the database: %v -> %v", before, after)
		}
	})
}

func TestListPagination(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		for i := range 7 {
			s.createAsset(t, "pg", fmt.Sprintf("t%d", i))
		}
		s.createAsset(t, "elsewhere", "x")
		var seen []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("paging did not end")
			}
			var page struct {
				Items      []asset `json:"items"`
				NextCursor string  `json:"next_cursor"`
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets?namespace=pg&limit=3&cursor=" + cursor}).decode(t, &page)
			for _, it := range page.Items {
				seen = append(seen, it.Name)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
			if pages == 0 {
				s.must(t, 400, req{method: "GET", path: "/api/v1/assets?namespace=elsewhere&limit=3&cursor=" + cursor})
			}
		}
		want := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6"}
		if !slices.Equal(seen, want) {
			t.Fatalf("paged %v, want %v", seen, want)
		}
	})
}

func TestOwnersAndConditionalGet(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "w", "t")
		s.must(t, 200, req{method: "PUT", path: "/api/v1/assets/" + a.ID + "/owners/team%2Fdata-eng", token: s.Write,
			body: map[string]string{"kind": "group"}})
		var owners struct {
			Owners []struct{ Principal, Kind string } `json:"owners"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/owners"}).decode(t, &owners)
		if len(owners.Owners) != 1 || owners.Owners[0].Principal != "team/data-eng" || owners.Owners[0].Kind != "group" {
			t.Fatalf("owners = %+v, want the escaped principal decoded once", owners.Owners)
		}
		get := s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID})
		s.must(t, 304, req{method: "GET", path: "/api/v1/assets/" + a.ID, headers: map[string]string{"If-None-Match": get.header.Get("ETag")}})
		s.must(t, 200, req{method: "DELETE", path: "/api/v1/assets/" + a.ID + "/owners/team%2Fdata-eng", token: s.Write})
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/owners?history=true"}).decode(t, &owners)
		if len(owners.Owners) != 1 {
			t.Fatalf("history = %+v, want the removed owner", owners.Owners)
		}
		var del asset
		s.must(t, 200, req{method: "DELETE", path: "/api/v1/assets/" + a.ID, token: s.Write}).decode(t, &del)
		if del.Status != "deleted" {
			t.Fatalf("after delete: %+v", del)
		}
		s.createAsset(t, "w", "t") // the name was released
	})
}

func TestAuthReads(t *testing.T) {
	db := storageFor(t)
	s := startServer(t, db, func(c *handlers.Config, sc *server.Config) { c.AuthReads = true })
	s.must(t, 401, req{method: "GET", path: "/api/v1/assets"})
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets", token: s.Read})
	s.must(t, 200, req{method: "GET", path: "/healthz"})
}

func TestInsecureNoAuth(t *testing.T) {
	s := startServer(t, storageFor(t), func(c *handlers.Config, sc *server.Config) { c.NoAuth = true })
	var a asset
	s.must(t, 201, req{method: "POST", path: "/api/v1/assets", body: map[string]any{"kind": "job", "namespace": "airflow", "name": "etl"}}).decode(t, &a)
	var audit struct {
		Items []struct{ Actor string } `json:"items"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/audit"}).decode(t, &audit)
	if len(audit.Items) != 1 || audit.Items[0].Actor != "anonymous" {
		t.Fatalf("audit = %+v", audit.Items)
	}
}

func TestOpenAPICoversEveryRoute(t *testing.T) {
	s := startServer(t, storageFor(t), nil)
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/openapi.json"}).decode(t, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	routes := s.Shell.Echo().Routes()
	if len(routes) < 10 {
		t.Fatalf("only %d routes registered", len(routes))
	}
	for _, r := range routes {
		if r.Method == echo.RouteNotFound {
			continue // the /api/* fallback answering 404
		}
		op, ok := doc.Paths[handlers.OpenAPIPath(r.Path)][strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("route %s %s is not in the OpenAPI document", r.Method, r.Path)
			continue
		}
		if op["summary"] == "" || op["responses"] == nil {
			t.Errorf("route %s %s has no summary or responses", r.Method, r.Path)
		}
	}
	if d, _ := doc.Paths["/api/v1/lineage/batch"]["post"]["description"].(string); !strings.Contains(d, "not all-or-nothing") {
		t.Errorf("the batch endpoint does not say what a failed batch leaves behind: %q", d)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	s := startServer(t, storageFor(t), nil)
	s.must(t, 200, req{method: "GET", path: "/healthz"})
	s.createAsset(t, "w", "m")
	s.must(t, 404, req{method: "GET", path: "/api/v1/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70"})
	ev := `{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"m1"},"job":{"namespace":"n","name":"j"}}`
	s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: ev})
	s.must(t, 200, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: ev})
	s.must(t, 400, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: `{"eventTime":"x"}`})
	m := s.must(t, 200, req{method: "GET", path: "/metrics"})
	for _, want := range []string{
		`tidemark_lineage_events_total{outcome="created"} 1`,
		`tidemark_lineage_events_total{outcome="duplicate"} 1`,
		`tidemark_lineage_events_total{outcome="refused"} 1`,
		`tidemark_http_requests_total{method="POST",route="/api/v1/assets",status="201"} 1`,
		`tidemark_http_requests_total{method="GET",route="/api/v1/assets/:id",status="404"} 1`,
		`tidemark_http_request_duration_seconds_bucket{method="GET",route="/healthz"`,
	} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	s.DB.SQL.Close()
	var h struct{ Status, Database string }
	s.must(t, 503, req{method: "GET", path: "/healthz"}).decode(t, &h)
	if h.Database != "unreachable" {
		t.Fatalf("health with the database closed = %+v", h)
	}
}

func TestHeadReturnsETag(t *testing.T) {
	s := startServer(t, storageFor(t), nil)
	a := s.createAsset(t, "w", "h")
	got := s.must(t, 200, req{method: "HEAD", path: "/api/v1/assets/" + a.ID})
	if got.header.Get("ETag") != `"1"` || len(got.body) != 0 {
		t.Fatalf("HEAD: ETag %q, %d body bytes", got.header.Get("ETag"), len(got.body))
	}
}

// TestRequestIDs: a client's short request ID is kept and lands in the audit log; a long one,
// or one with other characters, is replaced by a generated one.
func TestRequestIDs(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		i := 0
		for _, tc := range []struct {
			id   string
			kept bool
		}{
			{"job-42.retry_1", true},
			{strings.Repeat("x", 500000), false},
			{"evil\tid", false},
			{"id with spaces", false},
			{strings.Repeat("a", 65), false},
		} {
			i++
			r := s.do(t, req{method: "POST", path: "/api/v1/assets", token: s.Write,
				body:    map[string]any{"kind": "table", "namespace": "ns", "name": fmt.Sprintf("t%d", i)},
				headers: map[string]string{"X-Request-ID": tc.id}})
			if r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			got := r.header.Get("X-Request-ID")
			if (got == tc.id) != tc.kept || got == "" || len(got) > 64 {
				t.Fatalf("request ID %.20q...: answered %.40q", tc.id, got)
			}
		}
	})
}

// TestDatabaseDown: with the database gone every route that needs it answers 503 with
// Retry-After (back-pressure a client retries), never 500; health says so too.
func TestDatabaseDown(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		id := s.createAsset(t, "w", "down").ID
		if err := s.DB.Close(); err != nil {
			t.Fatal(err)
		}
		for _, r := range []req{
			{method: "GET", path: "/api/v1/assets/" + id},
			{method: "GET", path: "/api/v1/assets?limit=5"},
			{method: "POST", path: "/api/v1/assets", token: s.Write, body: map[string]any{"kind": "table", "namespace": "w", "name": "new"}},
		} {
			got := s.do(t, r)
			if got.status != 503 || got.header.Get("Retry-After") == "" || got.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s %s with the database down: %d %q %s", r.method, r.path, got.status, got.header.Get("Retry-After"), got.body)
			}
		}
		s.must(t, 503, req{method: "GET", path: "/healthz"})
	})
}

// TestNULAndBadUTF8: NUL characters and invalid UTF-8 in bodies, OpenLineage events, path and
// query parameters are refused with 400 on both databases, and nothing is written.
func TestNULAndBadUTF8(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "w", "clean")
		before := s.counts(t)
		for _, r := range []req{
			{method: "POST", path: "/api/v1/assets", token: s.Write, body: `{"kind":"table","namespace":"w","name":"bad\u0000name"}`},
			{method: "POST", path: "/api/v1/assets", token: s.Write, body: []byte("{\"kind\":\"table\",\"namespace\":\"w\",\"name\":\"bad\xffname\"}")},
			{method: "PATCH", path: "/api/v1/assets/" + a.ID, token: s.Write, headers: map[string]string{"If-Match": fmt.Sprint(a.Version)},
				body: `{"description":"nul \u0000 here"}`},
			{method: "POST", path: "/api/v1/lineage", token: s.Write,
				body: `{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","producer":"p\u0000","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`},
			{method: "POST", path: "/api/v1/lineage", token: s.Write,
				body: []byte("{\"eventType\":\"COMPLETE\",\"eventTime\":\"2024-01-01T00:00:00Z\",\"run\":{\"runId\":\"r\xc3\"},\"job\":{\"namespace\":\"n\",\"name\":\"j\"}}")},
			{method: "GET", path: "/api/v1/assets?q=a%00b"},
			{method: "GET", path: "/api/v1/assets?q=%ff%fe"},
			{method: "PUT", path: "/api/v1/webhooks/team%00x", token: s.Write, body: `{"url":"http://127.0.0.1:9/h"}`},
		} {
			got := s.do(t, r)
			if got.status != 400 {
				t.Errorf("%s %s: %d %s", r.method, r.path, got.status, got.body)
			}
		}
		if after := s.counts(t); !maps.Equal(before, after) {
			t.Fatalf("refused requests wrote rows: %v -> %v", before, after)
		}
	})
}
