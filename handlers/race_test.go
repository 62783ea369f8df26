package handlers_test

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentChangesWithoutIfMatch: a change sent without If-Match means "whatever the
// current version is"; many at once on one asset all succeed (PostgreSQL answered most of them
// 412 and lost owners), and a delete among them wins without a 412.
func TestConcurrentChangesWithoutIfMatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "w", "contended")
		path := "/api/v1/assets/" + a.ID
		const n = 40
		statuses := make([]int, 2*n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(2)
			go func() {
				defer wg.Done()
				statuses[i] = s.do(t, req{method: "PUT", path: fmt.Sprintf("%s/owners/p%02d", path, i), token: s.Write,
					body: map[string]string{"role": "technical"}}).status
			}()
			go func() {
				defer wg.Done()
				statuses[n+i] = s.do(t, req{method: "POST", path: path + "/external-ids", token: s.Write,
					body: map[string]string{"system": "dbt", "value": fmt.Sprintf("model.x%02d", i)}}).status
			}()
		}
		wg.Wait()
		for i, st := range statuses {
			if st != 200 {
				t.Errorf("request %d = %d, want 200", i, st)
			}
		}
		var got asset
		s.must(t, 200, req{method: "GET", path: path}).decode(t, &got)
		if len(got.Owners) != n || len(got.ExternalIDs) != n {
			t.Fatalf("after %d owner PUTs and %d binds: %d owners, %d external IDs", n, n, len(got.Owners), len(got.ExternalIDs))
		}
		if want := int64(1 + 2*n); got.Version != want {
			t.Errorf("version = %d, want %d (one per change)", got.Version, want)
		}

		// A delete racing owner changes: it succeeds; the changes after it are conflicts (409),
		// never stale versions (412).
		statuses = make([]int, n+1)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = s.do(t, req{method: "PUT", path: fmt.Sprintf("%s/owners/q%02d", path, i), token: s.Write,
					body: map[string]string{"role": "technical"}}).status
			}()
		}
		statuses[n] = s.do(t, req{method: "DELETE", path: path, token: s.Write}).status
		wg.Wait()
		if statuses[n] != 200 {
			t.Fatalf("DELETE without If-Match among concurrent changes = %d, want 200", statuses[n])
		}
		for i, st := range statuses[:n] {
			if st != 200 && st != 409 {
				t.Errorf("owner PUT %d racing the delete = %d, want 200 or 409", i, st)
			}
		}
	})
}
