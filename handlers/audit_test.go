package handlers_test

import (
	"testing"
)

// TestAuditLogAPI: the audit log across assets filters by actor, action and asset, pages, and
// gives each change as a diff.
func TestAuditLogAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		var a, b struct {
			ID string `json:"id"`
		}
		s.must(t, 201, req{method: "POST", path: "/api/v1/assets", token: s.Write, body: map[string]any{"kind": "table", "namespace": "db", "name": "orders"}}).decode(t, &a)
		s.must(t, 201, req{method: "POST", path: "/api/v1/assets", token: s.Admin, body: map[string]any{"kind": "table", "namespace": "db", "name": "events"}}).decode(t, &b)
		s.must(t, 200, req{method: "POST", path: "/api/v1/assets/" + a.ID + "/rename", token: s.Write, headers: map[string]string{"If-Match": `"1"`},
			body: map[string]any{"name": "sales_orders"}})
		type page struct {
			Items []struct {
				Action  string `json:"action"`
				Actor   string `json:"actor"`
				AssetID string `json:"asset_id"`
				Changes []struct {
					Field, Before, After string
				} `json:"changes"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		for _, tc := range []struct {
			name, query string
			want        []string
		}{
			{"All", "", []string{"asset.rename", "asset.create", "asset.create"}},
			{"Actor", "?actor=token:admin", []string{"asset.create"}},
			{"Action", "?action=asset.rename", []string{"asset.rename"}},
			{"Family", "?action=asset", []string{"asset.rename", "asset.create", "asset.create"}},
			{"Asset", "?asset=" + b.ID, []string{"asset.create"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var p page
				s.must(t, 200, req{method: "GET", path: "/api/v1/audit" + tc.query}).decode(t, &p)
				var got []string
				for _, it := range p.Items {
					got = append(got, it.Action)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("got %v, want %v", got, tc.want)
					}
				}
			})
		}
		var p page
		s.must(t, 200, req{method: "GET", path: "/api/v1/audit?action=asset.rename"}).decode(t, &p)
		found := false
		for _, ch := range p.Items[0].Changes {
			found = found || (ch.Field == "name" && ch.Before == "orders" && ch.After == "sales_orders")
		}
		if !found || p.Items[0].AssetID != a.ID {
			t.Fatalf("rename diff: %+v", p.Items[0])
		}
		var first, second page
		s.must(t, 200, req{method: "GET", path: "/api/v1/audit?limit=2"}).decode(t, &first)
		if len(first.Items) != 2 || first.NextCursor == "" {
			t.Fatalf("first page: %+v", first)
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/audit?limit=2&cursor=" + first.NextCursor}).decode(t, &second)
		if len(second.Items) != 1 || second.NextCursor != "" || second.Items[0].Actor != "token:writer" {
			t.Fatalf("second page: %+v", second)
		}
		s.must(t, 400, req{method: "GET", path: "/api/v1/audit?asset=nope"})
		s.must(t, 400, req{method: "GET", path: "/api/v1/audit?actor=x&cursor=" + first.NextCursor})
	})
}
