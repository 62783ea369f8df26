package cleanup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// lateKeeps lets the env build the cleanup service before the versions service that needs
// the env's catalog.
type lateKeeps struct{ v *versions.Service }

func (l *lateKeeps) Keeps(ctx context.Context, asset uuid.UUID, since time.Time) ([]versions.Keep, error) {
	return l.v.Keeps(ctx, asset, since)
}

func (l *lateKeeps) ReadsSince(ctx context.Context, asset uuid.UUID, snapshots []int64, since time.Time) ([]versions.Keep, error) {
	return l.v.ReadsSince(ctx, asset, snapshots, since)
}

// newVersionsEnv is newEnv with snapshot expiry consulting a real versions service.
func newVersionsEnv(t *testing.T, db *storage.DB, opts ...cleanup.Option) (*env, *versions.Service) {
	t.Helper()
	lk := &lateKeeps{}
	e := newEnv(t, db, append([]cleanup.Option{cleanup.WithVersions(lk)}, opts...)...)
	var err error
	if lk.v, err = versions.New(db, e.cat, versions.WithClock(e.clock.Now)); err != nil {
		t.Fatal(err)
	}
	return e, lk.v
}

// recordSnapshots records the table's snapshots as versions, dated, as a sync does.
func recordSnapshots(t *testing.T, e *env, vs *versions.Service) {
	t.Helper()
	var obs []versions.Observed
	for _, sn := range e.tbl.Metadata().Snapshots() {
		id := sn.SnapshotID
		obs = append(obs, versions.Observed{AssetID: e.id, SnapshotID: &id, CommittedAt: time.UnixMilli(sn.TimestampMs).UTC(), Source: versions.SourceSync})
	}
	must(t, vs.Record(e.ctx, obs))
}

// readSnapshot stores a read of a snapshot of the asset at a time, naming the version as a scan
// report does. (usage.Record takes no version yet: the row is written as it stores one.)
func readSnapshot(t *testing.T, db *storage.DB, e *env, snapshot int64, actor string, at time.Time) {
	t.Helper()
	must(t, db.Client.UsageEvent.Create().SetEventKey(uuid.NewString()).SetAssetID(e.id).SetKind(usageevent.KindRead).
		SetActor(actor).SetSource("iceberg-rest").SetAt(at.UTC()).SetDay(at.UTC().Format(time.DateOnly)).
		SetReceivedAt(e.clock.Now()).SetVersion(fmt.Sprint(snapshot)).Exec(e.ctx))
}

// onlyExpiry is the one open expiry proposal.
func onlyExpiry(t *testing.T, e *env) cleanup.Proposal {
	t.Helper()
	ps := e.proposals(cleanup.KindExpireSnapshots, "open")
	if len(ps) != 1 {
		t.Fatalf("open expiry proposals: %+v", ps)
	}
	return ps[0]
}

// manifestList is the manifest list of a snapshot: a file only that snapshot references.
func manifestList(t *testing.T, e *env, id int64) string {
	t.Helper()
	sn := e.tbl.Metadata().SnapshotByID(id)
	if sn == nil {
		t.Fatalf("no snapshot %d", id)
	}
	return localPath(sn.ManifestList)
}

