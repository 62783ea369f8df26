package handlers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestMigrationAPI: a migration whose two sides an external checker reads. Bad specs are
// refused with what to fix and nothing written; posted figures are classified; findings stay
// open until a run shows them gone; cutover waits for the rule.
func TestMigrationAPI(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := startServer(t, db, nil)
		old, nw := s.createAsset(t, "postgres://shop:5432", "shop.public.orders"), s.createAsset(t, "s3://lake", "sales.orders")
		since := time.Now().UTC().Add(-72 * time.Hour).Truncate(24 * time.Hour)
		good := map[string]any{"old_asset_id": old.ID, "new_asset_id": nw.ID, "owner": "team-orders", "key_columns": []string{"order_id"},
			"time_column": "ordered_at", "columns": []string{"amount"}, "window": "24h", "since": since, "dedup_old": "first_wins",
			"dedup_new": "last_wins", "lag_bound": "6h", "cutover": map[string]any{"min_clean_runs": 2, "min_days": 0, "weaker_reason": "a test"},
			"old": map[string]any{"kind": "external"}, "new": map[string]any{"kind": "external"}, "checker_token": "writer"}
		checkMigrationSpecsRefused(t, s, db, good, old.ID)
		mid := createMigration(t, s, good)
		checkMigrationLineage(t, s, old.ID, nw.ID, mid)
		// A run reported by the checker: the second window has a key twice on the new side.
		type side struct {
			Rows, Keys, DuplicateKeys int64
			Checksum                  string
		}
		fig := func(day int, old, nw side) map[string]any {
			f := func(s side) map[string]any {
				return map[string]any{"rows": s.Rows, "keys": s.Keys, "duplicate_keys": s.DuplicateKeys, "checksum": s.Checksum}
			}
			return map[string]any{"start": since.AddDate(0, 0, day), "old": f(old), "new": f(nw)}
		}
		duplicated := []any{fig(0, side{10, 10, 0, "a"}, side{10, 10, 0, "a"}), fig(1, side{10, 10, 0, "b"}, side{11, 10, 1, "b"})}
		clean := []any{fig(0, side{10, 10, 0, "a"}, side{10, 10, 0, "a"}), fig(1, side{10, 10, 0, "b"}, side{10, 10, 0, "b"})}
		base := "/api/v1/migrations/" + mid
		windowsURL := postDuplicatedRun(t, s, base, duplicated)
		checkRunWindows(t, s, base, windowsURL, since)
		archive := map[string]any{"archive": map[string]any{"kind": "external"}}
		checkFindingBlocksCutover(t, s, base, archive)
		postCleanRuns(t, s, base, clean)
		checkCutover(t, s, base, archive)
		s.must(t, 400, req{method: "GET", path: "/api/v1/migrations/nope", token: s.Read})
		s.must(t, 404, req{method: "GET", path: "/api/v1/migrations/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70", token: s.Read})
	})
}

// migrationRun is a reconciliation run as POST /api/v1/migrations/{id}/runs returns it.
type migrationRun struct {
	ID      string   `json:"id"`
	Clean   bool     `json:"clean"`
	Causes  []string `json:"causes"`
	Summary struct {
		Windows, Unclean int
		Classes          map[string]int
	} `json:"summary"`
	WindowsURL string `json:"windows_url"`
}

// migrationFindings is the migration's findings as GET /api/v1/migrations/{id}/findings returns them.
type migrationFindings struct {
	Items []struct {
		Kind, Side, Owner string
		ClosedAt          *time.Time `json:"closed_at"`
	} `json:"items"`
}

