package handlers_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

func TestUsageOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *server) {
		a := s.createAsset(t, "warehouse", "orders")
		now := time.Now().UTC()
		var events []map[string]any
		for i := range 6 {
			events = append(events, map[string]any{"asset": map[string]string{"namespace": "warehouse", "name": "orders"},
				"kind": []string{"read", "write"}[i%2], "actor": fmt.Sprintf("u%d", i%2), "at": now.Add(time.Duration(i) * time.Second),
				"query_id": fmt.Sprintf("q%d", i), "source": "trino"})
		}
		events = append(events,
			map[string]any{"asset": map[string]string{"id": a.ID}, "kind": "read", "at": now.Add(-time.Hour), "idempotency_key": "k1", "source": "proxy"},
			map[string]any{"asset": map[string]string{"namespace": "warehouse", "name": "nope"}, "kind": "read", "at": now, "query_id": "x"},
			map[string]any{"asset": map[string]string{"id": a.ID}, "kind": "scan", "at": now, "query_id": "y"},
		)
		var res struct {
			Summary struct{ Received, Accepted, Duplicate, Refused, Unresolved int }
			Results []struct {
				Index          int
				Status, Reason string
			}
		}
		for round := range 2 {
			s.must(t, 200, req{method: "POST", path: "/api/v1/usage", token: s.Write, body: map[string]any{"events": events}}).decode(t, &res)
			accepted, dup := 7, 0
			if round == 1 {
				accepted, dup = 0, 7
			}
			if res.Summary.Received != 9 || res.Summary.Accepted != accepted || res.Summary.Duplicate != dup || res.Summary.Unresolved != 1 || res.Summary.Refused != 1 {
				t.Fatalf("round %d summary = %+v", round, res.Summary)
			}
		}
		if !strings.Contains(res.Results[8].Reason, "not read or write") || res.Results[7].Status != "unresolved" {
			t.Fatalf("per-record results = %+v", res.Results[7:])
		}
		var u struct {
			Series []struct{ Reads, Writes int64 } `json:"series"`
			Totals struct {
				Reads, Writes  int64
				DistinctActors int `json:"distinct_actors"`
			} `json:"totals"`
			NamesSeen []struct{ Name string } `json:"names_seen"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/usage"}).decode(t, &u)
		if u.Totals.Reads != 4 || u.Totals.Writes != 3 || u.Totals.DistinctActors != 2 || len(u.NamesSeen) != 1 {
			t.Fatalf("usage = %+v", u)
		}
		var top struct {
			Assets []struct {
				ID    string
				Reads int64
			} `json:"assets"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/usage/top?kind=read&window=7d"}).decode(t, &top)
		if len(top.Assets) != 1 || top.Assets[0].ID != a.ID || top.Assets[0].Reads != 4 {
			t.Fatalf("top = %+v", top)
		}
		before := s.counts(t)
		for _, bad := range []req{
			{method: "POST", path: "/api/v1/usage", token: s.Write, body: `{"events":[]}`},
			{method: "POST", path: "/api/v1/usage", token: s.Write, body: `{"events":[{"kind":"read","at":"yesterday"}]}`},
			{method: "POST", path: "/api/v1/usage", token: s.Write, body: `{"records":[]}`},
			{method: "GET", path: "/api/v1/assets/" + a.ID + "/usage?granularity=month"},
			{method: "GET", path: "/api/v1/assets/" + a.ID + "/usage?from=2026-02-01&to=2026-01-01"},
			{method: "GET", path: "/api/v1/usage/top?window=forever"},
			{method: "GET", path: "/api/v1/usage/top?kind=scan"},
		} {
			if r := s.do(t, bad); r.status != 400 {
				t.Errorf("%s %s: %d %s", bad.method, bad.path, r.status, r.body)
			}
		}
		s.must(t, 401, req{method: "POST", path: "/api/v1/usage", body: map[string]any{"events": events}})
		if after := s.counts(t); !maps.Equal(before, after) {
			t.Fatalf("bad requests changed the database: %v -> %v", before, after)
		}
	})
}