// TestExpiryKeepsASnapshotReadByTimeTravel: a snapshot read by time travel two days ago is
// no longer proposed for expiry: the open proposal that listed it is withdrawn saying why, and
// the new one keeps it, lists it with the reader, the time and the count, in its evidence and
// its summary, and lists none of the files only it references. A read before the window keeps
// nothing.
func TestExpiryKeepsASnapshotReadByTimeTravel(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e, vs := newVersionsEnv(t, db)
		readyExpiry(t, e)
		recordSnapshots(t, e, vs)
		e.clock.Add(72 * time.Hour)
		e.propose()
		first := onlyExpiry(t, e)
		if len(first.Evidence.Snapshots) != 4 || len(first.Evidence.Kept) != 0 || first.Evidence.From == nil {
			t.Fatalf("without reads: %+v", first.Evidence)
		}
		target := first.Evidence.Snapshots[1]
		_, listed, _ := expiryList(t, e, first.ID)
		if !slices.Contains(listed, manifestList(t, e, target)) {
			t.Fatalf("the first list lacks the manifest list of snapshot %d: %v", target, listed)
		}

		at := e.clock.Now().Add(-48 * time.Hour).Truncate(time.Microsecond) // as the databases keep it
		readSnapshot(t, db, e, target, "alice", at)
		readSnapshot(t, db, e, first.Evidence.Snapshots[2], "old-report", e.clock.Now().Add(-100*24*time.Hour)) // before the window
		e.propose()

		why := fmt.Sprintf("snapshot %d: read by time travel by alice, 1 read, last at %s", target, at.Format(time.RFC3339))
		gone := e.proposals(cleanup.KindExpireSnapshots, "withdrawn")
		if len(gone) != 1 || gone[0].ID != first.ID || !strings.Contains(gone[0].Reason, "still needed: "+why) {
			t.Fatalf("withdrawn: %+v", gone)
		}
		p := onlyExpiry(t, e)
		want := slices.DeleteFunc(slices.Clone(first.Evidence.Snapshots), func(id int64) bool { return id == target })
		if !slices.Equal(p.Evidence.Snapshots, want) {
			t.Fatalf("snapshots %v, want %v", p.Evidence.Snapshots, want)
		}
		k := p.Evidence.Kept
		if len(k) != 1 || k[0].Snapshot != target || k[0].Reason != versions.KeepTimeTravel || len(k[0].Readers) != 1 ||
			k[0].Readers[0].Reader != "alice" || k[0].Readers[0].Reads != 1 || !k[0].Readers[0].LastRead.Equal(at) {
			t.Fatalf("kept: %+v", k)
		}
		if !strings.Contains(p.Evidence.Summary, why) || !strings.Contains(p.Evidence.Summary, "keeps 1 snapshots") {
			t.Fatalf("the summary does not say what it keeps: %s", p.Evidence.Summary)
		}
		if _, listed, _ := expiryList(t, e, p.ID); slices.Contains(listed, manifestList(t, e, target)) {
			t.Fatalf("the list has the manifest list of the kept snapshot %d", target)
		}
		// The stored evidence says the same as the API's.
		row, err := db.Client.Proposal.Get(e.ctx, p.ID)
		must(t, err)
		if !strings.Contains(row.Evidence, `"kept":[{"snapshot":`+fmt.Sprint(target)+`,"reason":"read by time travel"`) {
			t.Fatalf("stored evidence: %s", row.Evidence)
		}
	})
}

// TestExpiryKeepsTheInputOfAKeepingDownstream: the snapshot a downstream table's current
// version was built from is kept once that table carries keep-input-versions, and the proposal
// says which table and why.
func TestExpiryKeepsTheInputOfAKeepingDownstream(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e, vs := newVersionsEnv(t, db)
		readyExpiry(t, e)
		recordSnapshots(t, e, vs)
		e.propose()
		first := onlyExpiry(t, e)
		target := first.Evidence.Snapshots[2]

		res, err := e.cat.Create(e.ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "mart", Name: "events_daily"})
		must(t, err)
		daily := res.Asset.ID
		must(t, vs.Record(e.ctx, []versions.Observed{{AssetID: daily, Version: "d-1", CommittedAt: e.clock.Now(), Source: versions.SourceOpenLineage}}))
		for _, edge := range []struct {
			asset   uuid.UUID
			role    runversion.Role
			version string
		}{{e.id, runversion.RoleInput, fmt.Sprint(target)}, {daily, runversion.RoleOutput, "d-1"}} {
			must(t, db.Client.RunVersion.Create().SetRunID("run-1").SetAssetID(edge.asset).SetRole(edge.role).SetVersion(edge.version).
				SetKind(runversion.KindStated).SetAt(e.clock.Now()).SetUpdatedAt(e.clock.Now()).Exec(e.ctx))
		}
		if r := e.propose(); r.Withdrawn != 0 || len(onlyExpiry(t, e).Evidence.Kept) != 0 {
			t.Fatalf("kept for a downstream that did not ask: %+v", r)
		}

		_, err = e.cat.AddLabel(e.ctx, daily, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: versions.KeepInputVersionsTag})
		must(t, err)
		e.propose()
		reason := "input version of mart.events_daily current version (keep-input-versions)"
		if gone := e.proposals(cleanup.KindExpireSnapshots, "withdrawn"); len(gone) != 1 || !strings.Contains(gone[0].Reason, fmt.Sprintf("snapshot %d: %s", target, reason)) {
			t.Fatalf("withdrawn: %+v", gone)
		}
		p := onlyExpiry(t, e)
		k := p.Evidence.Kept
		if slices.Contains(p.Evidence.Snapshots, target) || len(p.Evidence.Snapshots) != 3 || len(k) != 1 || k[0].Snapshot != target ||
			k[0].Reason != reason || k[0].Downstream == nil || *k[0].Downstream != daily || k[0].DownstreamVersion != "d-1" || k[0].Run != "run-1" {
			t.Fatalf("snapshots %v, kept %+v", p.Evidence.Snapshots, k)
		}
		if !strings.Contains(p.Evidence.Summary, fmt.Sprintf("snapshot %d: %s", target, reason)) {
			t.Fatalf("summary: %s", p.Evidence.Summary)
		}
	})
}

