package handlers_test

import (
	"maps"
	"net/http"
	"testing"
)

// TestSubscriptions: a token subscribes itself with the write scope, an admin anyone; refused
// requests answer a problem saying what to fix and write nothing; GET lists who is subscribed
// and whether each has a webhook.
func TestSubscriptions(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "warehouse", "orders")
		path := func(principal string) string { return "/api/v1/assets/" + a.ID + "/subscriptions/" + principal }
		before := s.counts(t)
		for _, tc := range []struct {
			name   string
			r      req
			status int
		}{
			{"NoToken", req{method: "PUT", path: path("writer")}, http.StatusUnauthorized},
			{"ReadScope", req{method: "PUT", path: path("reader"), token: s.Read}, http.StatusForbidden},
			{"SomeoneElse", req{method: "PUT", path: path("alice"), token: s.Write}, http.StatusForbidden},
			{"SomeoneElseDelete", req{method: "DELETE", path: path("alice"), token: s.Write}, http.StatusForbidden},
			{"NotAnID", req{method: "PUT", path: "/api/v1/assets/orders/subscriptions/writer", token: s.Write}, http.StatusBadRequest},
			{"UnknownAsset", req{method: "PUT", path: "/api/v1/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/subscriptions/writer", token: s.Write}, http.StatusNotFound},
			{"PaddedPrincipal", req{method: "PUT", path: path("%20alice"), token: s.Admin}, http.StatusBadRequest},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var p problem
				s.must(t, tc.status, tc.r).decode(t, &p)
				if p.Detail == "" {
					t.Errorf("problem without a detail: %+v", p)
				}
			})
		}
		if after := s.counts(t); !maps.Equal(before, after) {
			t.Fatalf("refused requests wrote rows: %v -> %v", before, after)
		}

		type sub struct {
			Principal  string `json:"principal"`
			HasWebhook bool   `json:"has_webhook"`
			Note       string `json:"note"`
		}
		var got sub
		s.must(t, http.StatusCreated, req{method: "PUT", path: path("writer"), token: s.Write}).decode(t, &got)
		if got.Principal != "writer" || got.HasWebhook || got.Note == "" {
			t.Errorf("subscribed without a webhook: %+v; want the note saying how to set one", got)
		}
		s.must(t, http.StatusOK, req{method: "PUT", path: path("writer"), token: s.Write})
		s.must(t, http.StatusOK, req{method: "PUT", path: "/api/v1/webhooks/alice", token: s.Admin, body: map[string]any{"url": "http://127.0.0.1:9/hook"}})
		s.must(t, http.StatusCreated, req{method: "PUT", path: path("alice"), token: s.Admin})

		var list struct {
			Items []sub `json:"items"`
		}
		s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/assets/" + a.ID + "/subscriptions"}).decode(t, &list)
		if len(list.Items) != 2 || list.Items[0].Principal != "alice" || !list.Items[0].HasWebhook || list.Items[1].Principal != "writer" || list.Items[1].HasWebhook {
			t.Fatalf("subscriptions: %+v; want alice (webhook) and writer (none)", list.Items)
		}
		var del struct {
			Removed bool `json:"removed"`
		}
		s.must(t, http.StatusOK, req{method: "DELETE", path: path("writer"), token: s.Write}).decode(t, &del)
		if !del.Removed {
			t.Error("unsubscribe removed nothing")
		}
		s.must(t, http.StatusOK, req{method: "DELETE", path: path("writer"), token: s.Write}).decode(t, &del)
		if del.Removed {
			t.Error("a second unsubscribe removed something")
		}
	})
}
