package tables_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// TestInspectionMatchesIcebergListing writes real tables through several appends, an
// overwrite, a delete and hourly partitions, registers them by metadata location, and checks
// that every retained snapshot lists exactly the files iceberg-go itself lists.
func TestInspectionMatchesIcebergListing(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0.Add(48 * time.Hour)}
		svc, cat := newService(t, db, c)
		plain, mor, hourly := writeInspectedTables(ctx, t, l)

		for _, tc := range []inspectionCase{
			{"plain", plain, 6},
			{"hourly", hourly, 2},
			{"mor", mor, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				checkInspection(ctx, t, svc, cat, l, tc)
			})
		}

		checkMergeOnReadInspection(ctx, t, svc, cat, mor)
		checkHourlyHealth(ctx, t, svc, cat, hourly)
		checkBadRegistrations(ctx, t, db, svc, l)
	})
}

// inspectionCase is a written table and the number of snapshots it retains.
type inspectionCase struct {
	name      string
	tbl       *table.Table
	snapshots int
}

// writeInspectedTables writes the plain (appends, overwrite, delete), merge-on-read and hourly tables.
func writeInspectedTables(ctx context.Context, t *testing.T, l *tablestest.Lake) (plain, mor, hourly *table.Table) {
	t.Helper()
	plain = l.Create("db.plain", nil)
	for i := range 3 {
		plain = l.Append(plain, tablestest.Rows(i*10, 5, t0))
	}
	var err error
	if plain, err = plain.Overwrite(ctx, l.Record(plain, tablestest.Rows(100, 4, t0)), nil); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	plain = l.Append(plain, tablestest.Rows(200, 3, t0))
	if plain, err = plain.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(201)), nil); err != nil {
		t.Fatalf("delete: %v", err)
	}

	// Merge-on-read: the delete writes a position-delete file in a delete manifest.
	mor = l.Create("db.mor", nil, icecat.WithProperties(iceberg.Properties{"write.delete.mode": "merge-on-read", "format-version": "2"}))
	mor = l.Append(mor, tablestest.Rows(0, 5, t0))
	if mor, err = mor.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(1)), nil); err != nil {
		t.Fatalf("merge-on-read delete: %v", err)
	}

	hourly = l.Create("db.hourly", tablestest.HourSpec())
	hourly = l.Append(hourly, tablestest.Rows(0, 30, t0))  // 30 hours
	hourly = l.Append(hourly, tablestest.Rows(30, 30, t0)) // the same 30 hours again
	return plain, mor, hourly
}

// checkInspection registers tc's table and checks its snapshots and metadata log against iceberg-go's.
func checkInspection(ctx context.Context, t *testing.T, svc *tables.Service, cat *catalog.Catalog, l *tablestest.Lake, tc inspectionCase) {
	t.Helper()
	tb, rep, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tc.tbl.MetadataLocation()})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if tb.TableUUID != tc.tbl.Metadata().TableUUID().String() {
		t.Fatalf("table uuid %s, want %s", tb.TableUUID, tc.tbl.Metadata().TableUUID())
	}
	if rep.Snapshots != tc.snapshots || len(tc.tbl.Metadata().Snapshots()) != tc.snapshots {
		t.Fatalf("report has %d snapshots, metadata %d, want %d", rep.Snapshots, len(tc.tbl.Metadata().Snapshots()), tc.snapshots)
	}
	in, err := svc.Inspection(ctx, tb.AssetID)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Snapshots) != tc.snapshots {
		t.Fatalf("inspection has %d snapshots, want %d", len(in.Snapshots), tc.snapshots)
	}
	for _, s := range tc.tbl.Metadata().Snapshots() {
		want := l.Files(tc.tbl, s)
		got := listed(t, svc, tb.AssetID, s.SnapshotID, 2)
		if !maps.Equal(got, want) {
			t.Errorf("snapshot %d (%s): listed %v\niceberg-go lists %v", s.SnapshotID, s.Summary.Operation, got, want)
		}
		var sum tables.Snapshot
		for _, is := range in.Snapshots {
			if is.ID == s.SnapshotID {
				sum = is
			}
		}
		var recs, data int64
		for _, f := range want {
			if f[2] == 0 {
				recs += f[1]
				data++
			}
		}
		if sum.DataFiles != data || sum.DeleteFiles != int64(len(want))-data || sum.Records != recs {
			t.Errorf("snapshot %d summary: %d data files %d delete files %d records, want %d, %d and %d",
				s.SnapshotID, sum.DataFiles, sum.DeleteFiles, sum.Records, data, int64(len(want))-data, recs)
		}
	}
	prev := 0
	for range tc.tbl.Metadata().PreviousFiles() {
		prev++
	}
	if len(in.MetadataLog) != prev || prev == 0 {
		t.Errorf("metadata log %d entries, want %d", len(in.MetadataLog), prev)
	}
	// Registering the same metadata again reads nothing new.
	_, again, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tc.tbl.MetadataLocation()})
	if err != nil {
		t.Fatal(err)
	}
	if again.ManifestsRead != 0 || again.ManifestListsRead != 0 || tb.AssetID != mustResolve(t, cat, tc.tbl).ID {
		t.Errorf("second register read %d manifests and %d lists, want 0 and 0", again.ManifestsRead, again.ManifestListsRead)
	}
}

