package cleanup_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/usage"
)

// hookServer is an owner's webhook: a real HTTP server that records what it receives.
type hookServer struct {
	mu   sync.Mutex
	keys map[string]int // Idempotency-Key -> deliveries
	evs  []string
	*httptest.Server
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{keys: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n cleanup.Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || r.Header.Get("Idempotency-Key") != n.ID.String() {
			http.Error(w, "bad notification", 400)
			return
		}
		h.mu.Lock()
		h.keys[n.ID.String()]++
		h.evs = append(h.evs, n.Event+":"+n.Proposal.Kind)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (e *env) person(name string) context.Context { return catalog.WithActor(e.ctx, "token:"+name) }

func (e *env) propose() cleanup.ProposeReport {
	e.t.Helper()
	r, err := e.svc.Propose(e.ctx)
	if err != nil {
		e.t.Fatalf("propose: %v", err)
	}
	return r
}

func (e *env) proposals(kind, state string) []cleanup.Proposal {
	e.t.Helper()
	ps, err := e.svc.Proposals(e.ctx, cleanup.ProposalFilter{Kind: kind, State: state, Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return ps
}

// TestUnusedAssetAndNotifications is the seed's case: a table renamed and read only under its
// old name last week is not proposed; a table unused for 100 days is; a read afterwards
// withdraws it; the owner's webhook receives both events, once per idempotency key.
func TestUnusedAssetAndNotifications(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		hook := newHookServer(t)
		// The dispatcher that delivers the proposals' messages (the receiver listens on loopback).
		notes, err := notify.New(db, e.cat, notify.WithClock(e.clock.Now), notify.WithPrivateWebhooks(true))
		must(t, err)
		stale := e.lake.Append(e.lake.Create("db.stale", nil), tablestest.Rows(0, 2, time.Now()))
		orders := e.lake.Append(e.lake.Create("db.orders", nil), tablestest.Rows(0, 2, time.Now()))
		_, _ = stale, orders
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Added != 2 {
			t.Fatalf("sync: %+v %v", rep, err)
		}
		must(t, notes.SetWebhook(e.ctx, "team-orders", hook.URL))
		ids := map[string]uuid.UUID{}
		for _, n := range []string{"db.stale", "db.orders", "db.events"} {
			ref, ok, err := e.cat.Lookup(e.ctx, catalog.SpaceDataset, "iceberg://lake", n)
			if err != nil || !ok {
				t.Fatalf("%s: %v", n, err)
			}
			ids[n] = ref.ID
			if _, err := e.cat.SetOwner(e.ctx, ref.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "team-orders", Role: "owner"}); err != nil {
				t.Fatal(err)
			}
		}
		must(t, e.svc.Exempt(e.person("alice"), ids["db.events"], true, "the demo's reference table"))

		// 100 days later: orders is renamed, and was read last week under its old name only.
		e.clock.Add(100 * 24 * time.Hour)
		if _, err := e.lake.Cat.RenameTable(e.ctx, table.Identifier{"db", "orders"}, table.Identifier{"db", "sales_orders"}); err != nil {
			t.Fatal(err)
		}
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Renamed != 1 {
			t.Fatalf("rename sync: %+v %v", rep, err)
		}
		recordRead(t, e, "db.orders", e.clock.Now().Add(-7*24*time.Hour), "q-1")

		r := e.propose()
		unused := e.proposals(cleanup.KindUnusedAsset, "open")
		if len(unused) != 1 || unused[0].AssetID != ids["db.stale"] || r.Opened != 1 {
			t.Fatalf("unused proposals: %+v (report %+v)", unused, r)
		}
		ev := unused[0].Evidence
		if ev.LastRead != nil || len(ev.Names) != 1 || len(ev.Owners) != 1 || ev.Window != "90 days" || !strings.Contains(ev.Summary, "No read") {
			t.Fatalf("evidence: %+v", ev)
		}
		if d, _, err := notes.Dispatch(e.ctx); err != nil || d != 1 {
			t.Fatalf("dispatch: %d %v", d, err)
		}

		// A read arrives: the bot withdraws the proposal and says why.
		recordRead(t, e, "db.stale", e.clock.Now().Add(-time.Hour), "q-2")
		if r := e.propose(); r.Withdrawn != 1 || r.Opened != 0 {
			t.Fatalf("after the read: %+v", r)
		}
		p, err := e.svc.GetProposal(e.ctx, unused[0].ID)
		if err != nil || p.State != "withdrawn" || !strings.Contains(p.Reason, "read 1 times") {
			t.Fatalf("withdrawn: %s %q %v", p.State, p.Reason, err)
		}
		for range 2 { // a second dispatch finds nothing left to send
			if _, _, err := notes.Dispatch(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		hook.mu.Lock()
		defer hook.mu.Unlock()
		if len(hook.keys) != 2 || !slices.Equal(hook.evs, []string{"proposal.opened:unused_asset", "proposal.withdrawn:unused_asset"}) {
			t.Fatalf("webhook received %v (%d keys)", hook.evs, len(hook.keys))
		}
		for k, n := range hook.keys {
			if n != 1 {
				t.Fatalf("key %s delivered %d times", k, n)
			}
		}
		p, _ = e.svc.GetProposal(e.ctx, unused[0].ID)
		if len(p.Notifications) != 2 || p.Notifications[0].State != "delivered" || p.Notifications[1].State != "delivered" {
			t.Fatalf("delivery state: %+v", p.Notifications)
		}
	})
}

func recordRead(t *testing.T, e *env, name string, at time.Time, query string) {
	t.Helper()
	res, err := e.usage.Record(e.ctx, []usage.Record{{Namespace: "iceberg://lake", Name: name, Kind: "read", Actor: "bob", At: at, QueryID: query, Source: "trino"}})
	if err != nil || res[0].Status != usage.StatusAccepted {
		t.Fatalf("record read of %s: %+v %v", name, res, err)
	}
}

// confirmOrphans writes n old orphan files and scans twice so they are confirmed.
func confirmOrphans(t *testing.T, e *env, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		paths = append(paths, e.lake.WriteFile(e.tbl, "data/orphan-"+string(rune('a'+i))+".parquet", 100+i, e.clock.Now().Add(-100*time.Hour)))
	}
	e.scan(cleanup.ScanOptions{})
	e.clock.Add(cleanup.DefaultMinGap)
	if r := e.scan(cleanup.ScanOptions{}); r.Confirmed != int64(n) {
		t.Fatalf("confirmed %d, want %d", r.Confirmed, n)
	}
	return paths
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestReverify: a confirmed orphan committed by an add_files between approval and execution is
// not deleted, and the outcome says why. Without approval nothing is deleted; the bot and
// anonymous callers cannot approve.
func TestReverify(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		paths := confirmOrphans(t, e, 2)
		e.propose()
		ps := e.proposals(cleanup.KindOrphanFiles, "open")
		if len(ps) != 1 || ps[0].Evidence.Files != 2 || len(ps[0].Evidence.Scans) != 2 || ps[0].Evidence.AgeThreshold != "72h0m0s" || !strings.Contains(ps[0].Evidence.Assumption, "longer than 3 days") || !strings.Contains(ps[0].Evidence.Summary, "2 files (") || !strings.Contains(ps[0].Evidence.Summary, "older than 3 days") {
			t.Fatalf("orphan proposal: %+v", ps)
		}
		// No approval, no deletion.
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Proposals != 0 || !exists(paths[0]) || !exists(paths[1]) {
			t.Fatalf("execute without approval: %+v %v", r, err)
		}
		for _, ctx := range []context.Context{e.ctx, catalog.WithActor(e.ctx, cleanup.BotActor), catalog.WithActor(e.ctx, "anonymous")} {
			if _, err := e.svc.Approve(ctx, ps[0].ID, ""); !errors.Is(err, catalog.ErrInvalid) {
				t.Fatalf("approval by %s: %v", catalog.ActorFrom(ctx), err)
			}
		}
		if _, err := e.svc.Reject(e.person("alice"), ps[0].ID, " "); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("reject without a reason: %v", err)
		}
		p, err := e.svc.Approve(e.person("alice"), ps[0].ID, "")
		if err != nil || p.State != "approved" || p.DecidedBy != "token:alice" {
			t.Fatalf("approve: %+v %v", p, err)
		}
		// The writer commits one of the files after all.
		e.tbl = e.lake.AddFiles(e.tbl, "file://"+paths[0])
		r, err := e.svc.Execute(e.ctx, ps[0].ID, nil)
		if err != nil || r.Deleted != 1 || r.Skipped != 1 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if !exists(paths[0]) || exists(paths[1]) {
			t.Fatalf("the committed file was deleted, or the orphan was not")
		}
		p, _ = e.svc.GetProposal(e.ctx, ps[0].ID)
		var out cleanup.OrphanOutcome
		if err := json.Unmarshal(p.Outcome, &out); err != nil || p.State != "executed" || out.Deleted != 1 {
			t.Fatalf("outcome: %s %s %v", p.State, p.Outcome, err)
		}
		var why string
		for k := range out.Skipped {
			why = k
		}
		if !strings.Contains(why, "referenced by a table's current metadata") {
			t.Fatalf("skip reason %q", why)
		}
		if r := e.propose(); r.Opened != 0 {
			t.Fatalf("after execution the bot proposed again: %+v", r)
		}
		if r := e.checkRefs(); r.DanglingCount != 0 {
			t.Fatalf("dangling after execution: %d", r.DanglingCount)
		}
		events, _, err := e.cat.Audit(e.ctx, e.id, uuid.Nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, ev := range events {
			actions = append(actions, ev.Action)
		}
		if !slices.Contains(actions, "proposal.approve") || !slices.Contains(actions, "cleanup.delete_files") {
			t.Fatalf("audit: %v", actions)
		}
	})
}

// TestCrashMidOrphanBatch: the executor crashes half way through; the rerun deletes the rest
// and nothing else.
func TestCrashMidOrphanBatch(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		calls := 0
		var crashAt int
		e := newEnv(t, db, cleanup.WithFault(func(point string) error {
			if point == "orphan_file" {
				if calls++; calls == crashAt {
					return errors.New("killed")
				}
			}
			return nil
		}))
		orphans := confirmOrphans(t, e, 8)
		before := e.lake.DiskFiles()
		e.propose()
		ps := e.proposals(cleanup.KindOrphanFiles, "open")
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		crashAt = 5
		if _, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err == nil || !strings.Contains(err.Error(), "injected crash") {
			t.Fatalf("execute with a crash: %v", err)
		}
		left := 0
		for _, p := range orphans {
			if exists(p) {
				left++
			}
		}
		if left != 4 {
			t.Fatalf("%d orphans left after the crash, want 4", left)
		}
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Deleted != 4 || r.Executed != 1 {
			t.Fatalf("rerun: %+v %v", r, err)
		}
		after := e.lake.DiskFiles()
		want := slices.DeleteFunc(slices.Clone(before), func(p string) bool { return slices.Contains(orphans, p) })
		if !slices.Equal(after, want) {
			t.Fatalf("files after: %d, want %d (only the orphans gone)", len(after), len(want))
		}
	})
}

