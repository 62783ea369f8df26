package handlers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

var fixtures atomic.Int64

// migrationFixture creates a migration over two new assets with the given sides, as an admin.
func migrationFixture(t *testing.T, s *testServer, since time.Time, window string, sides map[string]any) string {
	t.Helper()
	n := fixtures.Add(1)
	old, nw := s.createAsset(t, "postgres://shop:5432", fmt.Sprintf("shop.public.orders%d", n)), s.createAsset(t, "s3://lake", fmt.Sprintf("sales.orders%d", n))
	body := map[string]any{"old_asset_id": old.ID, "new_asset_id": nw.ID, "owner": "team-orders", "key_columns": []string{"order_id"},
		"time_column": "ordered_at", "columns": []string{"amount"}, "window": window, "since": since, "dedup_old": "first_wins",
		"dedup_new": "first_wins", "lag_bound": "1h", "cutover": map[string]any{"min_clean_runs": 2, "min_days": 0, "weaker_reason": "a test"}}
	for k, v := range sides {
		body[k] = v
	}
	var m struct{ ID string }
	s.must(t, 201, req{method: "POST", path: "/api/v1/migrations", body: body, token: s.Admin}).decode(t, &m)
	return "/api/v1/migrations/" + m.ID
}

type figs struct {
	Rows          int64  `json:"rows"`
	Keys          int64  `json:"keys"`
	DuplicateKeys int64  `json:"duplicate_keys"`
	Checksum      string `json:"checksum"`
}

func window(start time.Time, old, nw figs) map[string]any {
	return map[string]any{"start": start, "old": old, "new": nw}
}

var external = map[string]any{"old": map[string]any{"kind": "external"}, "new": map[string]any{"kind": "external"}, "checker_token": "writer"}

