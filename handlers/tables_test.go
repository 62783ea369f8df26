package handlers_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/tables/tablestest"
)

type tableBody struct {
	AssetID           string `json:"asset_id"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	TableUUID         string `json:"table_uuid"`
	MetadataLocation  string `json:"metadata_location"`
	CurrentSnapshotID int64  `json:"current_snapshot_id"`
	CurrentSnapshot   struct {
		DataFiles int64 `json:"data_files"`
		Records   int64 `json:"records"`
	} `json:"current_snapshot"`
	PartitionSpecs []struct {
		Fields []struct {
			Transform string `json:"transform"`
		} `json:"fields"`
	} `json:"partition_specs"`
}

func TestTablesAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		l := tablestest.NewLake(t)
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		tbl := l.Append(l.Create("db.events", tablestest.HourSpec()), tablestest.Rows(0, 6, start))
		tbl = l.Append(tbl, tablestest.Rows(6, 6, start))

		checkRefusedRegistrations(t, s, l, tbl)
		id := registerAndReadTable(t, s, tbl)
		checkTableFilesPaged(t, s, l, tbl, id)
		checkTableReadsRefused(t, s, id)
		checkTableHealth(t, s, id)
		checkTableSync(t, s)
	})
}

// checkRefusedRegistrations checks bad table registrations are refused and write nothing.
func checkRefusedRegistrations(t *testing.T, s *testServer, l *tablestest.Lake, tbl *table.Table) {
	t.Helper()
	// Refused input writes nothing.
	before := s.counts(t)
	for _, tc := range []struct {
		token string
		body  any
		want  int
	}{
		{s.Write, map[string]any{}, 400},
		{s.Write, map[string]any{"metadata_location": tbl.MetadataLocation(), "colour": "red"}, 400},
		{s.Write, map[string]any{"metadata_location": "file://" + l.Dir + "/nothing.metadata.json"}, 400},
		// Percent-encoded '..' that iceberg-go's IO would decode and a literal check would not.
		{s.Write, map[string]any{"metadata_location": encodedDots(tbl.MetadataLocation())}, 400},
		{s.Write, map[string]any{"metadata_location": tbl.MetadataLocation(), "name": "only-a-name"}, 400},
		{s.Read, map[string]any{"metadata_location": tbl.MetadataLocation()}, 403},
		{"", map[string]any{"metadata_location": tbl.MetadataLocation()}, 401},
	} {
		r := s.must(t, tc.want, req{method: "POST", path: "/api/v1/tables", token: tc.token, body: tc.body})
		if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%v: Content-Type %q", tc.body, ct)
		}
	}
	if after := s.counts(t); !maps.Equal(before, after) {
		t.Fatalf("refused registrations wrote rows: %v -> %v", before, after)
	}
}

// registerAndReadTable registers tbl, checks the table and its snapshots, and returns its asset id.
func registerAndReadTable(t *testing.T, s *testServer, tbl *table.Table) string {
	t.Helper()
	var reg struct {
		Table   tableBody `json:"table"`
		Refresh struct {
			ManifestsRead int `json:"manifests_read"`
			Snapshots     int `json:"snapshots"`
		} `json:"refresh"`
	}
	s.must(t, 200, req{method: "POST", path: "/api/v1/tables", token: s.Write, body: map[string]any{"metadata_location": tbl.MetadataLocation()}}).decode(t, &reg)
	if reg.Refresh.ManifestsRead != 2 || reg.Refresh.Snapshots != 2 || reg.Table.TableUUID != tbl.Metadata().TableUUID().String() {
		t.Fatalf("register: %+v", reg)
	}
	id := reg.Table.AssetID
	var got tableBody
	s.must(t, 200, req{method: "GET", path: "/api/v1/tables/" + id}).decode(t, &got)
	if got.CurrentSnapshotID != tbl.CurrentSnapshot().SnapshotID || got.CurrentSnapshot.DataFiles != 12 || got.CurrentSnapshot.Records != 12 ||
		len(got.PartitionSpecs) != 1 || got.PartitionSpecs[0].Fields[0].Transform != "hour" {
		t.Fatalf("table: %+v", got)
	}

	var snaps struct {
		Snapshots []struct {
			ID int64 `json:"id"`
		} `json:"snapshots"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/tables/" + id + "/snapshots"}).decode(t, &snaps)
	if len(snaps.Snapshots) != 2 {
		t.Fatalf("snapshots: %+v", snaps)
	}
	return id
}