// TestCrashBetweenWrites: a crash after an unused asset's metadata step leaves only orphans
// (the dangling check finds none); the rerun journals the step; the files go only after the
// grace period.
func TestCrashBetweenWrites(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		crash := true
		e := newEnv(t, db, cleanup.WithFault(func(point string) error {
			if point == "after_metadata" && crash {
				return errors.New("killed")
			}
			return nil
		}))
		e.clock.Add(100 * 24 * time.Hour)
		e.propose()
		ps := e.proposals(cleanup.KindUnusedAsset, "open")
		if len(ps) != 1 {
			t.Fatalf("unused proposals: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, "retire it"); err != nil {
			t.Fatal(err)
		}
		files := e.lake.DiskFiles()
		if _, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err == nil {
			t.Fatal("no crash")
		}
		if a, _ := e.cat.Get(e.ctx, e.id); a.Status != catalog.StatusDeleted {
			t.Fatalf("asset %s after the metadata step", a.Status)
		}
		if ok, _ := e.lake.Cat.CheckTableExists(e.ctx, table.Identifier{"db", "events"}); ok {
			t.Fatal("the table is still in its catalog")
		}
		if r := e.checkRefs(); r.DanglingCount != 0 || r.FilesChecked == 0 {
			t.Fatalf("dangling check after the crash: %d dangling of %d checked", r.DanglingCount, r.FilesChecked)
		}
		crash = false
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Deleted != 0 || r.Waiting != 1 {
			t.Fatalf("rerun: %+v %v", r, err)
		}
		if !slices.Equal(e.lake.DiskFiles(), files) {
			t.Fatal("files deleted before the grace period")
		}
		e.clock.Add(6 * 24 * time.Hour)
		if r, _ := e.svc.Execute(e.ctx, uuid.Nil, nil); r.Deleted != 0 {
			t.Fatal("files deleted a day before the grace period ended")
		}
		e.clock.Add(25 * time.Hour)
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 || r.Deleted != int64(len(files)) {
			t.Fatalf("after the grace period: %+v %v (%d files)", r, err, len(files))
		}
		if left := e.lake.DiskFiles(); len(left) != 0 {
			t.Fatalf("%d files left", len(left))
		}
		p, _ := e.svc.GetProposal(e.ctx, ps[0].ID)
		if p.State != "executed" || len(p.Steps) != 3 || p.Steps[0].Step != "retire_metadata" || p.Steps[1].Step != "plan_files" || p.Files["deleted"] != len(files) {
			t.Fatalf("proposal: %s, steps %+v", p.State, p.Steps)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDanglingProposal: a dangling reference found by a scan becomes a high-severity proposal
// that cannot be approved; a later clean scan withdraws it.
func TestDanglingProposal(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		fs, _ := e.tbl.FS(e.ctx)
		mfs, _ := e.tbl.CurrentSnapshot().Manifests(fs)
		var victim string
		for en, err := range mfs[0].Entries(fs, true) {
			must(t, err)
			victim = strings.TrimPrefix(en.DataFile().FilePath(), "file://")
		}
		content, err := os.ReadFile(victim)
		must(t, err)
		must(t, os.Remove(victim))
		e.checkRefs()
		e.propose()
		ps := e.proposals(cleanup.KindDangling, "open")
		if len(ps) != 1 || ps[0].Severity != "high" || ps[0].Executable || ps[0].Evidence.DanglingCount != 1 || len(ps[0].Evidence.Remedies) == 0 {
			t.Fatalf("dangling proposal: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("approving a dangling-reference proposal: %v", err)
		}
		must(t, os.WriteFile(victim, content, 0o644)) // restored from a backup
		e.clock.Add(time.Minute)
		e.checkRefs()
		if r := e.propose(); r.Withdrawn != 1 {
			t.Fatalf("after the repair: %+v", r)
		}
	})
}

// TestExpireSnapshots: a table that opts in gets an expiry proposal; executing it commits the
// expiry and leaves every file the remaining snapshots reference.
func TestExpireSnapshots(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		ps := proposeExpiry(t, e)
		if len(ps) != 1 || len(ps[0].Evidence.Snapshots) != 4 { // 6 snapshots, keep the last 2
			t.Fatalf("expiry proposal: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		// A commit after the approval: a policy applied now would expire one more snapshot;
		// execution removes exactly the approved four.
		approved := ps[0].Evidence.Snapshots
		var expiredLists []string
		for _, sn := range e.tbl.Metadata().Snapshots() {
			if slices.Contains(approved, sn.SnapshotID) {
				expiredLists = append(expiredLists, strings.TrimPrefix(sn.ManifestList, "file://"))
			}
		}
		e.tbl = e.lake.Append(e.tbl, tablestest.Rows(200, 1, time.Now()))
		e.clock.Add(100 * time.Hour) // the expired snapshots' files are older than the age threshold
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 || r.Deleted == 0 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		loaded, err := e.lake.Cat.LoadTable(e.ctx, table.Identifier{"db", "events"})
		must(t, err)
		if n := len(loaded.Metadata().Snapshots()); n != 3 {
			t.Fatalf("%d snapshots after expiry, want 3 (the approved 4 of 7 removed)", n)
		}
		for _, sn := range loaded.Metadata().Snapshots() {
			if slices.Contains(approved, sn.SnapshotID) {
				t.Fatalf("approved snapshot %d is still there", sn.SnapshotID)
			}
		}
		for _, l := range expiredLists {
			if exists(l) {
				t.Fatalf("the manifest list of an expired snapshot is still there: %s", l)
			}
		}
		for _, s := range loaded.Metadata().Snapshots() {
			for p := range e.lake.Files(loaded, s) {
				if !exists(strings.TrimPrefix(p, "file://")) {
					t.Fatalf("a file a retained snapshot references was deleted: %s", p)
				}
			}
		}
		if r := e.checkRefs(); r.DanglingCount != 0 {
			t.Fatalf("dangling after expiry: %d", r.DanglingCount)
		}
	})
}

// TestExpiryTaggedAfterApproval: a snapshot tagged after the approval is not expired; the
// execution stops and says why, and the table keeps every snapshot.
func TestExpiryTaggedAfterApproval(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		for i := range 3 {
			e.tbl = e.lake.Append(e.tbl, tablestest.Rows(100+i, 1, time.Now()))
		}
		txn := e.tbl.NewTransaction()
		must(t, txn.SetProperties(map[string]string{cleanup.PropertyExpireSnapshots: "true", cleanup.PropertySnapshotKeep: "1", cleanup.PropertySnapshotMaxAge: "1ms"}))
		var err error
		e.tbl, err = txn.Commit(e.ctx)
		must(t, err)
		_, err = e.tables.Refresh(e.ctx, e.id)
		must(t, err)
		e.clock.Add(time.Hour)
		e.propose()
		ps := e.proposals(cleanup.KindExpireSnapshots, "open")
		if len(ps) != 1 || len(ps[0].Evidence.Snapshots) != 4 {
			t.Fatalf("expiry proposal: %+v", ps)
		}
		_, err = e.svc.Approve(e.person("alice"), ps[0].ID, "")
		must(t, err)
		tagged := ps[0].Evidence.Snapshots[1]
		_, _, err = e.lake.Cat.CommitTable(e.ctx, table.Identifier{"db", "events"}, nil,
			[]table.Update{table.NewSetSnapshotRefUpdate("audit-2026", tagged, table.TagRef, 0, 0, 0)})
		must(t, err)
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Stopped != 1 || r.Deleted != 0 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		p, err := e.svc.GetProposal(e.ctx, ps[0].ID)
		must(t, err)
		if p.State != "stopped" || !strings.Contains(p.Reason, "audit-2026") {
			t.Fatalf("proposal: %s %q", p.State, p.Reason)
		}
		loaded, err := e.lake.Cat.LoadTable(e.ctx, table.Identifier{"db", "events"})
		must(t, err)
		if n := len(loaded.Metadata().Snapshots()); n != 5 {
			t.Fatalf("%d snapshots left, want all 5", n)
		}
		// The bot does not propose the tagged snapshot again.
		_, err = e.tables.Refresh(e.ctx, e.id)
		must(t, err)
		e.propose()
		for _, p := range e.proposals(cleanup.KindExpireSnapshots, "open") {
			if slices.Contains(p.Evidence.Snapshots, tagged) {
				t.Fatalf("the tagged snapshot is proposed again: %+v", p.Evidence.Snapshots)
			}
		}
	})
}

