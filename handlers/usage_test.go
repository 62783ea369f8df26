package handlers_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ent/usageevent"
)

func TestUsageOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "warehouse", "orders")
		now := time.Now().UTC()
		var events []map[string]any
		for i := range 6 {
			events = append(events, map[string]any{"asset": map[string]string{"namespace": "warehouse", "name": "orders"},
				"kind": []string{"read", "write"}[i%2], "actor": fmt.Sprintf("u%d", i%2), "at": now.Add(time.Duration(i) * time.Second),
				"query_id": fmt.Sprintf("q%d", i), "source": "trino"})
		}
		events = append(events,
			map[string]any{"asset": map[string]string{"id": a.ID}, "kind": "read", "at": now.Add(-time.Hour), "idempotency_key": "k1", "source": "proxy",
				"version": "9007199254740993"},
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
		// The version a query log names is kept with the read.
		if n, err := s.DB.Client.UsageEvent.Query().Where(usageevent.Version("9007199254740993"), usageevent.Source("proxy")).Count(context.Background()); err != nil || n != 1 {
			t.Fatalf("reads with the stated version: %d (%v), want 1", n, err)
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

// TestUsageBackfillOverHTTP: right after a table is created, 60 days of its query log are
// posted. Within the lateness they count (before first seen); older ones need an admin's
// backfill (a write token gets 403, and nothing is written); a record for a name nobody holds
// is listed as waiting, and counted once an asset takes the name.
func TestUsageBackfillOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "warehouse", "orders")
		now := time.Now().UTC()
		var events []map[string]any
		for d := 1; d <= 60; d++ {
			events = append(events, map[string]any{"asset": map[string]string{"namespace": "warehouse", "name": "orders"},
				"kind": "read", "actor": "analyst", "at": now.Add(-time.Duration(d) * 24 * time.Hour), "query_id": fmt.Sprintf("q%d", d), "source": "trino"})
		}
		type result struct {
			Summary struct{ Accepted, Duplicate, Refused, Unresolved int }
			Results []struct {
				Status, Resolution string
				AssetID            string `json:"asset_id"`
			}
		}
		var res result
		s.must(t, 200, req{method: "POST", path: "/api/v1/usage", token: s.Write, body: map[string]any{"events": events}}).decode(t, &res)
		if res.Summary.Accepted != 29 || res.Summary.Refused != 31 {
			t.Fatalf("without backfill: %+v, want 29 accepted (lateness 30 days), 31 refused", res.Summary)
		}
		if r := res.Results[0]; r.AssetID != a.ID || r.Resolution != "before_first_seen" {
			t.Fatalf("yesterday's read: %+v, want the asset, before first seen", r)
		}
		before := s.counts(t)
		got := s.must(t, 403, req{method: "POST", path: "/api/v1/usage", token: s.Write, body: map[string]any{"events": events, "backfill": true}})
		if !strings.Contains(string(got.body), "admin scope") {
			t.Fatalf("403 body: %s", got.body)
		}
		if after := s.counts(t); !maps.Equal(before, after) {
			t.Fatalf("a refused backfill wrote: %v -> %v", before, after)
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/usage", token: s.Admin, body: map[string]any{"events": events, "backfill": true}}).decode(t, &res)
		if res.Summary.Accepted != 31 || res.Summary.Duplicate != 29 {
			t.Fatalf("backfill: %+v, want 31 accepted, 29 duplicates", res.Summary)
		}
		var u struct {
			Totals struct{ Reads int64 } `json:"totals"`
		}
		from := now.Add(-61 * 24 * time.Hour).Format(time.DateOnly)
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/usage?from=" + from}).decode(t, &u)
		if u.Totals.Reads != 60 {
			t.Fatalf("reads over 61 days = %d, want 60", u.Totals.Reads)
		}

		// A name nobody holds yet: waiting, listed; created later: counted, late.
		s.must(t, 200, req{method: "POST", path: "/api/v1/usage", token: s.Write, body: map[string]any{"events": []map[string]any{
			{"asset": map[string]string{"namespace": "warehouse", "name": "later"}, "kind": "read", "at": now.Add(-time.Hour), "query_id": "l1", "source": "trino"},
			{"asset": map[string]string{"namespace": "warehouse", "name": "later"}, "kind": "write", "at": now.Add(-time.Hour), "query_id": "l2", "source": "trino"}}}}).decode(t, &res)
		if res.Summary.Unresolved != 2 {
			t.Fatalf("records of an unknown name: %+v", res.Summary)
		}
		var w struct {
			Records int64
			Names   []struct {
				Namespace, Name string
				Reads, Writes   int64
			}
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/usage/unresolved"}).decode(t, &w)
		if w.Records != 2 || len(w.Names) != 1 || w.Names[0].Name != "later" || w.Names[0].Reads != 1 || w.Names[0].Writes != 1 {
			t.Fatalf("unresolved = %+v", w)
		}
		later := s.createAsset(t, "warehouse", "later")
		var lu struct {
			Totals struct {
				Reads, Writes int64
				Late          int64 `json:"late_records"`
			} `json:"totals"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + later.ID + "/usage"}).decode(t, &lu)
		if lu.Totals.Reads != 1 || lu.Totals.Writes != 1 || lu.Totals.Late != 2 {
			t.Fatalf("usage of the later asset = %+v, want 1 read and 1 write, both late", lu.Totals)
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/usage/unresolved"}).decode(t, &w)
		if w.Records != 0 || len(w.Names) != 0 {
			t.Fatalf("still waiting: %+v", w)
		}
	})
}
