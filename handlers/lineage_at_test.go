package handlers_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
)

// atAnswer is an asset lineage answer with what at= adds.
type atAnswer struct {
	At    *time.Time `json:"at"`
	Nodes []struct {
		ID, Name     string
		FormerName   bool       `json:"former_name"`
		DeletedSince *time.Time `json:"deleted_since"`
	} `json:"nodes"`
	Edges     []struct{ From, To string } `json:"edges"`
	Truncated bool                        `json:"truncated"`
}

// names lists the answer's nodes as names ("~" a former name, "+" deleted since) and its edges
// as "from>to" by the names shown.
func (a atAnswer) names() ([]string, []string) {
	byID := map[string]string{}
	var nodes, edges []string
	for _, n := range a.Nodes {
		byID[n.ID] = n.Name
		s := n.Name
		if n.FormerName {
			s += "~"
		}
		if n.DeletedSince != nil {
			s += "+"
		}
		nodes = append(nodes, s)
	}
	for _, e := range a.Edges {
		edges = append(edges, byID[e.From]+">"+byID[e.To])
	}
	slices.Sort(nodes)
	slices.Sort(edges)
	return nodes, edges
}

// TestLineageAtOverHTTP is lineage as of a time end to end: job1 builds n.b from n.a, n.b is
// renamed n.b2, job2 builds n.c from n.b2, and n.c is deleted. Asked at times between those
// steps, the asset lineage (full and compact) and the Marquez graph show the graph of then;
// bad times are refused naming at. Every event is stored with the token that posted it.
func TestLineageAtOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		event := func(run, typ string, at time.Time, job, in, out string) map[string]any {
			return map[string]any{"eventType": typ, "eventTime": at.UTC().Format(time.RFC3339Nano), "producer": "test",
				"run": map[string]any{"runId": run}, "job": map[string]any{"namespace": "n", "name": job},
				"inputs":  []any{map[string]any{"namespace": "n", "name": in}},
				"outputs": []any{map[string]any{"namespace": "n", "name": out}}}
		}
		// job1 ran two hours ago; its events arrive now.
		job1 := time.Now().Add(-2 * time.Hour)
		s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: event("r1", "START", job1, "job1", "a", "b")})
		s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: event("r1", "COMPLETE", job1.Add(time.Minute), "job1", "a", "b")})
		resolve := func(name string) asset {
			var res struct {
				Asset asset `json:"asset"`
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?space=dataset&namespace=n&name=" + name}).decode(t, &res)
			return res.Asset
		}
		a, b := resolve("a"), resolve("b")
		// The catalog stamps the rename with its clock; the test reads the same one around it.
		beforeRename := time.Now()
		s.must(t, 200, req{method: "POST", path: "/api/v1/assets/" + b.ID + "/rename", token: s.Write,
			headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, b.Version)}, body: map[string]string{"name": "b2"}})
		afterRename := time.Now()
		time.Sleep(20 * time.Millisecond) // so that job2 begins strictly after a time between it and the rename
		job2 := time.Now()
		s.must(t, 200, req{method: "POST", path: "/api/v1/lineage/batch", token: s.Write, body: []any{
			event("r2", "START", job2, "job2", "b2", "c"), event("r2", "COMPLETE", job2.Add(time.Millisecond), "job2", "b2", "c")}})
		c := resolve("c")
		time.Sleep(20 * time.Millisecond)
		beforeDelete := time.Now()
		s.must(t, 200, req{method: "DELETE", path: "/api/v1/assets/" + c.ID, token: s.Write})

		var principals []string
		s.query(t, "SELECT DISTINCT principal FROM lineage_events", func(c []string) { principals = append(principals, c[0]) })
		if !slices.Equal(principals, []string{"token:writer"}) {
			t.Errorf("events stored with principals %v; want token:writer (the token that posted them)", principals)
		}

		at := func(t time.Time) string { return url.QueryEscape(t.UTC().Format(time.RFC3339Nano)) }
		for _, tc := range []struct {
			name, path   string
			nodes, edges []string
		}{
			{"before the rename: b's former name, no edge to c", "/api/v1/assets/" + a.ID + "/lineage?direction=downstream&depth=10&at=" + at(beforeRename.Add(-time.Millisecond)),
				[]string{"a", "b~", "job1"}, []string{"a>job1", "job1>b"}},
			{"after the rename, before job2's first event: no edge to c", "/api/v1/assets/" + a.ID + "/lineage?direction=downstream&depth=10&at=" + at(afterRename.Add(10*time.Millisecond)),
				[]string{"a", "b2", "job1"}, []string{"a>job1", "job1>b2"}},
			{"c, deleted since, is there", "/api/v1/assets/" + a.ID + "/lineage?direction=downstream&depth=10&at=" + at(beforeDelete.Add(-time.Millisecond)),
				[]string{"a", "b2", "c~+", "job1", "job2"}, []string{"a>job1", "b2>job2", "job1>b2", "job2>c"}},
			{"upstream of c, with an offset instead of Z", "/api/v1/assets/" + c.ID + "/lineage?direction=upstream&at=" +
				url.QueryEscape(beforeDelete.Add(-time.Millisecond).In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano)),
				[]string{"b2", "c~+", "job1", "job2"}, []string{"b2>job2", "job1>b2", "job2>c"}}, // depth 3 by default
			{"now, without at: c deleted, b2's name", "/api/v1/assets/" + a.ID + "/lineage?direction=downstream&depth=10",
				[]string{"a", "b2", "c", "job1", "job2"}, []string{"a>job1", "b2>job2", "job1>b2", "job2>c"}},
		} {
			var ans atAnswer
			s.must(t, 200, req{method: "GET", path: tc.path}).decode(t, &ans)
			nodes, edges := ans.names()
			if !slices.Equal(nodes, tc.nodes) || !slices.Equal(edges, tc.edges) {
				t.Errorf("%s: nodes %v edges %v; want %v %v", tc.name, nodes, edges, tc.nodes, tc.edges)
			}
			if withAt := strings.Contains(tc.path, "at="); withAt != (ans.At != nil) {
				t.Errorf("%s: at %v in the answer", tc.name, ans.At)
			}
		}

		// The compact form at a time says the same, with two more elements a node.
		var compact struct {
			NodeFields []string `json:"node_fields"`
			Nodes      [][]any  `json:"nodes"`
			Edges      [][2]int `json:"edges"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/lineage/compact?direction=downstream&depth=10&at=" + at(beforeRename.Add(-time.Millisecond))}).decode(t, &compact)
		var got []string
		for _, n := range compact.Nodes {
			got = append(got, fmt.Sprint(n[4], " ", n[6], " ", n[7]))
		}
		slices.Sort(got)
		if want := []string{"a false <nil>", "b true <nil>", "job1 false <nil>"}; len(compact.NodeFields) != 8 || compact.NodeFields[6] != "former_name" ||
			!slices.Equal(got, want) || len(compact.Edges) != 2 {
			t.Errorf("compact at a time: fields %v nodes %v edges %v; want nodes %v", compact.NodeFields, got, compact.Edges, want)
		}

		// The Marquez graph at a time keeps its shape, with the node IDs of then; the name of then
		// and the name now both find the asset.
		for _, nodeID := range []string{"dataset:n:b", "dataset:n:b2"} {
			var g marquezGraph
			s.must(t, 200, req{method: "GET", path: "/api/v1/lineage?nodeId=" + url.QueryEscape(nodeID) + "&at=" + at(beforeRename.Add(-time.Millisecond))}).decode(t, &g)
			if ids := slices.Sorted(slices.Values(g.ids())); !slices.Equal(ids, []string{"dataset:n:a", "dataset:n:b", "job:n:job1"}) {
				t.Errorf("Marquez graph of %s before the rename: %v", nodeID, ids)
			}
			if n := g.node("dataset:n:b"); n == nil || len(n.InEdges) != 1 || n.InEdges[0].Origin != "job:n:job1" || len(n.OutEdges) != 0 {
				t.Errorf("Marquez node dataset:n:b before the rename: %+v", n)
			}
		}
		var g marquezGraph
		s.must(t, 200, req{method: "GET", path: "/api/v1/lineage?nodeId=dataset:n:b2&at=" + at(beforeDelete.Add(-time.Millisecond))}).decode(t, &g)
		if ids := slices.Sorted(slices.Values(g.ids())); !slices.Equal(ids, []string{"dataset:n:a", "dataset:n:b2", "dataset:n:c", "job:n:job1", "job:n:job2"}) {
			t.Errorf("Marquez graph of dataset:n:b2 before the deletion: %v", ids)
		}
		var deleted struct {
			Graph []struct {
				ID   string
				Data struct {
					DeletedSince *time.Time `json:"deletedSince"`
				}
			}
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/lineage?nodeId=dataset:n:b2&at=" + at(beforeDelete.Add(-time.Millisecond))}).decode(t, &deleted)
		for _, n := range deleted.Graph {
			if (n.ID == "dataset:n:c") != (n.Data.DeletedSince != nil) || (n.Data.DeletedSince != nil && n.Data.DeletedSince.Before(beforeDelete.Add(-time.Millisecond))) {
				t.Errorf("Marquez node %s deletedSince %v", n.ID, n.Data.DeletedSince)
			}
		}

		// Bad times: 400, naming at and what to send.
		for _, bad := range []struct{ at, says string }{
			{"yesterday", "RFC 3339"},
			{"2026-01-31", "RFC 3339"},
			{"2026-01-31T12:00:00 01:00", "RFC 3339"}, // a + sent unencoded arrives as a space
			{at(time.Now().Add(time.Hour)), "in the future"},
			{"1899-12-31T23:59:59Z", "before 1900"},
			{"0001-01-01T00:00:00Z", "before 1900"},
		} {
			for _, path := range []string{"/api/v1/assets/" + a.ID + "/lineage?at=", "/api/v1/assets/" + a.ID + "/lineage/compact?at=", "/api/v1/lineage?nodeId=dataset:n:a&at="} {
				r := s.must(t, 400, req{method: "GET", path: path + strings.ReplaceAll(bad.at, " ", "%20")})
				var p problem
				r.decode(t, &p)
				if p.Field != "at" || !strings.Contains(p.Detail, bad.says) || r.header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s%s: field %q detail %q (%s); want at, saying %q", path, bad.at, p.Field, p.Detail, r.header.Get("Content-Type"), bad.says)
				}
			}
		}
		s.must(t, 400, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/lineage?depth=21&at=" + at(beforeDelete)})
	})
}

// TestLineagePrincipalWithoutAuth: with authentication off, events are stored as posted by
// "anonymous", the actor the API names then.
func TestLineagePrincipalWithoutAuth(t *testing.T) {
	s := startServer(t, storageFor(t), func(c *handlers.Config, _ *server.Config) { c.NoAuth = true })
	s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", body: `{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","producer":"p",
		"run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"a"}]}`})
	var principals []string
	s.query(t, "SELECT principal FROM lineage_events", func(c []string) { principals = append(principals, c[0]) })
	if !slices.Equal(principals, []string{"anonymous"}) {
		t.Fatalf("principals %v; want anonymous", principals)
	}
}
