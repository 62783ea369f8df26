package restcatalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/restcatalog"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/warehouse"
)

func versionsOf(t *testing.T, db *storage.DB, asset uuid.UUID) map[int64]*ent.DatasetVersion {
	t.Helper()
	rows, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset)).All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]*ent.DatasetVersion{}
	for _, r := range rows {
		if r.SnapshotID == nil {
			t.Fatalf("version %s of a served table has no snapshot ID", r.Version)
		}
		out[*r.SnapshotID] = r
	}
	return out
}

// TestCommitRecordsVersions: each snapshot an engine commits through the REST catalog is a
// version of the table's asset with its parent, operation, sequence number, time, the commit's
// principal and commit row; a rename keeps them on the asset; an engine's remove-snapshots and
// the cleanup bot's expiry mark the removed ones expired, by whom and when, and keep them.
func TestCommitRecordsVersions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		s := newServer(t, db, warehouse.WithClock(func() time.Time { return at }))
		cat := s.client(t)
		tbl := create(t, cat, "v", "orders")
		for i := range 3 {
			tbl = s.append(t, tbl, i*2, 2)
		}
		asset := assetOf(t, s, tbl)
		got := versionsOf(t, db, asset)
		snaps := tbl.Metadata().Snapshots()
		if len(got) != 3 || len(snaps) != 3 {
			t.Fatalf("%d versions for %d snapshots; want 3", len(got), len(snaps))
		}
		for _, snap := range snaps {
			v := got[snap.SnapshotID]
			commit, err := db.Client.IcebergCommit.Query().Where(icebergcommit.AssetID(asset), icebergcommit.SnapshotID(snap.SnapshotID),
				icebergcommit.State("committed")).Only(ctx)
			if err != nil {
				t.Fatalf("the commit of snapshot %d: %v", snap.SnapshotID, err)
			}
			parent := ""
			if snap.ParentSnapshotID != nil {
				parent = strconv.FormatInt(*snap.ParentSnapshotID, 10)
			}
			if v == nil || v.Source != versions.SourceCommit || v.ParentVersion != parent || v.Operation != "append" ||
				v.Principal != commit.Actor || v.Principal != "token:engine" || v.CommitID == nil || *v.CommitID != commit.ID ||
				v.SequenceNumber == nil || *v.SequenceNumber != snap.SequenceNumber || v.CommittedAt == nil ||
				!v.CommittedAt.Equal(time.UnixMilli(snap.TimestampMs).UTC()) || !v.SeenInTable || v.ExpiredAt != nil {
				t.Fatalf("snapshot %d as a version = %+v; its commit %s by %q", snap.SnapshotID, v, commit.ID, commit.Actor)
			}
		}
		parent := got[snaps[1].SnapshotID].ParentVersion
		if parent != strconv.FormatInt(snaps[0].SnapshotID, 10) {
			t.Fatalf("second snapshot's parent %q; want the first, %d", parent, snaps[0].SnapshotID)
		}

		// A rename keeps the versions on the asset, and the next commit adds to them.
		if _, err := cat.RenameTable(ctx, table.Identifier{"v", "orders"}, table.Identifier{"v", "sales"}); err != nil {
			t.Fatal(err)
		}
		renamed, err := cat.LoadTable(ctx, table.Identifier{"v", "sales"})
		if err != nil {
			t.Fatal(err)
		}
		renamed = s.append(t, renamed, 10, 1)
		if assetOf(t, s, renamed) != asset || len(versionsOf(t, db, asset)) != 4 {
			t.Fatalf("after the rename: asset %s, %d versions; want %s, 4", assetOf(t, s, renamed), len(versionsOf(t, db, asset)), asset)
		}

		// An engine removes the oldest snapshot in a commit of its own (the writer token).
		first := snaps[0].SnapshotID
		body := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"remove-snapshots","snapshot-ids":[%d]}]}`, first)
		if code, out := s.do(t, "POST", "/iceberg/v1/main/namespaces/v/tables/sales", s.Writer, body, nil); code != 200 {
			t.Fatalf("remove-snapshots: %d %s", code, out)
		}
		// The cleanup bot's expiry of the second, through tables.Served, with no principal.
		live, err := s.App.Tables.Open(ctx, asset)
		if err != nil {
			t.Fatal(err)
		}
		second := snaps[1].SnapshotID
		if _, removed, err := s.App.Tables.RemoveSnapshots(ctx, asset, live, []int64{second}); err != nil || len(removed) != 1 {
			t.Fatalf("expiry: removed %v, %v", removed, err)
		}
		after := versionsOf(t, db, asset)
		if len(after) != 4 {
			t.Fatalf("%d versions after the expiries; want all 4 kept", len(after))
		}
		for id, want := range map[int64]string{first: "token:writer", second: tables.ExpiredByCleanup} {
			v := after[id]
			if v.ExpiredAt == nil || !v.ExpiredAt.Equal(at) || v.ExpiredBy != want {
				t.Fatalf("snapshot %d: expired at %v by %q; want at %v by %q", id, v.ExpiredAt, v.ExpiredBy, at, want)
			}
		}
		for id, v := range after {
			if id != first && id != second && v.ExpiredAt != nil {
				t.Fatalf("live snapshot %d marked expired", id)
			}
		}

		// The approver's expiry names the approver through the bot's principal.
		live, err = s.App.Tables.Open(ctx, asset)
		if err != nil {
			t.Fatal(err)
		}
		third := snaps[2].SnapshotID
		by := "tidemark-cleanup-bot for token:alice"
		if _, _, err := s.App.Tables.RemoveSnapshots(catalog.WithActor(ctx, by), asset, live, []int64{third}); err != nil {
			t.Fatal(err)
		}
		if v := versionsOf(t, db, asset)[third]; v.ExpiredAt == nil || v.ExpiredBy != by {
			t.Fatalf("snapshot %d: expired %v by %q; want by %q", third, v.ExpiredAt, v.ExpiredBy, by)
		}
	})
}

// TestRegisterTableRecordsVersions: a table written elsewhere and registered through the REST
// catalog has every snapshot of its metadata recorded, as an inspection found them (no
// principal made them here, and no commit of this catalog).
func TestRegisterTableRecordsVersions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		if err := s.client(t).CreateNamespace(ctx, table.Identifier{"r"}, nil); err != nil {
			t.Fatal(err)
		}
		// Another engine's catalog, writing under the served warehouse.
		lake := tablestest.NewLakeOn(t, filepath.Join(s.Warehouse, "ext"), "sqlite", "file:"+filepath.Join(t.TempDir(), "cat.db")+"?_pragma=busy_timeout(5000)")
		tbl := lake.Create("db.events", nil)
		for i := range 3 {
			tbl = lake.Append(tbl, tablestest.Rows(i, 1, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)))
		}
		body := fmt.Sprintf(`{"name":"events","metadata-location":%q}`, tbl.MetadataLocation())
		if code, out := s.do(t, "POST", "/iceberg/v1/main/namespaces/r/register", s.Token, body, nil); code != 200 {
			t.Fatalf("register: %d %s", code, out)
		}
		got := versionsOf(t, db, assetOf(t, s, tbl))
		if len(got) != 3 {
			t.Fatalf("%d versions; want 3", len(got))
		}
		for _, snap := range tbl.Metadata().Snapshots() {
			v := got[snap.SnapshotID]
			if v == nil || v.Source != versions.SourceInspection || !v.SeenInTable || v.Principal != "" || v.CommitID != nil ||
				v.CommittedAt == nil || !v.CommittedAt.Equal(time.UnixMilli(snap.TimestampMs).UTC()) || v.Operation != "append" {
				t.Fatalf("snapshot %d = %+v", snap.SnapshotID, v)
			}
		}
	})
}

// scanReport is an Iceberg scan report of a snapshot (written as given: a snapshot ID beyond
// 2^53 must survive).
func scanReport(snapshot string) string {
	return `{"report-type":"scan-report","table-name":"s.t","snapshot-id":` + snapshot +
		`,"filter":true,"schema-id":0,"projected-field-ids":[1],"projected-field-names":["id"],"metrics":{}}`
}

// TestScanReportVersions: a token's scan report is a read of the snapshot it names; a retried
// report counts once, another snapshot in the same hour is another read, a report after the
// principal's load is that load's read; a report that names no integer snapshot is a 400 in the
// Iceberg error model and writes nothing; an anonymous report is answered and recorded nowhere.
func TestScanReportVersions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		tbl := s.append(t, create(t, s.client(t), "s", "t"), 0, 2)
		first := tbl.CurrentSnapshot().SnapshotID
		tbl = s.append(t, tbl, 2, 2)
		second := tbl.CurrentSnapshot().SnapshotID
		asset := assetOf(t, s, tbl)
		reader, _, err := auth.NewStore(db.Client, nil).Create(ctx, "dashboards", []auth.Scope{auth.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		// The reader loads the table (held as a read), then reports its scan.
		rc, err := icecat.Load(ctx, "reader", iceberg.Properties{"type": "rest", "uri": s.URL + "/iceberg", "token": reader, "warehouse": "main"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.LoadTable(ctx, table.Identifier{"s", "t"}); err != nil {
			t.Fatal(err)
		}
		const path = "/iceberg/v1/main/namespaces/s/tables/t/metrics"
		for range 2 { // a retry
			if code, body := s.do(t, "POST", path, reader, scanReport(strconv.FormatInt(first, 10)), nil); code != 204 {
				t.Fatalf("report: %d %s", code, body)
			}
		}
		if code, body := s.do(t, "POST", path, reader, scanReport(strconv.FormatInt(second, 10)), nil); code != 204 {
			t.Fatalf("report: %d %s", code, body)
		}
		for _, bad := range []string{`"abc"`, `1.5`, `99999999999999999999`, `true`, `"` + strconv.FormatInt(second, 10) + `"`} {
			code, body := s.do(t, "POST", path, reader, scanReport(bad), nil)
			var e struct {
				Error struct {
					Code int    `json:"code"`
					Type string `json:"type"`
				} `json:"error"`
			}
			if code != 400 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != 400 || e.Error.Type != "BadRequestException" {
				t.Fatalf("snapshot-id %s: %d %s; want 400 BadRequestException", bad, code, body)
			}
		}
		if code, body := s.do(t, "POST", path, "", scanReport("12345"), nil); code != 204 {
			t.Fatalf("anonymous report: %d %s", code, body)
		}
		s.App.FlushLoads(ctx)
		evs, err := db.Client.UsageEvent.Query().Where(usageevent.AssetID(asset), usageevent.KindEQ(usageevent.KindRead)).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reads := map[string]int{}
		for _, e := range evs {
			if e.Actor != "token:dashboards" || e.Source != "iceberg-rest" {
				t.Fatalf("read %+v; want only the reader's", e)
			}
			reads[e.Version]++
		}
		want := map[string]int{strconv.FormatInt(first, 10): 1, strconv.FormatInt(second, 10): 1}
		if len(reads) != len(want) || reads[strconv.FormatInt(first, 10)] != 1 || reads[strconv.FormatInt(second, 10)] != 1 {
			t.Fatalf("reads by version %v; want %v (the load is the first report's read; the retry, the bad and the anonymous reports count nothing)", reads, want)
		}
	})
}

// TestScanReportedHook: the REST face records a token's scan report with its version and then
// tells the versions resolver, once per report naming a version, never for a report it refused.
func TestScanReportedHook(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		now := time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)
		s := newServerWith(t, db, func(*app.Config, *server.Config) {})
		tbl := s.append(t, create(t, s.client(t), "h", "t"), 0, 1)
		snap := tbl.CurrentSnapshot().SnapshotID
		type scan struct {
			asset      uuid.UUID
			actor, key string
			version    string
			at         time.Time
		}
		var mu sync.Mutex
		var recorded []scan
		var told []uuid.UUID
		tokens := auth.NewStore(db.Client, nil)
		srv := server.New(server.Config{Tokens: tokens})
		restcatalog.Mount(srv, restcatalog.Config{Warehouse: s.App.Warehouse, Tokens: tokens, Now: func() time.Time { return now },
			RecordUse: func(context.Context, uuid.UUID, string, string, string, time.Time) error { return nil },
			RecordScan: func(_ context.Context, asset uuid.UUID, actor, key, version string, at time.Time) error {
				mu.Lock()
				defer mu.Unlock()
				recorded = append(recorded, scan{asset: asset, actor: actor, key: key, version: version, at: at})
				return nil
			},
			ScanReported: func(_ context.Context, asset uuid.UUID, at time.Time) error {
				mu.Lock()
				defer mu.Unlock()
				if !at.Equal(now) || len(recorded) == 0 {
					t.Errorf("told at %v before recording (%d recorded); want after recording, at %v", at, len(recorded), now)
				}
				told = append(told, asset)
				return nil
			}})
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		face := &testServer{URL: hs.URL}
		const path = "/iceberg/v1/main/namespaces/h/tables/t/metrics"
		face.do(t, "POST", path, s.Token, scanReport(strconv.FormatInt(snap, 10)), nil)
		face.do(t, "POST", path, s.Token, `{"report-type":"scan-report","table-name":"h.t"}`, nil) // names no snapshot
		face.do(t, "POST", path, s.Token, scanReport(`"x"`), nil)
		face.do(t, "POST", path, "", scanReport("7"), nil)
		face.do(t, "POST", path, s.Token, `{"report-type":"commit-report","table-name":"h.t","snapshot-id":7}`, nil)
		asset := assetOf(t, s, tbl)
		mu.Lock()
		defer mu.Unlock()
		if len(recorded) != 2 || recorded[0].version != strconv.FormatInt(snap, 10) || recorded[1].version != "" ||
			recorded[0].key == recorded[1].key || recorded[0].asset != asset || recorded[0].actor != "token:engine" || !recorded[0].at.Equal(now) {
			t.Fatalf("recorded %+v; want the two token scan reports, the first with its version and its own key", recorded)
		}
		if len(told) != 1 || told[0] != asset {
			t.Fatalf("told the resolver of %v; want once, of %s", told, asset)
		}
	})
}