// checkTableFilesPaged pages through each snapshot's files and compares them with iceberg-go's listing.
func checkTableFilesPaged(t *testing.T, s *testServer, l *tablestest.Lake, tbl *table.Table, id string) {
	t.Helper()
	// Files, paged, match iceberg-go's own listing of each snapshot.
	for _, sn := range tbl.Metadata().Snapshots() {
		want := l.Files(tbl, sn)
		seen := map[string][3]int64{}
		cursor := ""
		for pages := 0; ; pages++ {
			var page struct {
				Items []struct {
					Path      string         `json:"path"`
					SizeBytes int64          `json:"size_bytes"`
					Records   int64          `json:"records"`
					Partition map[string]any `json:"partition"`
				} `json:"items"`
				NextCursor string `json:"next_cursor"`
			}
			path := fmt.Sprintf("/api/v1/tables/%s/files?snapshot=%d&limit=5&cursor=%s", id, sn.SnapshotID, url.QueryEscape(cursor))
			s.must(t, 200, req{method: "GET", path: path}).decode(t, &page)
			for _, f := range page.Items {
				if _, ok := f.Partition["ts_hour"]; !ok {
					t.Fatalf("file %s has no ts_hour partition: %v", f.Path, f.Partition)
				}
				seen[f.Path] = [3]int64{f.SizeBytes, f.Records, 0} // data files only in this table
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if !maps.Equal(seen, want) {
			t.Fatalf("snapshot %d: API lists %v, iceberg-go %v", sn.SnapshotID, seen, want)
		}
	}
}

// checkTableReadsRefused checks bad file queries, an unknown table and a malformed id are refused.
func checkTableReadsRefused(t *testing.T, s *testServer, id string) {
	t.Helper()
	s.must(t, 400, req{method: "GET", path: "/api/v1/tables/" + id + "/files?cursor=bm90LWEtY3Vyc29y"})
	s.must(t, 400, req{method: "GET", path: "/api/v1/tables/" + id + "/files?snapshot=x"})
	s.must(t, 404, req{method: "GET", path: "/api/v1/tables/" + id + "/files?snapshot=42"})
	s.must(t, 400, req{method: "GET", path: "/api/v1/tables/" + id + "/files?limit=100000"})
	s.must(t, 404, req{method: "GET", path: "/api/v1/tables/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70"})
	s.must(t, 400, req{method: "GET", path: "/api/v1/tables/not-an-id/health"})
}

// checkTableHealth checks the table's health report counts its partitions and small files.
func checkTableHealth(t *testing.T, s *testServer, id string) {
	t.Helper()
	var h struct {
		Partitions      int64 `json:"partitions"`
		DataFiles       int64 `json:"data_files"`
		SmallFiles      int64 `json:"small_files"`
		Recommendations []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"recommendations"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/tables/" + id + "/health"}).decode(t, &h)
	if h.Partitions != 6 || h.DataFiles != 12 || h.SmallFiles != 12 {
		t.Fatalf("health: %+v", h)
	}
}

// checkTableSync checks sync needs admin and, with no connection configured, records one empty sync.
func checkTableSync(t *testing.T, s *testServer) {
	t.Helper()
	// Sync needs admin; with no connection configured it reports nothing to do.
	s.must(t, 403, req{method: "POST", path: "/api/v1/tables/sync", token: s.Write})
	admin := s.Admin
	var rep struct {
		Connections []any `json:"connections"`
		Errors      int   `json:"errors"`
	}
	s.must(t, 200, req{method: "POST", path: "/api/v1/tables/sync", token: admin}).decode(t, &rep)
	if len(rep.Connections) != 0 || rep.Errors != 0 {
		t.Fatalf("sync without connections: %+v", rep)
	}
	var syncs struct {
		Items []any `json:"items"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/tables/syncs"}).decode(t, &syncs)
	if len(syncs.Items) != 1 {
		t.Fatalf("syncs: %+v", syncs)
	}
}

func TestScansAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		tbl := l.Append(l.Create("db.events", nil), tablestest.Rows(0, 3, time.Now()))
		l.WriteFile(tbl, "data/orphan.parquet", 100, time.Now().Add(-100*time.Hour))
		var reg struct {
			Table tableBody `json:"table"`
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/tables", token: s.Write, body: map[string]any{"metadata_location": tbl.MetadataLocation()}}).decode(t, &reg)
		id := uuid.MustParse(reg.Table.AssetID)
		var ids []string
		for range 3 {
			s.Later(cleanup.DefaultMinGap)
			rep, err := s.Cleanup.Scan(ctx, id, cleanup.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, rep.ScanID.String())
		}
		type scanBody struct {
			ID         string `json:"id"`
			State      string `json:"state"`
			Candidates int64  `json:"candidates"`
			Confirmed  int64  `json:"confirmed"`
			Summary    string `json:"summary"`
			Shards     []struct {
				Shard   string `json:"shard"`
				Outcome string `json:"outcome"`
			} `json:"shards"`
			Requests struct {
				List int64 `json:"list"`
				Head int64 `json:"head"`
			} `json:"requests"`
			Cost struct {
				ScanUSD float64 `json:"scan_usd"`
			} `json:"cost"`
		}
		var one scanBody
		s.must(t, 200, req{method: "GET", path: "/api/v1/scans/" + ids[1]}).decode(t, &one)
		if one.ID != ids[1] || one.State != "finished" || one.Candidates != 1 || one.Confirmed != 1 || len(one.Shards) < 2 ||
			one.Requests.List == 0 || one.Requests.Head != 0 || one.Cost.ScanUSD <= 0 || one.Summary == "" {
			t.Fatalf("scan: %+v", one)
		}
		// Pages of the table's scans, newest first.
		var seen []string
		cursor := ""
		for {
			var page struct {
				Items      []scanBody `json:"items"`
				NextCursor string     `json:"next_cursor"`
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/tables/" + id.String() + "/scans?limit=2&cursor=" + cursor}).decode(t, &page)
			for _, it := range page.Items {
				seen = append(seen, it.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(seen) != 3 || seen[0] != ids[2] || seen[2] != ids[0] {
			t.Fatalf("scans listed %v, want %v newest first", seen, ids)
		}
		var all struct {
			Items []scanBody `json:"items"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/scans"}).decode(t, &all)
		if len(all.Items) != 3 {
			t.Fatalf("all scans: %d", len(all.Items))
		}
		// The reference check, apart from scans: its report over HTTP.
		rc, err := s.Cleanup.CheckRefs(ctx, id, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var checks struct {
			Items []struct {
				ID           string `json:"id"`
				State        string `json:"state"`
				FilesChecked int64  `json:"files_checked"`
				Refs         []struct {
					Name string `json:"name"`
				} `json:"refs"`
				Summary string `json:"summary"`
			} `json:"items"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/tables/" + id.String() + "/ref-checks"}).decode(t, &checks)
		if len(checks.Items) != 1 || checks.Items[0].ID != rc.CheckID.String() || checks.Items[0].State != "complete" ||
			checks.Items[0].FilesChecked != rc.FilesChecked || len(checks.Items[0].Refs) != 1 || checks.Items[0].Refs[0].Name != "main" {
			t.Fatalf("ref checks: %+v", checks)
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/ref-checks/" + rc.CheckID.String()})
		s.must(t, 404, req{method: "GET", path: "/api/v1/ref-checks/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70"})
		s.must(t, 400, req{method: "GET", path: "/api/v1/ref-checks/nope"})
		s.must(t, 404, req{method: "GET", path: "/api/v1/scans/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70"})
		s.must(t, 400, req{method: "GET", path: "/api/v1/scans/nope"})
		s.must(t, 400, req{method: "GET", path: "/api/v1/scans?cursor=zzz"})
		s.must(t, 404, req{method: "GET", path: "/api/v1/tables/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/scans"})
	})
}

func TestProposalsAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		id, orphan := proposeOrphanCleanup(ctx, t, s)
		pid := openOrphanProposal(t, s, id)
		checkDecisionsRefused(t, s, pid)
		checkProposalFiles(t, s, pid)
		confirm := map[string]any{"confirm_files": 1, "confirm_bytes": 100}
		approveThenCancel(ctx, t, s, pid, confirm, orphan)
		checkCancelHolds(ctx, t, s, pid)
		// A second table's orphan: proposed (the first table's cancel holds), approved, executed.
		id, orphan = proposeOrphanCleanup(ctx, t, s)
		pid = approveOpen(t, s, id, pid, confirm)
		checkProposalExecuted(ctx, t, s, pid, orphan)
		checkCleanupExemptions(t, s, id)
	})
}

// proposalList is a page of proposals as GET /api/v1/proposals returns it.
type proposalList struct {
	Items []struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		Evidence struct {
			Files      int64  `json:"files"`
			Assumption string `json:"assumption"`
		} `json:"evidence"`
	} `json:"items"`
}

// proposalBody is one proposal as the proposal endpoints return it.
type proposalBody struct {
	State     string `json:"state"`
	DecidedBy string `json:"decided_by"`
	Reason    string `json:"reason"`
	FileCount int64  `json:"file_count"`
	FileBytes int64  `json:"file_bytes"`
}

// proposeOrphanCleanup registers a table with an old orphan file, scans it twice and proposes deleting it.
func proposeOrphanCleanup(ctx context.Context, t *testing.T, s *testServer) (uuid.UUID, string) {
	t.Helper()
	l := tablestest.NewLake(t)
	tbl := l.Append(l.Create("db.events", nil), tablestest.Rows(0, 3, time.Now()))
	orphan := l.WriteFile(tbl, "data/orphan.parquet", 100, time.Now().Add(-100*time.Hour))
	var reg struct {
		Table tableBody `json:"table"`
	}
	s.must(t, 200, req{method: "POST", path: "/api/v1/tables", token: s.Write, body: map[string]any{"metadata_location": tbl.MetadataLocation()}}).decode(t, &reg)
	id := uuid.MustParse(reg.Table.AssetID)
	for range 2 {
		s.Later(cleanup.DefaultMinGap)
		if _, err := s.Cleanup.Scan(ctx, id, cleanup.ScanOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := s.Cleanup.Propose(ctx); err != nil || r.Opened != 1 {
		t.Fatalf("propose: %+v %v", r, err)
	}
	return id, orphan
}

// openOrphanProposal checks the asset's one open orphan-files proposal and returns its id.
func openOrphanProposal(t *testing.T, s *testServer, id uuid.UUID) string {
	t.Helper()
	var list proposalList
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals?kind=orphan_files&state=open&asset=" + id.String()}).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].Evidence.Files != 1 || list.Items[0].Evidence.Assumption == "" {
		t.Fatalf("proposals: %+v", list)
	}
	return list.Items[0].ID
}

// checkDecisionsRefused checks decisions without admin or with bad input are refused and write nothing.
func checkDecisionsRefused(t *testing.T, s *testServer, pid string) {
	t.Helper()
	admin := s.Admin
	before := s.counts(t)
	s.must(t, 401, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve"})
	s.must(t, 403, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve", token: s.Write})
	s.must(t, 403, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve", token: s.Read})
	s.must(t, 400, req{method: "POST", path: "/api/v1/proposals/" + pid + "/reject", token: admin, body: map[string]any{}})
	s.must(t, 400, req{method: "GET", path: "/api/v1/proposals?state=maybe"})
	s.must(t, 404, req{method: "POST", path: "/api/v1/proposals/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/approve", token: admin})
	s.must(t, 400, req{method: "PUT", path: "/api/v1/webhooks/team-a", token: admin, body: map[string]any{"url": "ftp://x"}})
	if after := s.counts(t); !maps.Equal(before, after) {
		t.Fatalf("refused decisions wrote rows: %v -> %v", before, after)
	}
}

// checkProposalFiles checks the proposal's file totals and its file list as a page, as CSV and as JSON.
func checkProposalFiles(t *testing.T, s *testServer, pid string) {
	t.Helper()
	var p proposalBody
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid}).decode(t, &p)
	if p.FileCount != 1 || p.FileBytes != 100 {
		t.Fatalf("file totals: %+v", p)
	}
	// The exact file list, as a page and as downloads.
	var files struct {
		Items []struct {
			Path       string     `json:"path"`
			Size       int64      `json:"size"`
			ModifiedAt *time.Time `json:"modified_at"`
			State      string     `json:"state"`
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?limit=1"}).decode(t, &files)
	if len(files.Items) != 1 || !strings.HasSuffix(files.Items[0].Path, "/data/orphan.parquet") || files.Items[0].Size != 100 ||
		files.Items[0].State != "pending" || files.Items[0].ModifiedAt == nil || time.Since(*files.Items[0].ModifiedAt) < 99*time.Hour || files.NextCursor != "" {
		t.Fatalf("files: %+v", files)
	}
	s.must(t, 400, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?cursor=zzz"})
	csvBody := s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?format=csv"})
	if rows := strings.Split(strings.TrimSpace(string(csvBody.body)), "\n"); len(rows) != 2 || rows[0] != "path,size,modified_at,state,detail,done_at" ||
		!strings.Contains(rows[1], "orphan.parquet,100,") || !strings.Contains(csvBody.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("CSV download: %q %v", csvBody.body, csvBody.header)
	}
	var all struct{ Items []map[string]any }
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?format=json"}).decode(t, &all)
	if len(all.Items) != 1 || all.Items[0]["size"] != float64(100) {
		t.Fatalf("JSON download: %+v", all)
	}
	s.must(t, 400, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?format=xml"})
	s.must(t, 400, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?state=maybe"})
	s.must(t, 404, req{method: "GET", path: "/api/v1/proposals/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/files"})
}

// approveThenCancel approves the proposal with the right confirmation only, then cancels it before it runs.
func approveThenCancel(ctx context.Context, t *testing.T, s *testServer, pid string, confirm map[string]any, orphan string) {
	t.Helper()
	admin := s.Admin
	var p proposalBody
	// An approval must name the count and bytes it deletes.
	for _, body := range []map[string]any{{}, {"confirm_files": 1}, {"confirm_files": 2, "confirm_bytes": 100}, {"confirm_files": 1, "confirm_bytes": 99}} {
		s.must(t, 400, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve", token: admin, body: body})
	}
	s.must(t, 200, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve", token: admin, body: confirm}).decode(t, &p)
	if p.State != "approved" || p.DecidedBy != "token:admin" {
		t.Fatalf("approved: %+v", p)
	}
	s.must(t, 409, req{method: "POST", path: "/api/v1/proposals/" + pid + "/reject", token: admin, body: map[string]any{"reason": "too late"}})
	// Cancelled before execution: nothing runs; the bot proposes the file again, as a new
	// proposal that needs a new approval.
	s.must(t, 403, req{method: "POST", path: "/api/v1/proposals/" + pid + "/cancel", token: s.Write})
	s.must(t, 200, req{method: "POST", path: "/api/v1/proposals/" + pid + "/cancel", token: admin, body: map[string]any{"reason": "checking first"}}).decode(t, &p)
	if p.State != "cancelled" || !strings.Contains(p.Reason, "checking first") {
		t.Fatalf("cancelled: %+v", p)
	}
	if r, err := s.Cleanup.Execute(ctx, uuid.Nil, nil); err != nil || r.Proposals != 0 {
		t.Fatalf("execute after the cancel: %+v %v", r, err)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("a cancelled proposal's file was deleted: %v", err)
	}
}

// reproposeAndApprove approves the bot's new proposal for the file, checks the audit, and returns its id.
// checkCancelHolds: after a cancel the next round proposes nothing again, and the cancelled
// proposal's files read "not deleted (approval cancelled)".
func checkCancelHolds(ctx context.Context, t *testing.T, s *testServer, pid string) {
	t.Helper()
	if r, err := s.Cleanup.Propose(ctx); err != nil || r.Opened != 0 {
		t.Fatalf("propose after the cancel: %+v %v, want nothing opened", r, err)
	}
	var files struct {
		Items []struct {
			State  string `json:"state"`
			Detail string `json:"detail"`
		} `json:"items"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files"}).decode(t, &files)
	if len(files.Items) != 1 || files.Items[0].State != "not_deleted" || files.Items[0].Detail != "not deleted (approval cancelled)" {
		t.Fatalf("a cancelled proposal's files: %+v", files.Items)
	}
}

// approveOpen approves the asset's one open orphan proposal (not pid) and checks the audit.
func approveOpen(t *testing.T, s *testServer, id uuid.UUID, pid string, confirm map[string]any) string {
	t.Helper()
	admin := s.Admin
	var list proposalList
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals?kind=orphan_files&state=open&asset=" + id.String()}).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID == pid {
		t.Fatalf("reproposed: %+v", list)
	}
	pid = list.Items[0].ID
	s.must(t, 200, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve", token: admin, body: confirm})
	var audit struct {
		Items []struct {
			Action string `json:"action"`
			Actor  string `json:"actor"`
		} `json:"items"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + id.String() + "/audit"}).decode(t, &audit)
	found := false
	for _, ev := range audit.Items {
		found = found || (ev.Action == "proposal.approve" && ev.Actor == "token:admin")
	}
	if !found {
		t.Fatalf("no audit entry for the approval: %+v", audit.Items)
	}
	return pid
}

// checkProposalExecuted executes the approved proposal and checks its state, its journal and the deletion.
func checkProposalExecuted(ctx context.Context, t *testing.T, s *testServer, pid, orphan string) {
	t.Helper()
	admin := s.Admin
	var p proposalBody
	if _, err := s.Cleanup.Execute(ctx, uuid.Nil, nil); err != nil {
		t.Fatal(err)
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid}).decode(t, &p)
	if p.State != "executed" {
		t.Fatalf("after execution: %+v", p)
	}
	s.must(t, 409, req{method: "POST", path: "/api/v1/proposals/" + pid + "/cancel", token: admin})
	var journal struct {
		Items []struct {
			State  string     `json:"state"`
			DoneAt *time.Time `json:"done_at"`
		} `json:"items"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files"}).decode(t, &journal)
	if len(journal.Items) != 1 || journal.Items[0].State != "deleted" || journal.Items[0].DoneAt == nil {
		t.Fatalf("journal: %+v", journal)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("the approved orphan is still there: %v", err)
	}
}

// checkCleanupExemptions exempts the asset from cleanup, refuses an unknown kind and then sets a webhook.
func checkCleanupExemptions(t *testing.T, s *testServer, id uuid.UUID) {
	t.Helper()
	admin := s.Admin
	var ex struct {
		Exempt bool     `json:"exempt"`
		Kinds  []string `json:"kinds"`
	}
	s.must(t, 200, req{method: "PUT", path: "/api/v1/assets/" + id.String() + "/cleanup-exempt", token: admin, body: map[string]any{"exempt": true, "reason": "reference data"}}).decode(t, &ex)
	if !ex.Exempt || !slices.Equal(ex.Kinds, []string{"unused_asset"}) {
		t.Fatalf("exemption: %+v", ex)
	}
	s.must(t, 200, req{method: "PUT", path: "/api/v1/assets/" + id.String() + "/cleanup-exempt", token: admin,
		body: map[string]any{"exempt": true, "reason": "hands off", "kinds": []string{"orphan_files", "expire_snapshots"}}}).decode(t, &ex)
	if !ex.Exempt || len(ex.Kinds) != 2 {
		t.Fatalf("exemption with kinds: %+v", ex)
	}
	s.must(t, 400, req{method: "PUT", path: "/api/v1/assets/" + id.String() + "/cleanup-exempt", token: admin,
		body: map[string]any{"exempt": true, "kinds": []string{"dangling_reference"}}})
	s.must(t, 200, req{method: "PUT", path: "/api/v1/webhooks/team-a", token: admin, body: map[string]any{"url": "http://127.0.0.1:9/hook"}})
}

// TestRegisterOlderMetadata: registering an older metadata file of a known table (moving it
// back in time) is refused; only an admin may force it.
func TestRegisterOlderMetadata(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		l := tablestest.NewLake(t)
		old := l.Append(l.Create("db.events", nil), tablestest.Rows(0, 2, time.Now()))
		time.Sleep(2 * time.Millisecond) // metadata times are in milliseconds
		cur := l.Append(old, tablestest.Rows(2, 2, time.Now()))
		register := func(token, loc string, force bool, want int) tableBody {
			t.Helper()
			var reg struct {
				Table tableBody `json:"table"`
			}
			r := s.must(t, want, req{method: "POST", path: "/api/v1/tables", token: token, body: map[string]any{"metadata_location": loc, "force": force}})
			if want == 200 {
				r.decode(t, &reg)
			}
			return reg.Table
		}
		register(s.Write, cur.MetadataLocation(), false, 200)
		before := s.counts(t)
		register(s.Write, old.MetadataLocation(), false, 409)
		register(s.Write, old.MetadataLocation(), true, 403)
		if after := s.counts(t); !maps.Equal(before, after) {
			t.Fatalf("refused registrations wrote rows: %v -> %v", before, after)
		}
		admin := s.Admin
		if tb := register(admin, old.MetadataLocation(), true, 200); tb.MetadataLocation != old.MetadataLocation() {
			t.Fatalf("forced registration: %+v", tb)
		}
		register(s.Write, cur.MetadataLocation(), false, 200) // forward again: always allowed
	})
}

// encodedDots names the same file with a percent-encoded ".." step: file:/a/b/c becomes
// file:/a/b/%2e%2e/b/c, which iceberg-go's local IO decodes back to the file.
func encodedDots(loc string) string {
	p := strings.TrimPrefix(loc, "file://")
	dir, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	second, tail, _ := strings.Cut(rest, "/")
	return "file:/" + dir + "/" + second + "/%2e%2e/" + second + "/" + tail
}