// checkMigrationSpecsRefused checks specs with one bad field each are refused and write nothing.
func checkMigrationSpecsRefused(t *testing.T, s *testServer, db *storage.DB, good map[string]any, oldID string) {
	t.Helper()
	for _, tc := range []struct {
		name, field string
		value       any
		status      int
	}{
		{"NoDedupRule", "dedup_new", "", 400},
		{"UnknownDedupRule", "dedup_old", "whatever", 400},
		{"BadWindow", "window", "a day", 400},
		{"NoKeys", "key_columns", []string{}, 400},
		{"SameAsset", "new_asset_id", oldID, 400},
		{"UnknownAsset", "old_asset_id", "0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70", 404},
		{"UnknownSource", "old", map[string]any{"kind": "postgres", "connection": "nowhere", "table": "public.orders"}, 400},
		{"FutureSince", "since", time.Now().Add(48 * time.Hour), 400},
		{"SinceCenturiesBack", "since", time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC), 400},
		{"HugeWindow", "window", "10000h", 400},
		{"WeakRuleWithoutReason", "cutover", map[string]any{"min_clean_runs": 1, "min_days": 0}, 400},
		{"UnknownKeyRule", "old", map[string]any{"kind": "external", "keys": "sometimes"}, 400},
		{"ArchiveFieldsOnASide", "new", map[string]any{"kind": "external", "snapshot_id": 7}, 400},
	} {
		bad := map[string]any{}
		for k, v := range good {
			bad[k] = v
		}
		bad[tc.field] = tc.value
		s.must(t, tc.status, req{method: "POST", path: "/api/v1/migrations", body: bad, token: s.Admin})
	}
	// A spec wrong in three places says all three at once, the first also as detail and field.
	bad := map[string]any{}
	for k, v := range good {
		bad[k] = v
	}
	bad["dedup_new"], bad["key_columns"], bad["owner"] = "", []string{}, ""
	var p struct {
		Field, Detail string
		Problems      []struct{ Field, Detail string }
	}
	s.must(t, 400, req{method: "POST", path: "/api/v1/migrations", body: bad, token: s.Admin}).decode(t, &p)
	var fields []string
	for _, q := range p.Problems {
		fields = append(fields, q.Field)
	}
	if len(p.Problems) != 3 || p.Field != p.Problems[0].Field || p.Detail != p.Problems[0].Detail ||
		!slices.Contains(fields, "owner") || !slices.Contains(fields, "key_columns") || !slices.Contains(fields, "dedup_new") {
		t.Fatalf("a spec with three problems: %+v", p)
	}
	if n, _ := db.Client.DatasetMigration.Query().Count(t.Context()); n != 0 {
		t.Fatalf("refused migrations wrote %d rows", n)
	}
}

// createMigration checks only an admin may create the migration, creates it and returns its id.
func createMigration(t *testing.T, s *testServer, good map[string]any) string {
	t.Helper()
	var m struct {
		ID     string `json:"id"`
		Window string `json:"window"`
	}
	// Creating one is an admin's: its runs read the named source databases and quote values.
	s.must(t, 403, req{method: "POST", path: "/api/v1/migrations", body: good, token: s.Read})
	s.must(t, 403, req{method: "POST", path: "/api/v1/migrations", body: good, token: s.Write})
	s.must(t, 201, req{method: "POST", path: "/api/v1/migrations", body: good, token: s.Admin}).decode(t, &m)
	if m.Window != "24h0m0s" {
		t.Fatalf("migration = %+v", m)
	}
	return m.ID
}