// TestExpiryKeepsASnapshotReadAfterApproval: right before the commit, the executor re-reads the
// reads: an approved snapshot read after the approval is kept (by time travel when the versions
// date it; read since the proposal opened when they do not), the others are expired and only
// their files deleted, and the outcome says which snapshot was kept and why. When every approved
// snapshot is read, nothing is expired and the proposal stops saying so. Without reads, all go.
func TestExpiryKeepsASnapshotReadAfterApproval(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dated    bool // the table's snapshots are recorded as versions
		readAll  bool
		noReads  bool
		wantWhy  string
		stopsAll bool
	}{
		{name: "time travel", dated: true, wantWhy: versions.KeepTimeTravel},
		{name: "undated", wantWhy: "read since the proposal opened"},
		{name: "every snapshot read", dated: true, readAll: true, stopsAll: true},
		{name: "no reads", dated: true, noReads: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
				e, vs := newVersionsEnv(t, db)
				ps := proposeExpiry(t, e)
				if len(ps) != 1 || len(ps[0].Evidence.Snapshots) != 4 {
					t.Fatalf("proposals: %+v", ps)
				}
				p := ps[0]
				if tc.dated {
					recordSnapshots(t, e, vs)
				}
				fs, listed, _ := expiryList(t, e, p.ID)
				if _, err := e.svc.Approve(e.person("alice"), p.ID, ""); err != nil {
					t.Fatal(err)
				}
				target := p.Evidence.Snapshots[1]
				read := []int64{target}
				if tc.readAll {
					read = p.Evidence.Snapshots
				}
				if tc.noReads {
					read = nil
				}
				e.clock.Add(time.Hour)
				for _, id := range read {
					readSnapshot(t, db, e, id, "bob", e.clock.Now())
				}
				before := e.lake.DiskFiles()
				e.clock.Add(100 * time.Hour)
				r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
				must(t, err)
				got, err := e.svc.GetProposal(e.ctx, p.ID)
				must(t, err)
				live, err := e.tables.Open(e.ctx, e.id)
				must(t, err)
				has := func(id int64) bool { return live.Table.Metadata().SnapshotByID(id) != nil }

				if tc.stopsAll {
					if r.Stopped != 1 || got.State != string(proposal.StateStopped) || !strings.Contains(got.Reason, "every approved snapshot the table still has is still needed") ||
						!strings.Contains(got.Reason, fmt.Sprintf("snapshot %d: read by time travel by bob", target)) {
						t.Fatalf("execute %+v: %s %q", r, got.State, got.Reason)
					}
					if deleted := removedSince(before, e.lake.DiskFiles()); len(deleted) != 0 || slices.ContainsFunc(p.Evidence.Snapshots, func(id int64) bool { return !has(id) }) {
						t.Fatalf("removed %v although every snapshot is read", deleted)
					}
					return
				}
				if r.Executed != 1 || got.State != string(proposal.StateExecuted) {
					t.Fatalf("execute %+v: %s %q", r, got.State, got.Reason)
				}
				var out cleanup.OrphanOutcome
				must(t, json.Unmarshal(got.Outcome, &out))
				for _, id := range p.Evidence.Snapshots {
					if kept := id == target && !tc.noReads; has(id) != kept {
						t.Fatalf("snapshot %d in the table: %v, want %v", id, has(id), kept)
					}
				}
				if tc.noReads {
					if len(out.SnapshotsKept) != 0 || !slices.Equal(removedSince(before, e.lake.DiskFiles()), listed) {
						t.Fatalf("without reads: outcome %s", got.Outcome)
					}
					return
				}
				if k := out.SnapshotsKept; len(k) != 1 || k[0].Snapshot != target || k[0].Reason != tc.wantWhy ||
					len(k[0].Readers) != 1 || k[0].Readers[0].Reader != "bob" || !strings.Contains(k[0].Detail, "by bob, 1 read") {
					t.Fatalf("outcome: %s", got.Outcome)
				}
				// Its files stay, journaled as kept; every other listed file is deleted.
				keptList := manifestList(t, e, target)
				if !slices.Contains(listed, keptList) {
					t.Fatalf("the list lacks the kept snapshot's manifest list")
				}
				skipped, err := e.svc.ProposalFiles(e.ctx, p.ID, cleanup.FileFilter{State: "skipped"})
				must(t, err)
				var stay []string
				for _, f := range skipped {
					if !strings.Contains(f.Detail, "kept at execution") {
						t.Fatalf("skipped for another reason: %+v", f)
					}
					stay = append(stay, localPath(f.Path))
				}
				if !slices.Contains(stay, keptList) || len(stay) == len(fs) || !exists(keptList) {
					t.Fatalf("kept files %v of %d", stay, len(fs))
				}
				want := slices.DeleteFunc(slices.Clone(listed), func(p string) bool { return slices.Contains(stay, p) })
				if deleted := removedSince(before, e.lake.DiskFiles()); !slices.Equal(deleted, want) {
					t.Fatalf("deleted %v\nwant    %v", deleted, want)
				}
				if rc := e.checkRefs(); rc.DanglingCount != 0 {
					t.Fatalf("dangling after expiry: %d", rc.DanglingCount)
				}
			})
		})
	}
}