// TestPostedFiguresAreGuarded: posted figures are taken only for a side Tidemark cannot read,
// only from the checker the migration names or an admin, and only when some side could have
// them; a run that compared nothing is not clean. Each refusal writes nothing.
func TestPostedFiguresAreGuarded(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := startServer(t, db, nil)
		since := time.Now().UTC().Add(-72 * time.Hour).Truncate(24 * time.Hour)
		clean := []any{window(since, figs{10, 10, 0, "a"}, figs{10, 10, 0, "a"})}

		// Sides Tidemark reads itself take no posted figures, not even an admin's.
		own := migrationFixture(t, s, since, "24h", map[string]any{"old": map[string]any{"kind": "iceberg"}, "new": map[string]any{"kind": "iceberg"}})
		s.must(t, 409, req{method: "POST", path: own + "/runs", token: s.Admin, body: map[string]any{"windows": clean}})

		// Another write token may not post for the checker the migration names.
		other, _, err := auth.NewStore(db.Client, nil).Create(t.Context(), "someone-else", []auth.Scope{auth.ScopeWrite})
		if err != nil {
			t.Fatal(err)
		}
		base := migrationFixture(t, s, since, "24h", external)
		s.must(t, 403, req{method: "POST", path: base + "/runs", token: other, body: map[string]any{"windows": clean}})
		noChecker := migrationFixture(t, s, since, "24h", map[string]any{"old": map[string]any{"kind": "external"}, "new": map[string]any{"kind": "external"}})
		s.must(t, 403, req{method: "POST", path: noChecker + "/runs", token: s.Write, body: map[string]any{"windows": clean}})
		s.must(t, 201, req{method: "POST", path: noChecker + "/runs", token: s.Admin, body: map[string]any{"windows": clean}})

		before := s.counts(t)
		day := func(i int) time.Time { return since.AddDate(0, 0, i) }
		for _, tc := range []struct {
			name    string
			windows []any
		}{
			{"NegativeRows", []any{window(day(0), figs{-1, 0, 0, ""}, figs{0, 0, 0, ""})}},
			{"MoreKeysThanRows", []any{window(day(0), figs{1, 2, 0, "a"}, figs{1, 1, 0, "a"})}},
			{"MoreDuplicatesThanRowsAllow", []any{window(day(0), figs{3, 2, 2, "a"}, figs{3, 2, 0, "a"})}},
			{"MinInt64Keys", []any{window(day(0), figs{1, 1, 0, "a"}, figs{0, math.MinInt64, 0, ""})}},
			{"RowsOverflow", []any{window(day(0), figs{math.MaxInt64, 1, 0, "a"}, figs{1, 1, 0, "a"}), window(day(1), figs{math.MaxInt64, 1, 0, "a"}, figs{1, 1, 0, "a"})}},
			{"EmptyChecksumWithRows", []any{window(day(0), figs{10, 10, 0, ""}, figs{10, 10, 0, "a"})}},
			{"ChecksumWithSpaces", []any{window(day(0), figs{10, 10, 0, "a b"}, figs{10, 10, 0, "a b"})}},
			{"VersionsOnAUniqueSide", []any{map[string]any{"start": day(0), "old": map[string]any{"rows": 3, "keys": 2, "versions": 1, "checksum": "a"},
				"new": map[string]any{"rows": 2, "keys": 2, "checksum": "a"}}}},
			{"NegativeVersions", []any{map[string]any{"start": day(0), "old": map[string]any{"rows": 2, "keys": 2, "versions": -1, "checksum": "a"},
				"new": map[string]any{"rows": 2, "keys": 2, "checksum": "a"}}}},
			{"WindowInTheFuture", []any{window(time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2), figs{1, 1, 0, "a"}, figs{1, 1, 0, "a"})}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s.must(t, 400, req{method: "POST", path: base + "/runs", token: s.Write, body: map[string]any{"windows": tc.windows}})
			})
		}
		if after := s.counts(t); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("refused figures wrote rows: before %v, after %v", before, after)
		}

		// Windows that held no rows on either side compared nothing: not clean.
		var run struct {
			Clean  bool     `json:"clean"`
			Causes []string `json:"causes"`
		}
		s.must(t, 201, req{method: "POST", path: base + "/runs", token: s.Write, body: map[string]any{"windows": []any{
			window(day(0), figs{0, 0, 0, ""}, figs{0, 0, 0, ""})}}}).decode(t, &run)
		if run.Clean || len(run.Causes) != 1 {
			t.Fatalf("a run over no rows = %+v; want not clean, with the cause", run)
		}
	})
}