// checkMigrationLineage checks the migration shows in both assets' full and compact lineage.
func checkMigrationLineage(t *testing.T, s *testServer, oldID, nwID, mid string) {
	t.Helper()
	// The move shows in both assets' lineage answers.
	for _, id := range []string{oldID, nwID} {
		var lin struct {
			Relations []struct{ From, To, Kind, Ref string } `json:"relations"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + id + "/lineage", token: s.Read}).decode(t, &lin)
		if len(lin.Relations) != 1 || lin.Relations[0].Kind != "migrated_to" || lin.Relations[0].From != oldID || lin.Relations[0].To != nwID || lin.Relations[0].Ref != mid {
			t.Fatalf("lineage of %s: relations %+v", id, lin.Relations)
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + id + "/lineage/compact", token: s.Read}).decode(t, &lin)
		if len(lin.Relations) != 1 || lin.Relations[0].Kind != "migrated_to" {
			t.Fatalf("compact lineage of %s: relations %+v", id, lin.Relations)
		}
	}
}

// postDuplicatedRun posts a run with a duplicated key, checks its summary and returns its windows URL.
func postDuplicatedRun(t *testing.T, s *testServer, base string, windows []any) string {
	t.Helper()
	var run migrationRun
	s.must(t, 201, req{method: "POST", path: base + "/runs", token: s.Write, body: map[string]any{"windows": windows}}).decode(t, &run)
	if run.Clean || run.Summary.Windows != 2 || run.Summary.Unclean != 1 || run.Summary.Classes["duplication"] != 1 {
		t.Fatalf("run with a duplicate = %+v", run)
	}
	return run.WindowsURL
}

// checkRunWindows pages and filters the run's windows and checks bad window and run requests are refused.
func checkRunWindows(t *testing.T, s *testServer, base, windowsURL string, since time.Time) {
	t.Helper()
	var page struct {
		Items []struct {
			Classes []string `json:"classes"`
		} `json:"items"`
		NextAfter *time.Time `json:"next_after"`
	}
	// The windows are a page away, one at a time here.
	s.must(t, 200, req{method: "GET", path: windowsURL + "?limit=1", token: s.Read}).decode(t, &page)
	if len(page.Items) != 1 || len(page.Items[0].Classes) != 0 || page.NextAfter == nil {
		t.Fatalf("first page of windows = %+v", page)
	}
	next := page.NextAfter.Format(time.RFC3339Nano)
	page.NextAfter = nil // decode leaves absent fields as they were
	s.must(t, 200, req{method: "GET", path: windowsURL + "?limit=1&after=" + next, token: s.Read}).decode(t, &page)
	if len(page.Items) != 1 || !slices.Equal(page.Items[0].Classes, []string{"duplication"}) || page.NextAfter != nil {
		t.Fatalf("second page of windows = %+v", page)
	}
	s.must(t, 200, req{method: "GET", path: windowsURL + "?differing=true", token: s.Read}).decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("differing windows = %+v", page)
	}
	s.must(t, 400, req{method: "GET", path: windowsURL + "?limit=501", token: s.Read})
	s.must(t, 404, req{method: "GET", path: base + "/runs/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/windows", token: s.Read})
	s.must(t, 400, req{method: "POST", path: base + "/runs", token: s.Write, body: map[string]any{"windows": []any{
		map[string]any{"start": since.Add(time.Hour), "old": map[string]any{}, "new": map[string]any{}}}}})
}

// checkFindingBlocksCutover checks the duplication is an open finding and cutover is refused.
func checkFindingBlocksCutover(t *testing.T, s *testServer, base string, archive map[string]any) {
	t.Helper()
	var findings migrationFindings
	s.must(t, 200, req{method: "GET", path: base + "/findings", token: s.Read}).decode(t, &findings)
	if len(findings.Items) != 1 || findings.Items[0].Kind != "duplication" || findings.Items[0].Side != "new" || findings.Items[0].ClosedAt != nil {
		t.Fatalf("findings = %+v", findings)
	}
	if p := s.must(t, 400, req{method: "POST", path: base + "/cutover", token: s.Admin}); !strings.Contains(string(p.body), "name the archive") {
		t.Fatalf("cutover without an archive: %s", p.body)
	}
	s.must(t, 409, req{method: "POST", path: base + "/cutover", token: s.Admin, body: archive})
}

// postCleanRuns posts two clean runs and checks they close the duplication finding.
func postCleanRuns(t *testing.T, s *testServer, base string, windows []any) {
	t.Helper()
	var run migrationRun
	for range 2 {
		s.must(t, 201, req{method: "POST", path: base + "/runs", token: s.Write, body: map[string]any{"windows": windows}}).decode(t, &run)
		if !run.Clean {
			t.Fatalf("clean figures: %+v", run)
		}
	}
	var findings migrationFindings
	s.must(t, 200, req{method: "GET", path: base + "/findings", token: s.Read}).decode(t, &findings)
	if findings.Items[0].ClosedAt == nil {
		t.Fatalf("the duplication is still open after clean runs: %+v", findings)
	}
}

// checkCutover checks the migration is ready, cuts it over as an admin only once, and lists its runs.
func checkCutover(t *testing.T, s *testServer, base string, archive map[string]any) {
	t.Helper()
	var st struct {
		Ready  bool `json:"ready_to_cut_over"`
		Streak struct {
			Runs         int      `json:"runs"`
			BrokenCauses []string `json:"broken_causes"`
		} `json:"streak"`
	}
	s.must(t, 200, req{method: "GET", path: base, token: s.Read}).decode(t, &st)
	if !st.Ready || st.Streak.Runs != 2 || len(st.Streak.BrokenCauses) == 0 {
		t.Fatalf("status = %+v", st)
	}
	s.must(t, 403, req{method: "POST", path: base + "/cutover", token: s.Write, body: archive})
	s.must(t, 400, req{method: "POST", path: base + "/cutover", token: s.Admin, body: map[string]any{"archive": map[string]any{"kind": "iceberg"}}})
	s.must(t, 200, req{method: "POST", path: base + "/cutover", token: s.Admin, body: archive})
	s.must(t, 409, req{method: "POST", path: base + "/cutover", token: s.Admin, body: archive})
	var runs struct {
		Items []struct{ Origin string } `json:"items"`
	}
	s.must(t, 200, req{method: "GET", path: base + "/runs", token: s.Read}).decode(t, &runs)
	if len(runs.Items) != 3 || runs.Items[0].Origin != "external" {
		t.Fatalf("runs = %+v", runs)
	}
}

// TestMigrationEvents: deploys are recorded with who recorded them, refused when they could not
// have happened (the future, before the first window) or are of no known kind, and a rule that
// asks for one says so until the streak spans a deploy.
func TestMigrationEvents(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := startServer(t, db, nil)
		old, nw := s.createAsset(t, "postgres://shop:5432", "shop.public.orders"), s.createAsset(t, "s3://lake", "sales.orders")
		since := time.Now().UTC().Add(-72 * time.Hour).Truncate(24 * time.Hour)
		var m struct{ ID string }
		s.must(t, 201, req{method: "POST", path: "/api/v1/migrations", token: s.Admin, body: map[string]any{
			"old_asset_id": old.ID, "new_asset_id": nw.ID, "owner": "team-orders", "key_columns": []string{"order_id"},
			"time_column": "ordered_at", "columns": []string{"amount"}, "window": "24h", "since": since, "dedup_old": "first_wins",
			"dedup_new": "first_wins", "cutover": map[string]any{"min_clean_runs": 3, "min_days": 7, "include_deploy": true},
			"old": map[string]any{"kind": "external"}, "new": map[string]any{"kind": "external", "keys": "history"}}}).decode(t, &m)
		base := "/api/v1/migrations/" + m.ID
		for _, bad := range []map[string]any{
			{"kind": "release"},
			{"kind": "deploy", "at": time.Now().Add(time.Hour)},
			{"kind": "deploy", "at": since.Add(-time.Hour)},
			{"kind": "deploy", "note": strings.Repeat("x", 1001)},
		} {
			s.must(t, 400, req{method: "POST", path: base + "/events", token: s.Write, body: bad})
		}
		s.must(t, 403, req{method: "POST", path: base + "/events", token: s.Read, body: map[string]any{"kind": "deploy"}})
		at := since.Add(30 * time.Hour)
		s.must(t, 201, req{method: "POST", path: base + "/events", token: s.Write, body: map[string]any{"kind": "deploy", "at": at, "note": "orders-writer 2.4.0"}})
		var evs struct {
			Items []struct {
				Kind, Note string
				At         time.Time `json:"at"`
				RecordedBy string    `json:"recorded_by"`
			} `json:"items"`
		}
		s.must(t, 200, req{method: "GET", path: base + "/events", token: s.Read}).decode(t, &evs)
		if len(evs.Items) != 1 || evs.Items[0].Kind != "deploy" || !evs.Items[0].At.Equal(at) || evs.Items[0].RecordedBy != "writer" || evs.Items[0].Note != "orders-writer 2.4.0" {
			t.Fatalf("events = %+v", evs)
		}
		var st struct {
			Missing []string `json:"missing"`
			Rule    struct {
				MinCleanRuns  int  `json:"min_clean_runs"`
				IncludeDeploy bool `json:"include_deploy"`
			} `json:"rule"`
			Streak struct {
				Deploys     int  `json:"deploys"`
				SpansDeploy bool `json:"spans_deploy"`
			} `json:"streak"`
			Migration struct {
				New struct{ Keys string } `json:"new"`
				Old struct{ Keys string } `json:"old"`
			} `json:"migration"`
		}
		s.must(t, 200, req{method: "GET", path: base, token: s.Read}).decode(t, &st)
		if st.Streak.Deploys != 1 || st.Streak.SpansDeploy || !st.Rule.IncludeDeploy || st.Rule.MinCleanRuns != 3 ||
			!slices.ContainsFunc(st.Missing, func(m string) bool { return strings.Contains(m, "deploy inside the streak") }) ||
			st.Migration.New.Keys != "history" || st.Migration.Old.Keys != "unique" {
			t.Fatalf("status = %+v", st)
		}
	})
}

// TestMigrationList: GET /api/v1/migrations pages the migrations newest first with a cursor,
// narrows them to an asset's, and refuses a bad page size or cursor saying what to pass.
func TestMigrationList(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := startServer(t, db, nil)
		since := time.Now().UTC().Add(-72 * time.Hour).Truncate(24 * time.Hour)
		var ids []string
		var firstOld string
		for i := range 3 {
			old, nw := s.createAsset(t, "pg://shop", fmt.Sprintf("orders_%d", i)), s.createAsset(t, "s3://lake", fmt.Sprintf("orders_%d", i))
			if i == 0 {
				firstOld = old.ID
			}
			var m struct {
				ID string `json:"id"`
			}
			s.must(t, 201, req{method: "POST", path: "/api/v1/migrations", token: s.Admin, body: map[string]any{"old_asset_id": old.ID, "new_asset_id": nw.ID,
				"owner": "team-orders", "key_columns": []string{"order_id"}, "time_column": "ordered_at", "columns": []string{"amount"}, "window": "24h",
				"since": since, "dedup_old": "first_wins", "dedup_new": "first_wins", "lag_bound": "6h",
				"cutover": map[string]any{"min_clean_runs": 3, "min_days": 7}, "old": map[string]any{"kind": "external"}, "new": map[string]any{"kind": "external"}}}).decode(t, &m)
			ids = append(ids, m.ID)
		}
		type page struct {
			Items []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		got := func(p page) []string {
			var out []string
			for _, it := range p.Items {
				out = append(out, it.ID)
			}
			return out
		}
		var first, second, all, mine page
		s.must(t, 200, req{method: "GET", path: "/api/v1/migrations?limit=2", token: s.Read}).decode(t, &first)
		if want := []string{ids[2], ids[1]}; !slices.Equal(got(first), want) || first.NextCursor == "" {
			t.Fatalf("first page %v (cursor %q), want %v and a cursor", got(first), first.NextCursor, want)
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/migrations?limit=2&cursor=" + first.NextCursor, token: s.Read}).decode(t, &second)
		if want := []string{ids[0]}; !slices.Equal(got(second), want) || second.NextCursor != "" {
			t.Fatalf("second page %v (cursor %q), want %v and no cursor", got(second), second.NextCursor, want)
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/migrations", token: s.Read}).decode(t, &all)
		if len(all.Items) != 3 || all.Items[0].State != "active" {
			t.Fatalf("default page: %+v", all)
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/migrations?asset=" + firstOld, token: s.Read}).decode(t, &mine)
		if !slices.Equal(got(mine), []string{ids[0]}) {
			t.Fatalf("migrations of one asset: %v, want %v", got(mine), ids[:1])
		}
		for _, tc := range []struct{ name, query, says string }{
			{"ZeroPageSize", "limit=0", "limit must be a whole number from 1 to 100"},
			{"PageSizeTooLarge", "limit=101", "limit must be a whole number from 1 to 100"},
			{"PageSizeNotANumber", "limit=ten", "limit must be a whole number"},
			{"ForgedCursor", "cursor=nonsense", "pass next_cursor from the previous page"},
			{"CursorOfAnotherFilter", "asset=" + firstOld + "&cursor=" + first.NextCursor, "issued for different filters"},
			{"BadAsset", "asset=orders", "is not an asset ID"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.must(t, 400, req{method: "GET", path: "/api/v1/migrations?" + tc.query, token: s.Read})
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") || !strings.Contains(string(r.body), tc.says) {
					t.Fatalf("%s: %s %s; want problem+json saying %q", tc.query, ct, r.body, tc.says)
				}
			})
		}
	})
}
