package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/lineage"
)

// TestAssetLineageAnswersAsBefore: the asset lineage answers (full and compact), now encoded from
// a View of the graph, carry the same fields and values as the answer built from
// lineage.Service.Lineage (what the API answered before), for every asset of a graph, in every
// direction, whole and truncated, on both stores. The expected answer comes from a second
// service over the same database (another replica): only its graph's freshness differs.
func TestAssetLineageAnswersAsBefore(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		postSparkColumnLineage(t, s)
		for i := range 3 { // a second graph with odd names, renamed and deleted assets
			ev := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"v%d"},"producer":"https://x","job":{"namespace":"etl","name":"j%d"},
				"inputs":[{"namespace":"db","name":"in \"%d\"\\t"}],"outputs":[{"namespace":"db","name":"out%d"},{"namespace":"db","name":"in \"%d\"\\t"}]}`, i, i, i, i, i+1)
			if r := s.postEvent(t, []byte(ev)); r.status != 201 {
				t.Fatalf("event %d: %d %s", i, r.status, r.body)
			}
		}
		out1 := s.createAsset(t, "db", "spare") // an asset without lineage
		cat := mustCatalog(t, s.DB)
		// Through the API, so that the server's graph hears of them as it would.
		r, err := cat.Resolve(ctx, "db", "out1")
		if err != nil {
			t.Fatal(err)
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/assets/" + r.Asset.ID.String() + "/rename", token: s.Write,
			headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, r.Asset.Version)}, body: map[string]string{"name": "out1 renamed"}})
		r, err = cat.Resolve(ctx, "db", "out2")
		if err != nil {
			t.Fatal(err)
		}
		s.must(t, 200, req{method: "DELETE", path: "/api/v1/assets/" + r.Asset.ID.String(), token: s.Write})
		replica, err := lineage.New(s.DB, cat)
		if err != nil {
			t.Fatal(err)
		}
		if err := replica.Open(ctx); err != nil {
			t.Fatal(err)
		}
		ids, err := s.DB.Client.Asset.Query().IDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, uuid.MustParse(out1.ID), uuid.New())
		compared := 0
		for _, id := range ids {
			for _, dir := range []lineage.Direction{lineage.Upstream, lineage.Downstream, lineage.Both} {
				for _, dl := range [][2]int{{1, 1000}, {4, 1000}, {20, 1000}, {20, 2}} {
					q := fmt.Sprintf("/api/v1/assets/%s/lineage?direction=%s&depth=%d&limit=%d", id, dir, dl[0], dl[1])
					want, err := replica.Lineage(ctx, id, dir, dl[0], dl[1])
					if err != nil {
						s.must(t, 404, req{method: "GET", path: q})
						continue
					}
					full, compact := expectedAnswers(want, string(dir), dl[0])
					if got := answerOf(t, s.must(t, 200, req{method: "GET", path: q}).body); !reflect.DeepEqual(got, full) {
						t.Fatalf("%s:\n%v\nbefore:\n%v", q, got, full)
					}
					cq := fmt.Sprintf("/api/v1/assets/%s/lineage/compact?direction=%s&depth=%d&limit=%d", id, dir, dl[0], dl[1])
					if got := answerOf(t, s.must(t, 200, req{method: "GET", path: cq}).body); !reflect.DeepEqual(got, compact) {
						t.Fatalf("%s:\n%v\nbefore:\n%v", cq, got, compact)
					}
					compared++
				}
			}
		}
		if compared < 100 {
			t.Fatalf("only %d answers compared", compared)
		}
	})
}

// answerOf decodes an answer without its graph's freshness (each replica has its own).
func answerOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if _, ok := m["graph"]; !ok {
		t.Fatalf("no graph in %s", body)
	}
	delete(m, "graph")
	return m
}

// expectedAnswers are the full and compact answers as the API wrote them from a LineageResult
// (the field names and order of assetLineageResponse and compactLineageResponse), decoded.
func expectedAnswers(res lineage.LineageResult, dir string, depth int) (map[string]any, map[string]any) {
	type node struct {
		ID        uuid.UUID `json:"id"`
		Kind      string    `json:"kind"`
		Status    string    `json:"status"`
		Namespace string    `json:"namespace"`
		Name      string    `json:"name"`
		Depth     int       `json:"depth"`
	}
	type edge struct {
		From uuid.UUID `json:"from"`
		To   uuid.UUID `json:"to"`
	}
	var nodes []node
	var tuples [][]any
	for _, n := range res.Nodes {
		nodes = append(nodes, node{n.ID, string(n.Kind), string(n.Status), n.Namespace, n.Name, n.Depth})
		tuples = append(tuples, []any{n.ID, n.Kind, n.Status, n.Namespace, n.Name, n.Depth})
	}
	edges := []edge{}
	pairs := [][2]int32{}
	for _, e := range res.Edges {
		edges = append(edges, edge{res.Nodes[e[0]].ID, res.Nodes[e[1]].ID})
		pairs = append(pairs, e)
	}
	full := map[string]any{"root": res.Root, "direction": dir, "depth": depth, "nodes": nodes, "edges": edges,
		"truncated": res.Truncated, "reached_per_depth": res.ReachedPerDepth, "relations": []any{}}
	compact := map[string]any{"root": res.Root, "direction": dir, "depth": depth, "truncated": res.Truncated,
		"reached_per_depth": res.ReachedPerDepth, "node_fields": []string{"id", "kind", "status", "namespace", "name", "depth"},
		"nodes": tuples, "edges": pairs, "relations": []any{}}
	return roundTrip(full), roundTrip(compact)
}

func roundTrip(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}