// TestLateReadsWithdraw: the bot counts reads attributed after the fact. An engine renames an
// unused table; it is read under the new name before Tidemark's next sync (the read waits
// for its name) and the bot proposes it as unused; the sync finds the rename, the waiting read
// lands on the table, and the proposal is withdrawn.
func TestLateReadsWithdraw(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		e.lake.Append(e.lake.Create("db.stale", nil), tablestest.Rows(0, 2, time.Now()))
		if _, err := e.tables.Sync(e.ctx, nil); err != nil {
			t.Fatal(err)
		}
		ref, ok, err := e.cat.Lookup(e.ctx, catalog.SpaceDataset, "iceberg://lake", "db.stale")
		if err != nil || !ok {
			t.Fatalf("db.stale: %v", err)
		}
		e.clock.Add(100 * 24 * time.Hour)
		if _, err := e.lake.Cat.RenameTable(e.ctx, table.Identifier{"db", "stale"}, table.Identifier{"db", "revived"}); err != nil {
			t.Fatal(err)
		}
		res, err := e.usage.Record(e.ctx, []usage.Record{{Namespace: "iceberg://lake", Name: "db.revived", Kind: "read", Actor: "bob",
			At: e.clock.Now().Add(-24 * time.Hour), QueryID: "q-new-name", Source: "trino"}})
		if err != nil || res[0].Status != usage.StatusUnresolved {
			t.Fatalf("read under the new name before the sync: %+v %v", res, err)
		}
		e.propose()
		var unused []cleanup.Proposal // the env's own db.events is unused too
		for _, p := range e.proposals(cleanup.KindUnusedAsset, "open") {
			if p.AssetID == ref.ID {
				unused = append(unused, p)
			}
		}
		if len(unused) != 1 {
			t.Fatalf("no unused proposal for db.stale: %+v", unused)
		}

		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Renamed != 1 {
			t.Fatalf("sync: %+v %v", rep, err)
		}
		if n, err := e.usage.ResolvePending(e.ctx, nil); err != nil || n != 1 {
			t.Fatalf("the waiting read: attributed %d (%v), want 1", n, err)
		}
		if r := e.propose(); r.Withdrawn != 1 {
			t.Fatalf("after the late read: %+v", r)
		}
		p, err := e.svc.GetProposal(e.ctx, unused[0].ID)
		if err != nil || p.State != "withdrawn" || !strings.Contains(p.Reason, "read 1 times") {
			t.Fatalf("proposal: %s %q %v", p.State, p.Reason, err)
		}
	})
}