// checkMergeOnReadInspection checks the merge-on-read table's current snapshot counts its delete file.
func checkMergeOnReadInspection(ctx context.Context, t *testing.T, svc *tables.Service, cat *catalog.Catalog, mor *table.Table) {
	t.Helper()
	morIn, err := svc.Inspection(ctx, mustResolve(t, cat, mor).ID)
	if err != nil {
		t.Fatal(err)
	}
	cur := morIn.Snapshots[len(morIn.Snapshots)-1]
	if !cur.Current || cur.DeleteFiles != 1 || cur.DeleteManifests != 1 || cur.DataFiles != 1 {
		t.Errorf("merge-on-read snapshot: %+v; want 1 data file, 1 delete file in 1 delete manifest", cur)
	}
}

// checkHourlyHealth checks the hourly table's health figures and its small-files advice.
func checkHourlyHealth(ctx context.Context, t *testing.T, svc *tables.Service, cat *catalog.Catalog, hourly *table.Table) {
	t.Helper()
	// Health of the hourly table: 30 hourly partitions of 2 tiny files each.
	id := mustResolve(t, cat, hourly).ID
	h, err := svc.Health(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if h.Partitions != 30 || h.DataFiles != 60 || h.SmallFiles != 60 || h.FilesPerPartition.Max != 2 || h.Records != 60 {
		t.Errorf("health = %d partitions, %d files, %d small, max %d per partition, %d records; want 30, 60, 60, 2, 60",
			h.Partitions, h.DataFiles, h.SmallFiles, h.FilesPerPartition.Max, h.Records)
	}
	if h.SnapshotsRetained != 2 || h.Manifests != 2 || h.ScanEntries != 60 {
		t.Errorf("health = %d snapshots, %d manifests, %d scan entries; want 2, 2, 60", h.SnapshotsRetained, h.Manifests, h.ScanEntries)
	}
	if h.MetadataFilesRetained != 3 { // create, two appends
		t.Errorf("metadata files retained = %d, want 3", h.MetadataFilesRetained)
	}
	var small bool
	for _, r := range h.Recommendations {
		if r.Code == "small_files" {
			small = true
			// The advice names the size to compact to and the command that does it.
			for _, want := range []string{"512 MiB files (Iceberg's default; the table sets no write.target-file-size-bytes)",
				"CALL <catalog>.system.rewrite_data_files(", "map('target-file-size-bytes','536870912')"} {
				if !strings.Contains(r.Message, want) {
					t.Errorf("small_files advice %q lacks %q", r.Message, want)
				}
			}
		}
	}
	if !small {
		t.Errorf("no small_files recommendation for 60 tiny files: %+v", h.Recommendations)
	}
}

// checkBadRegistrations checks bad metadata locations are refused as invalid and write nothing.
func checkBadRegistrations(ctx context.Context, t *testing.T, db *storage.DB, svc *tables.Service, l *tablestest.Lake) {
	t.Helper()
	// Bad input: nothing is written.
	n, _ := db.Client.IcebergTable.Query().Count(ctx)
	for _, loc := range []string{"", "file:///nowhere/metadata/v1.metadata.json", "file://" + l.Dir + "/catalog.db"} {
		_, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: loc})
		if !errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("register %q: err = %v, want invalid input", loc, err)
		}
	}
	if m, _ := db.Client.IcebergTable.Query().Count(ctx); m != n {
		t.Errorf("bad registrations wrote %d rows", m-n)
	}
}

func mustResolve(t *testing.T, cat *catalog.Catalog, tbl *table.Table) catalog.Ref {
	t.Helper()
	ref, ok, err := cat.LookupExternal(context.Background(), catalog.SystemIcebergTable, tbl.Metadata().TableUUID().String())
	if err != nil || !ok {
		t.Fatalf("table %s not bound: %v", tbl.Metadata().TableUUID(), err)
	}
	return ref
}

