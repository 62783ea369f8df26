package handlers_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

type searchAnswer struct {
	Query      string `json:"query"`
	Total      int    `json:"total"`
	TotalExact bool   `json:"total_exact"`
	Items      []struct {
		ID                string   `json:"id"`
		Kind              string   `json:"kind"`
		Status            string   `json:"status"`
		Namespace         string   `json:"namespace"`
		Name              string   `json:"name"`
		MatchedIn         []string `json:"matched_in"`
		MatchedFormerName *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"matched_former_name"`
		Score float64 `json:"score"`
	} `json:"items"`
	Facets map[string][]struct {
		Value string `json:"value"`
		Count int    `json:"count"`
	} `json:"facets"`
	NextOffset *int `json:"next_offset"`
}

// TestSearchOverHTTP: GET /api/v1/search ranks, explains, counts facets, filters and pages;
// bad input is a problem naming the parameter; GET /api/v1/assets?q= answers from the same
// ranking with whole assets. Every answer is checked against the OpenAPI document.
func TestSearchOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		exact := s.createAsset(t, "sales", "orders")
		daily := s.createAsset(t, "sales", "orders_daily")
		old := s.createAsset(t, "legacy", "orders_2019")
		s.must(t, 200, req{method: "POST", path: "/api/v1/assets/" + old.ID + "/rename", token: s.Write,
			headers: map[string]string{"If-Match": `"1"`}, body: map[string]string{"name": "archive"}})
		s.must(t, 200, req{method: "PUT", path: "/api/v1/assets/" + daily.ID + "/owners/team-sales", token: s.Write})
		gone := s.createAsset(t, "sales", "orders_old")
		s.must(t, 200, req{method: "DELETE", path: "/api/v1/assets/" + gone.ID, token: s.Write})

		search := func(t *testing.T, query string) searchAnswer {
			t.Helper()
			var out searchAnswer
			s.must(t, 200, req{method: "GET", path: "/api/v1/search?" + query, token: s.Read}).decode(t, &out)
			return out
		}
		t.Run("Ranked", func(t *testing.T) {
			got := search(t, "q=orders")
			var ids []string
			for _, it := range got.Items {
				ids = append(ids, it.ID)
			}
			if got.Query != "orders" || got.Total != 3 || !got.TotalExact || !slices.Equal(ids, []string{exact.ID, daily.ID, old.ID}) {
				t.Fatalf("got %+v, want %s, %s, %s", got, exact.ID, daily.ID, old.ID)
			}
			former := got.Items[2]
			if !slices.Equal(former.MatchedIn, []string{"former_name"}) || former.MatchedFormerName == nil ||
				former.MatchedFormerName.Name != "orders_2019" || former.MatchedFormerName.Namespace != "legacy" || former.Name != "archive" {
				t.Errorf("former-name hit: %+v", former)
			}
			if got.Items[0].MatchedFormerName != nil || !slices.Equal(got.Items[0].MatchedIn, []string{"name"}) || got.Items[0].Score <= got.Items[1].Score {
				t.Errorf("exact hit: %+v", got.Items[0])
			}
			for _, f := range []string{"kind", "namespace", "tag", "owner"} {
				if _, ok := got.Facets[f]; !ok {
					t.Errorf("facet %s missing: %v", f, got.Facets)
				}
			}
			if ns := got.Facets["namespace"]; len(ns) != 2 || ns[0].Value != "sales" || ns[0].Count != 2 || ns[1].Value != "legacy" {
				t.Errorf("namespace facet: %+v", ns)
			}
			if got.NextOffset != nil {
				t.Errorf("next_offset on the only page: %d", *got.NextOffset)
			}
		})
		t.Run("OwnerAndFilters", func(t *testing.T) {
			if got := search(t, "q=team"); got.Total != 1 || got.Items[0].ID != daily.ID || !slices.Equal(got.Items[0].MatchedIn, []string{"owner"}) {
				t.Errorf("owner search: %+v", got)
			}
			if got := search(t, "owner=team-sales"); got.Total != 1 || got.Items[0].ID != daily.ID {
				t.Errorf("owner filter: %+v", got)
			}
			if got := search(t, "q=orders&namespace=legacy&kind=table"); got.Total != 1 || got.Items[0].ID != old.ID {
				t.Errorf("namespace filter: %+v", got)
			}
		})
		t.Run("Pages", func(t *testing.T) {
			first := search(t, "q=ord&limit=2")
			if len(first.Items) != 2 || first.Total != 3 || first.NextOffset == nil || *first.NextOffset != 2 {
				t.Fatalf("first page: %+v", first)
			}
			second := search(t, "q=ord&limit=2&offset=2")
			if len(second.Items) != 1 || second.NextOffset != nil || second.Items[0].ID == first.Items[0].ID {
				t.Errorf("second page: %+v", second)
			}
		})
		t.Run("Refusals", func(t *testing.T) {
			for _, tc := range []struct{ query, field string }{
				{"", "q"},
				{"q=" + strings.Repeat("x", 201), "q"},
				{"q=" + url.QueryEscape(strings.Repeat("w ", 17)), "q"},
				{"q=x&limit=0x10", "limit"},
				{"q=x&limit=101", "limit"},
				{"q=x&offset=10001", "offset"},
				{"q=x&offset=-1", "offset"},
				{"q=x&kind=spreadsheet", "kind"},
			} {
				got := s.do(t, req{method: "GET", path: "/api/v1/search?" + tc.query, token: s.Read})
				var p problem
				got.decode(t, &p)
				if got.status != 400 || p.Field != tc.field || got.header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%q: %d %s", tc.query, got.status, got.body)
				}
			}
		})
		t.Run("AssetListWithQ", func(t *testing.T) {
			var page struct {
				Items      []asset `json:"items"`
				NextCursor string  `json:"next_cursor"`
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets?q=orders&limit=2"}).decode(t, &page)
			if len(page.Items) != 2 || page.Items[0].ID != exact.ID || page.Items[1].ID != daily.ID || page.NextCursor == "" ||
				len(page.Items[1].Owners) != 1 {
				t.Fatalf("first page: %+v", page)
			}
			cursor := page.NextCursor
			page.Items, page.NextCursor = nil, ""
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets?q=orders&limit=2&cursor=" + cursor}).decode(t, &page)
			if len(page.Items) != 1 || page.Items[0].ID != old.ID || page.NextCursor != "" {
				t.Errorf("second page: %+v", page)
			}
			s.must(t, 400, req{method: "GET", path: "/api/v1/assets?q=sales&limit=2&cursor=" + cursor})
			s.must(t, 400, req{method: "GET", path: "/api/v1/assets?limit=2&cursor=" + cursor})
			page.Items, page.NextCursor = nil, ""
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets?q=orders&status=deleted"}).decode(t, &page)
			if len(page.Items) != 1 || page.Items[0].ID != gone.ID || page.Items[0].Status != "deleted" {
				t.Errorf("deleted: %+v", page)
			}
		})
	})
}