// TestExpiryRetriesAgainstAWriter: a streaming writer commits between the executor's read and
// its commit, three times in a row; the approved expiry re-reads, revalidates and commits on
// the fourth attempt, without a new approval, removing exactly the approved snapshots and
// keeping every append.
func TestExpiryRetriesAgainstAWriter(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		var e *env
		races, attempts := 3, 0
		e = newEnv(t, db, cleanup.WithFault(func(point string) error {
			if point != "before_expire_commit" {
				return nil
			}
			if attempts++; attempts <= races {
				loaded, err := e.lake.Cat.LoadTable(e.ctx, table.Identifier{"db", "events"})
				if err != nil {
					return err
				}
				e.lake.Append(loaded, tablestest.Rows(300+attempts, 1, time.Now()))
			}
			return nil
		}))
		ps := proposeExpiry(t, e)
		if len(ps) != 1 {
			t.Fatalf("expiry proposals: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		approved := ps[0].Evidence.Snapshots
		before, rowsBefore := len(e.tbl.Metadata().Snapshots()), rowsOf(e, e.tbl)
		e.clock.Add(100 * time.Hour)
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if attempts != races+1 {
			t.Fatalf("the executor committed after %d attempts, want %d (three lost races, then a win)", attempts, races+1)
		}
		p, err := e.svc.GetProposal(e.ctx, ps[0].ID)
		if err != nil || p.State != "executed" {
			t.Fatalf("the proposal is %q (err %v), want executed without a new approval", p.State, err)
		}
		loaded, err := e.lake.Cat.LoadTable(e.ctx, table.Identifier{"db", "events"})
		must(t, err)
		for _, sn := range loaded.Metadata().Snapshots() {
			if slices.Contains(approved, sn.SnapshotID) {
				t.Fatalf("approved snapshot %d is still there", sn.SnapshotID)
			}
		}
		if n := len(loaded.Metadata().Snapshots()); n != before-len(approved)+races {
			t.Fatalf("%d snapshots after expiry, want %d: the writer's %d appends must all stay", n, before-len(approved)+races, races)
		}
		if rows := rowsOf(e, loaded); rows != rowsBefore+int64(races) {
			t.Fatalf("the table holds %d rows after the expiry, want %d", rows, rowsBefore+int64(races))
		}
	})
}

