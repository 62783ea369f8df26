package versions_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// keepEnv is a catalog and a versions service over one database, at a fixed time.
type keepEnv struct {
	t   *testing.T
	ctx context.Context
	db  *storage.DB
	cat *catalog.Catalog
	svc *versions.Service
	now time.Time
}

func newKeepEnv(t *testing.T, db *storage.DB) *keepEnv {
	now := time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)
	e := &keepEnv{t: t, ctx: context.Background(), db: db, now: now}
	clock := func() time.Time { return e.now }
	var err error
	if e.cat, err = catalog.New(db, catalog.WithClock(clock)); err != nil {
		t.Fatal(err)
	}
	if e.svc, err = versions.New(db, e.cat, versions.WithClock(clock)); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *keepEnv) asset(ns, name string) uuid.UUID {
	e.t.Helper()
	res, err := e.cat.Create(e.ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: ns, Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Asset.ID
}

// snapshots records dated snapshots of the asset, as a sync would.
func (e *keepEnv) snapshots(asset uuid.UUID, at map[int64]time.Time) {
	e.t.Helper()
	var obs []versions.Observed
	for id, t := range at {
		id := id
		obs = append(obs, versions.Observed{AssetID: asset, SnapshotID: &id, CommittedAt: t, Source: versions.SourceSync})
	}
	if err := e.svc.Record(e.ctx, obs); err != nil {
		e.t.Fatal(err)
	}
}

// read stores a usage record naming the version read, as a scan report's would.
func (e *keepEnv) read(asset uuid.UUID, version, actor string, at time.Time) {
	e.t.Helper()
	err := e.db.Client.UsageEvent.Create().SetEventKey(uuid.NewString()).SetAssetID(asset).SetKind(usageevent.KindRead).
		SetActor(actor).SetSource("iceberg-rest").SetAt(at.UTC()).SetDay(at.UTC().Format(time.DateOnly)).SetReceivedAt(e.now).
		SetVersion(version).Exec(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
}

// edge pins a run's input or output to a version with a label.
func (e *keepEnv) edge(run string, asset uuid.UUID, role runversion.Role, version string, kind runversion.Kind) {
	e.t.Helper()
	err := e.db.Client.RunVersion.Create().SetRunID(run).SetAssetID(asset).SetRole(role).SetVersion(version).SetKind(kind).
		SetAt(e.now).SetUpdatedAt(e.now).Exec(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *keepEnv) tag(asset uuid.UUID, tag string) {
	e.t.Helper()
	if _, err := e.cat.AddLabel(e.ctx, asset, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: tag}); err != nil {
		e.t.Fatal(err)
	}
}

// summary is a keep list in short: version/reason/readers:reads or downstream.
func summary(ks []versions.Keep) string {
	var parts []string
	for _, k := range ks {
		s := k.Version + "/" + k.Reason
		for _, r := range k.Readers {
			s += "/" + r.Reader + ":" + strconv.FormatInt(r.Reads, 10)
		}
		if k.Reason == versions.KeepInputVersion {
			s += "/" + k.DownstreamName + "@" + k.DownstreamVersion + "/" + k.Run
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestTimeTravelReads: a read counts as time travel only when a newer version of the asset was
// committed before it; reads before the window and reads of the version current then do not
// count; the readers are grouped with their counts and last read; an undated version read
// after a dated one counts.
func TestTimeTravelReads(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newKeepEnv(t, db)
		orders := e.asset("raw", "orders")
		day := 24 * time.Hour
		t1, t2, t3 := e.now.Add(-10*day), e.now.Add(-6*day), e.now.Add(-3*day)
		e.snapshots(orders, map[int64]time.Time{101: t1, 102: t2, 103: t3})
		since := e.now.Add(-5 * day)

		e.read(orders, "101", "alice", e.now.Add(-2*day))              // 102 and 103 existed: time travel
		e.read(orders, "101", "alice", e.now.Add(-1*day))              // again
		e.read(orders, "101", "bob", e.now.Add(-4*day))                // another reader
		e.read(orders, "102", "carol", e.now.Add(-4*day))              // 102 was current then (103 came later)
		e.read(orders, "102", "dave", e.now.Add(-2*day))               // 103 existed: time travel
		e.read(orders, "101", "erin", e.now.Add(-7*day))               // time travel, but before the window
		e.read(orders, "103", "frank", e.now.Add(-1*day))              // current: not time travel
		e.read(orders, "staging-7", "gina", e.now.Add(-1*day))         // undated, dated versions before it
		e.read(e.asset("raw", "other"), "101", "hal", e.now.Add(-day)) // another asset's

		got, err := e.svc.TimeTravelReadsSince(e.ctx, orders, nil, since)
		if err != nil {
			t.Fatal(err)
		}
		if s, want := summary(got), "101/read by time travel/alice:2/bob:1 102/read by time travel/dave:1 staging-7/read by time travel/gina:1"; s != want {
			t.Fatalf("time travel:\n got %s\nwant %s", s, want)
		}
		if r := got[0].Readers[0]; !r.Last.Equal(e.now.Add(-day)) || !r.First.Equal(e.now.Add(-2*day)) || got[0].Reads() != 3 {
			t.Fatalf("alice's reads: %+v (total %d)", r, got[0].Reads())
		}
		if why := got[0].Why(); !strings.Contains(why, "read by time travel by alice, 2 reads, last at "+e.now.Add(-day).Format(time.RFC3339)) {
			t.Fatalf("why: %s", why)
		}
		// Restricted to listed snapshots.
		got, err = e.svc.TimeTravelReadsSince(e.ctx, orders, []int64{102, 999}, since)
		if err != nil {
			t.Fatal(err)
		}
		if s := summary(got); s != "102/read by time travel/dave:1" {
			t.Fatalf("listed: %s", s)
		}
		// Every read since a time, time travel or not.
		got, err = e.svc.ReadsSince(e.ctx, orders, []int64{102, 103}, e.now.Add(-5*day))
		if err != nil {
			t.Fatal(err)
		}
		if s := summary(got); s != "102/read/dave:1/carol:1 103/read/frank:1" {
			t.Fatalf("reads since: %s", s)
		}
		if got, err := e.svc.ReadsSince(e.ctx, orders, nil, since); err != nil || len(got) != 0 {
			t.Fatalf("reads of no snapshot: %v %v", got, err)
		}
	})
}

// TestInputKeeps: a downstream asset tagged keep-input-versions keeps the input version of the
// run that built its current version (an Iceberg table's current snapshot, else its newest
// version); not the inputs of its older versions, not unknown edges, not for untagged or
// untagged-again assets.
func TestInputKeeps(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newKeepEnv(t, db)
		day := 24 * time.Hour
		orders := e.asset("raw", "orders")
		e.snapshots(orders, map[int64]time.Time{101: e.now.Add(-10 * day), 102: e.now.Add(-6 * day), 103: e.now.Add(-3 * day)})

		// daily: not an Iceberg table here; its newest version is v2, built from 102 (stated);
		// v1 was built from 101.
		daily := e.asset("mart", "orders_daily")
		for v, at := range map[string]time.Time{"v1": e.now.Add(-9 * day), "v2": e.now.Add(-5 * day)} {
			if err := e.svc.Record(e.ctx, []versions.Observed{{AssetID: daily, Version: v, CommittedAt: at, Source: versions.SourceOpenLineage}}); err != nil {
				t.Fatal(err)
			}
		}
		e.edge("run-1", orders, runversion.RoleInput, "101", runversion.KindStated)
		e.edge("run-1", daily, runversion.RoleOutput, "v1", runversion.KindStated)
		e.edge("run-2", orders, runversion.RoleInput, "102", runversion.KindInferred)
		e.edge("run-2", daily, runversion.RoleOutput, "v2", runversion.KindReported)

		// report: an Iceberg table whose current snapshot 7 was built by run-3, whose input
		// edge to orders is unknown; and snapshot 8 (not current) was built from 103.
		report := e.asset("mart", "report")
		must(t, db.Client.IcebergTable.Create().SetID(report).SetTableUUID(uuid.NewString()).SetLocation("file:///tmp/report").
			SetMetadataLocation("file:///tmp/report/metadata/v1.json").SetCurrentSnapshotID(7).SetCreatedAt(e.now).SetUpdatedAt(e.now).Exec(e.ctx))
		e.snapshots(report, map[int64]time.Time{7: e.now.Add(-4 * day), 8: e.now.Add(-1 * day)})
		e.edge("run-3", orders, runversion.RoleInput, "", runversion.KindUnknown)
		e.edge("run-3", report, runversion.RoleOutput, "7", runversion.KindInferred)
		e.edge("run-4", orders, runversion.RoleInput, "103", runversion.KindStated)
		e.edge("run-4", report, runversion.RoleOutput, "8", runversion.KindStated)

		got, err := e.svc.InputKeeps(e.ctx, orders)
		if err != nil || len(got) != 0 {
			t.Fatalf("nobody asked: %+v %v", got, err)
		}
		e.tag(daily, versions.KeepInputVersionsTag)
		e.tag(report, versions.KeepInputVersionsTag+".true")
		got, err = e.svc.InputKeeps(e.ctx, orders)
		if err != nil {
			t.Fatal(err)
		}
		if s := summary(got); s != "102/input version/mart.orders_daily@v2/run-2" {
			t.Fatalf("input keeps: %s", s)
		}
		if why := got[0].Why(); why != "input version of mart.orders_daily current version (keep-input-versions)" {
			t.Fatalf("why: %s", why)
		}
		// The report's current snapshot becomes 8: its input 103 is kept too.
		must(t, db.Client.IcebergTable.UpdateOneID(report).SetCurrentSnapshotID(8).Exec(e.ctx))
		e.read(orders, "101", "alice", e.now.Add(-day))
		got, err = e.svc.Keeps(e.ctx, orders, e.now.Add(-5*day))
		if err != nil {
			t.Fatal(err)
		}
		want := "101/read by time travel/alice:1 102/input version/mart.orders_daily@v2/run-2 103/input version/mart.report@8/run-4"
		if s := summary(got); s != want {
			t.Fatalf("keeps:\n got %s\nwant %s", s, want)
		}
		// The tag removed: the daily table no longer asks.
		if _, err := e.cat.RemoveLabel(e.ctx, daily, catalog.AnyVersion, uuid.Nil, catalog.LabelTag, versions.KeepInputVersionsTag); err != nil {
			t.Fatal(err)
		}
		got, err = e.svc.InputKeeps(e.ctx, orders)
		if s := summary(got); err != nil || s != "103/input version/mart.report@8/run-4" {
			t.Fatalf("after the tag was removed: %s %v", s, err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
