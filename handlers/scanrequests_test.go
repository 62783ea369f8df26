package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestScanRequestAPI: POST /api/v1/tables/{id}/scans records a request (202, where to look) and
// runs nothing; asking again while it is pending answers the same request; bad input is a
// problem saying what to fix, and records nothing.
func TestScanRequestAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		l := tablestest.NewLake(t)
		tbl := l.Append(l.Create("db.events", nil), tablestest.Rows(0, 3, time.Now()))
		var reg struct {
			Table tableBody `json:"table"`
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/tables", token: s.Write, body: map[string]any{"metadata_location": tbl.MetadataLocation()}}).decode(t, &reg)
		id := uuid.MustParse(reg.Table.AssetID)
		path := "/api/v1/tables/" + id.String() + "/scans"

		for _, tc := range []struct {
			name  string
			path  string
			token string
			body  any
			want  int
		}{
			{"NotAUUID", "/api/v1/tables/nope/scans", s.Write, nil, 400},
			{"UnknownTable", "/api/v1/tables/" + uuid.Must(uuid.NewV7()).String() + "/scans", s.Write, nil, 404},
			{"UnknownField", path, s.Write, map[string]any{"inventory": true}, 400},
			{"WrongType", path, s.Write, `{"from_inventory":"yes"}`, 400},
			{"InventoryOfATableNotServed", path, s.Write, map[string]any{"from_inventory": true}, 400},
			{"ReadToken", path, s.Read, nil, 403},
			{"NoToken", path, "", nil, 401},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.must(t, tc.want, req{method: "POST", path: tc.path, token: tc.token, body: tc.body})
				if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
					t.Fatalf("Content-Type %q, want application/problem+json: %s", ct, r.body)
				}
			})
		}
		if got, err := s.Cleanup.ScanRequests(context.Background(), id, 10); err != nil || len(got) != 0 {
			t.Fatalf("refused requests recorded %+v, %v", got, err)
		}

		type body struct {
			ID            string `json:"id"`
			State         string `json:"state"`
			Actor         string `json:"actor"`
			FromInventory bool   `json:"from_inventory"`
			Created       bool   `json:"created"`
			Scans         string `json:"scans"`
		}
		var first, again body
		r := s.must(t, 202, req{method: "POST", path: path, token: s.Write})
		r.decode(t, &first)
		if loc := r.header.Get("Location"); loc != path || first.Scans != path || first.State != "pending" || !first.Created ||
			first.Actor != "token:writer" || first.FromInventory {
			t.Fatalf("request: %+v, Location %q", first, loc)
		}
		s.must(t, 202, req{method: "POST", path: path, token: s.Admin, body: map[string]any{"from_inventory": false}}).decode(t, &again)
		if again.ID != first.ID || again.Created || again.State != "pending" {
			t.Fatalf("asking again while pending: %+v, want request %s with created false", again, first.ID)
		}
		// Nothing ran: the scan is the scheduler's.
		var scans struct {
			Items []struct{} `json:"items"`
		}
		s.must(t, 200, req{method: "GET", path: path}).decode(t, &scans)
		if len(scans.Items) != 0 {
			t.Fatalf("the request ran a scan itself: %d scans", len(scans.Items))
		}
	})
}