// TestMigrationSpansAreBounded: a migration's span is bounded in windows, and a run's list
// answer is a summary whatever its windows: a run of 3,000 diverging windows answers a few
// kilobytes, and its windows come a page at a time.
func TestMigrationSpansAreBounded(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := startServer(t, db, nil)
		old, nw := s.createAsset(t, "postgres://shop:5432", "a"), s.createAsset(t, "s3://lake", "b")
		s.must(t, 400, req{method: "POST", path: "/api/v1/migrations", token: s.Admin, body: map[string]any{
			"old_asset_id": old.ID, "new_asset_id": nw.ID, "owner": "o", "key_columns": []string{"k"}, "time_column": "t", "columns": []string{"v"},
			"window": "1m", "since": time.Now().UTC().AddDate(0, 0, -30), "dedup_old": "first_wins", "dedup_new": "first_wins",
			"cutover": map[string]any{"min_clean_runs": 1, "weaker_reason": "a test"}, "old": map[string]any{"kind": "external"}, "new": map[string]any{"kind": "external"}}})

		since := time.Now().UTC().Add(-4000 * time.Hour).Truncate(time.Hour)
		base := migrationFixture(t, s, since, "1h", external)
		var ws []any
		for i := range 3000 {
			ws = append(ws, window(since.Add(time.Duration(i)*time.Hour), figs{10, 10, 0, "a"}, figs{10, 10, 0, fmt.Sprintf("b%d", i)}))
		}
		s.must(t, 201, req{method: "POST", path: base + "/runs", token: s.Write, body: map[string]any{"windows": ws}})
		list := s.must(t, 200, req{method: "GET", path: base + "/runs?limit=500", token: s.Read})
		var runs struct {
			Items []struct {
				Causes  []string `json:"causes"`
				Summary struct {
					Windows     int `json:"windows"`
					Unclean     int `json:"unclean"`
					CausesTotal int `json:"causes_total"`
				} `json:"summary"`
				WindowsURL string `json:"windows_url"`
			} `json:"items"`
		}
		list.decode(t, &runs)
		if len(runs.Items) != 1 || runs.Items[0].Summary.Windows != 3000 || runs.Items[0].Summary.Unclean != 3000 ||
			runs.Items[0].Summary.CausesTotal != 3000 || len(runs.Items[0].Causes) > 50 {
			t.Fatalf("run summary = %+v", runs.Items)
		}
		if len(list.body) > 32<<10 {
			t.Fatalf("the list of one run of 3,000 windows is %d bytes; a summary is a few kilobytes", len(list.body))
		}
		seen, after := 0, ""
		for range 10 {
			var page struct {
				Items     []json.RawMessage `json:"items"`
				NextAfter *time.Time        `json:"next_after"`
			}
			s.must(t, 200, req{method: "GET", path: runs.Items[0].WindowsURL + "?limit=500" + after, token: s.Read}).decode(t, &page)
			seen += len(page.Items)
			if page.NextAfter == nil {
				break
			}
			after = "&after=" + page.NextAfter.Format(time.RFC3339Nano)
		}
		if seen != 3000 {
			t.Fatalf("paged through %d windows; want 3000", seen)
		}
	})
}

// TestConcurrentPostedRunsKeepOneFindingAWindow: eight clients post runs at once; one run of a
// migration runs at a time (the others are refused), so each diverging window has one open
// finding, and a clean run afterwards closes them all.
func TestConcurrentPostedRunsKeepOneFindingAWindow(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := startServer(t, db, nil)
		since := time.Now().UTC().Add(-72 * time.Hour).Truncate(24 * time.Hour)
		base := migrationFixture(t, s, since, "24h", external)
		diverging, _ := json.Marshal(map[string]any{"windows": []any{
			window(since, figs{10, 10, 0, "a"}, figs{10, 10, 0, "x"}), window(since.AddDate(0, 0, 1), figs{10, 10, 0, "b"}, figs{12, 10, 2, "b"})}})
		var wg sync.WaitGroup
		statuses := make(chan int, 8)
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				hr, _ := http.NewRequest("POST", s.URL+base+"/runs", bytes.NewReader(diverging))
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Authorization", "Bearer "+s.Write)
				res, err := http.DefaultClient.Do(hr)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				statuses <- res.StatusCode
			})
		}
		close(start)
		wg.Wait()
		close(statuses)
		ok := 0
		for st := range statuses {
			switch st {
			case 201:
				ok++
			case 409:
			default:
				t.Errorf("a concurrent run answered %d; want 201 or 409", st)
			}
		}
		if ok == 0 {
			t.Fatal("no concurrent run was recorded")
		}
		var findings struct {
			Items []struct {
				Kind        string     `json:"kind"`
				Side        string     `json:"side"`
				WindowStart time.Time  `json:"window_start"`
				ClosedAt    *time.Time `json:"closed_at"`
			} `json:"items"`
		}
		s.must(t, 200, req{method: "GET", path: base + "/findings", token: s.Read}).decode(t, &findings)
		open := map[string]int{}
		for _, f := range findings.Items {
			if f.ClosedAt == nil {
				open[f.Kind+"/"+f.Side+"/"+f.WindowStart.String()]++
			}
		}
		if len(open) != 2 {
			t.Fatalf("open findings %v after %d runs; want one divergence and one duplication", open, ok)
		}
		for k, n := range open {
			if n != 1 {
				t.Fatalf("finding %s is open %d times after %d concurrent runs", k, n, ok)
			}
		}
	})
}