// TestRefreshKeepsManifestFigures: a refresh after a commit decodes only the new manifest and
// takes the others' figures from memory; the health it computes is the one a fresh process
// computes from the database cache alone.
func TestRefreshKeepsManifestFigures(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0.Add(48 * time.Hour)}
		svc, cat := newService(t, db, c)
		hourly := l.Create("db.hourly", tablestest.HourSpec())
		hourly = l.Append(hourly, tablestest.Rows(0, 30, t0))
		hourly = l.Append(hourly, tablestest.Rows(30, 30, t0))
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: hourly.MetadataLocation()}); err != nil {
			t.Fatal(err)
		}
		hourly = l.Append(hourly, tablestest.Rows(60, 45, t0))
		_, rep, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: hourly.MetadataLocation()})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ManifestsRead != 1 || rep.ManifestsInMemory != 2 {
			t.Fatalf("refresh after a commit: %d manifests read, %d from memory; want 1 and 2", rep.ManifestsRead, rep.ManifestsInMemory)
		}
		id := mustResolve(t, cat, hourly).ID
		kept, err := svc.Health(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := newService(t, db, c)
		_, rep2, err := fresh.Register(ctx, tables.RegisterInput{MetadataLocation: hourly.MetadataLocation()})
		if err != nil {
			t.Fatal(err)
		}
		if rep2.ManifestsInMemory != 0 || rep2.ManifestsCached != 3 {
			t.Fatalf("a fresh process: %d manifests from memory, %d from the database cache; want 0 and 3", rep2.ManifestsInMemory, rep2.ManifestsCached)
		}
		recomputed, err := fresh.Health(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		kept.ComputedAt, recomputed.ComputedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(kept, recomputed) {
			t.Fatalf("health from kept figures:\n%+v\nfrom the database cache:\n%+v", kept, recomputed)
		}
		if kept.DataFiles != 105 || kept.Partitions != 45 || kept.Records != 105 {
			t.Fatalf("health: %d files, %d partitions, %d records; want 105, 45, 105", kept.DataFiles, kept.Partitions, kept.Records)
		}
	})
}

// TestFailedInspectionKeepsWhatItRead: an inspection that fails on one missing manifest still
// caches the manifest lists and manifests it read, so the next attempt reads only that one.
func TestFailedInspectionKeepsWhatItRead(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0.Add(48 * time.Hour)}
		svc, _ := newService(t, db, c)
		hourly := l.Create("db.hourly", tablestest.HourSpec())
		for i := range 3 {
			hourly = l.Append(hourly, tablestest.Rows(i*10, 10, t0))
		}
		fs, err := hourly.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := hourly.CurrentSnapshot().Manifests(fs)
		if err != nil || len(mfs) != 3 {
			t.Fatalf("%d manifests, %v; want 3", len(mfs), err)
		}
		missing := strings.TrimPrefix(mfs[1].FilePath(), "file://")
		if err := os.Rename(missing, missing+".away"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: hourly.MetadataLocation()}); err == nil {
			t.Fatal("register with a missing manifest: no error")
		}
		if err := os.Rename(missing+".away", missing); err != nil {
			t.Fatal(err)
		}
		fresh, _ := newService(t, db, c)
		_, rep, err := fresh.Register(ctx, tables.RegisterInput{MetadataLocation: hourly.MetadataLocation()})
		if err != nil {
			t.Fatal(err)
		}
		// The one list read again is the current snapshot's, for the missing manifest's
		// inherited fields.
		if rep.ManifestsRead != 1 || rep.ManifestsCached != 2 || rep.ManifestListsRead != 1 {
			t.Errorf("after the failed attempt: %d manifests read, %d from the database cache, %d lists read; want 1, 2, 1",
				rep.ManifestsRead, rep.ManifestsCached, rep.ManifestListsRead)
		}
	})
}

// TestRegisterTableReplacedAtItsLocation: a table dropped and created again at the same
// location (a new table-uuid) gets an asset of its own; the location's external ID stays with
// the asset it was bound to first.
func TestRegisterTableReplacedAtItsLocation(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		svc, cat := newService(t, db, &clock{t: t0})
		first := l.Append(l.Create("db.t", nil), tablestest.Rows(0, 3, t0))
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: first.MetadataLocation()}); err != nil {
			t.Fatal(err)
		}
		if err := l.Cat.DropTable(ctx, table.Identifier{"db", "t"}); err != nil {
			t.Fatal(err)
		}
		second := l.Append(l.Create("db.t", nil), tablestest.Rows(0, 3, t0))
		if second.Metadata().Location() != first.Metadata().Location() {
			t.Fatalf("the table was created again at %s, not %s", second.Metadata().Location(), first.Metadata().Location())
		}
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: second.MetadataLocation(), Namespace: "lake", Name: "t_again"}); err != nil {
			t.Fatal(err)
		}
		a1, a2 := mustResolve(t, cat, first).ID, mustResolve(t, cat, second).ID
		if a1 == a2 {
			t.Fatalf("both tables are bound to asset %s", a1)
		}
		ns, name := tables.LocationName(first.Metadata().Location())
		loc := catalog.SymlinkID(ns, name)
		ref, ok, err := cat.LookupExternal(ctx, loc.System, loc.Value)
		if err != nil || !ok || ref.ID != a1 {
			t.Fatalf("the location is bound to %v (found %v, %v), want the first table's asset %s", ref.ID, ok, err, a1)
		}
		if a, err := cat.Get(ctx, a1); err != nil || len(a.ExternalIDs) != 2 {
			t.Fatalf("the first table's asset has external IDs %v (%v), want its table-uuid and location", a.ExternalIDs, err)
		}
		a, err := cat.Get(ctx, a2)
		if err != nil {
			t.Fatal(err)
		}
		if a.Namespace != "lake" || a.Name != "t_again" || len(a.ExternalIDs) != 1 {
			t.Fatalf("the second table's asset: %s.%s with external IDs %v; want lake.t_again with its table-uuid alone", a.Namespace, a.Name, a.ExternalIDs)
		}
	})
}