func rowsOf(e *env, tbl *table.Table) int64 {
	var n int64
	for _, f := range e.lake.Files(tbl, *tbl.CurrentSnapshot()) {
		n += f[1]
	}
	return n
}

// proposeExpiry appends four snapshots, asks that all but the last two be expired at once, and
// returns the open expiry proposals.
func proposeExpiry(t *testing.T, e *env) []cleanup.Proposal {
	t.Helper()
	readyExpiry(t, e)
	e.propose()
	return e.proposals(cleanup.KindExpireSnapshots, "open")
}

// readyExpiry appends four snapshots and asks that all but the last two be expired at once;
// the clock is the wall clock's now, after every snapshot.
func readyExpiry(t *testing.T, e *env) {
	t.Helper()
	for i := range 4 {
		e.tbl = e.lake.Append(e.tbl, tablestest.Rows(100+i, 1, time.Now()))
	}
	txn := e.tbl.NewTransaction()
	must(t, txn.SetProperties(map[string]string{cleanup.PropertyExpireSnapshots: "true", cleanup.PropertySnapshotKeep: "2", cleanup.PropertySnapshotMaxAge: "1ms"}))
	var err error
	e.tbl, err = txn.Commit(e.ctx)
	must(t, err)
	if _, err := e.tables.Refresh(e.ctx, e.id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // iceberg-go ages snapshots by the wall clock
	e.clock.Set(time.Now().UTC())
}
