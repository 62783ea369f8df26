package handlers_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestAssetImpact: raw feeds mid through one job and mid feeds leaf through another (two dataset
// levels, four hops). The impact of raw lists both datasets and both jobs with their depth,
// owners and readers, most read first, and the owners to notify weighted by reads; depth 2
// stops at mid; bad input is a 400 that says what to fix.
func TestAssetImpact(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		at := time.Now().Add(-time.Hour).UTC()
		for i, step := range [][3]string{{"raw", "clean_orders", "mid"}, {"mid", "build_report", "leaf"}} {
			s.must(t, http.StatusCreated, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: map[string]any{
				"eventType": "COMPLETE", "eventTime": at.Format(time.RFC3339Nano), "producer": "test",
				"run": map[string]any{"runId": fmt.Sprintf("0190a000-0000-7000-8000-00000000000%d", i)}, "job": map[string]any{"namespace": "spark", "name": step[1]},
				"inputs": []any{map[string]any{"namespace": "w", "name": step[0]}}, "outputs": []any{map[string]any{"namespace": "w", "name": step[2]}}}})
		}
		ids := map[string]string{}
		for _, n := range []string{"raw", "mid", "leaf"} {
			var res struct {
				Asset asset `json:"asset"`
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=w&name=" + n}).decode(t, &res)
			ids[n] = res.Asset.ID
		}
		for asset, owner := range map[string]string{"mid": "team-sales", "leaf": "team-finance"} {
			s.must(t, 200, req{method: "PUT", path: "/api/v1/assets/" + ids[asset] + "/owners/" + owner, token: s.Write, body: map[string]string{"role": "owner"}})
		}
		var events []map[string]any
		for i, r := range []struct{ asset, actor string }{{"mid", "alice"}, {"mid", "alice"}, {"mid", "alice"}, {"mid", "bob"},
			{"leaf", "carol"}, {"leaf", "carol"}, {"leaf", "carol"}, {"leaf", "carol"}, {"leaf", "carol"}, {"raw", "dave"}} {
			events = append(events, map[string]any{"asset": map[string]string{"id": ids[r.asset]}, "kind": "read", "actor": r.actor,
				"at": at.Format(time.RFC3339), "query_id": fmt.Sprintf("q-%d", i), "source": "trino"})
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/usage", token: s.Write, body: map[string]any{"events": events}})

		type impact struct {
			Depth  int `json:"depth"`
			Assets []struct {
				Name    string   `json:"name"`
				Kind    string   `json:"kind"`
				Depth   int      `json:"depth"`
				Owners  []string `json:"owners"`
				Reads   int64    `json:"reads"`
				Readers []struct {
					Actor string `json:"actor"`
					Reads int64  `json:"reads"`
				} `json:"readers"`
			} `json:"assets"`
			Notify []struct {
				Principal string `json:"principal"`
				Assets    int    `json:"assets"`
				Reads     int64  `json:"reads"`
			} `json:"notify"`
		}
		var got impact
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + ids["raw"] + "/impact"}).decode(t, &got)
		var order []string
		for _, a := range got.Assets {
			order = append(order, fmt.Sprintf("%s@%d:%d", a.Name, a.Depth, a.Reads))
		}
		if want := []string{"leaf@4:5", "mid@2:4", "clean_orders@1:0", "build_report@3:0"}; !slices.Equal(order, want) {
			t.Fatalf("impacted %v, want %v (most read first, then nearer)", order, want)
		}
		mid := got.Assets[1]
		if !slices.Equal(mid.Owners, []string{"team-sales"}) || len(mid.Readers) != 2 || mid.Readers[0].Actor != "alice" || mid.Readers[0].Reads != 3 || mid.Readers[1].Actor != "bob" {
			t.Errorf("mid: owners %v readers %+v, want team-sales; alice 3 then bob 1", mid.Owners, mid.Readers)
		}
		if len(got.Notify) != 2 || got.Notify[0].Principal != "team-finance" || got.Notify[0].Reads != 5 || got.Notify[1].Principal != "team-sales" || got.Notify[1].Reads != 4 {
			t.Errorf("notify %+v, want team-finance (5 reads) then team-sales (4)", got.Notify)
		}

		var shallow impact
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + ids["raw"] + "/impact?depth=2"}).decode(t, &shallow)
		if len(shallow.Assets) != 2 || shallow.Assets[0].Name != "mid" || shallow.Depth != 2 {
			t.Errorf("depth 2: %+v, want mid then clean_orders", shallow.Assets)
		}
		for _, bad := range []struct{ query, field string }{{"depth=0", "depth"}, {"depth=21", "depth"}, {"window=forever", "window"}, {"window=400d", "window"}} {
			var p problem
			s.must(t, 400, req{method: "GET", path: "/api/v1/assets/" + ids["raw"] + "/impact?" + bad.query}).decode(t, &p)
			if p.Field != bad.field || p.Detail == "" {
				t.Errorf("%s: %+v, want a problem about %s", bad.query, p, bad.field)
			}
		}
		s.must(t, 404, req{method: "GET", path: "/api/v1/assets/0190a000-0000-7000-8000-0000000000ff/impact"})
	})
}

// TestImpactPastTheNodeLimit: an asset read by more jobs than the analysis walks (501 direct
// consumers) answers the first 500 of them and says the list is truncated, rather than nothing.
func TestImpactPastTheNodeLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		at := time.Now().Add(-time.Hour).UTC()
		const consumers = 501
		events := make([]map[string]any, consumers)
		for i := range events {
			events[i] = map[string]any{"eventType": "COMPLETE", "eventTime": at.Format(time.RFC3339Nano), "producer": "test",
				"run": map[string]any{"runId": fmt.Sprintf("0190a000-0000-7000-8000-%012d", i)}, "job": map[string]any{"namespace": "spark", "name": fmt.Sprintf("reader_%03d", i)},
				"inputs": []any{map[string]any{"namespace": "w", "name": "hub"}}}
		}
		var br struct {
			Summary struct{ Successful int }
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/lineage/batch", token: s.Write, body: events}).decode(t, &br)
		if br.Summary.Successful != consumers {
			t.Fatalf("batch: %d events stored, want %d", br.Summary.Successful, consumers)
		}
		var res struct {
			Asset asset `json:"asset"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=w&name=hub"}).decode(t, &res)
		for _, depth := range []string{"1", "6"} {
			var got struct {
				Truncated bool `json:"truncated"`
				Assets    []struct {
					Name  string `json:"name"`
					Depth int    `json:"depth"`
				} `json:"assets"`
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + res.Asset.ID + "/impact?depth=" + depth}).decode(t, &got)
			if len(got.Assets) != 500 || !got.Truncated {
				t.Fatalf("depth %s: %d assets, truncated %v; want the first 500 consumers and truncated", depth, len(got.Assets), got.Truncated)
			}
			seen := map[string]bool{}
			for _, a := range got.Assets {
				if a.Depth != 1 || seen[a.Name] {
					t.Fatalf("depth %s: %+v listed twice or not a direct consumer", depth, a)
				}
				seen[a.Name] = true
			}
		}
	})
}
