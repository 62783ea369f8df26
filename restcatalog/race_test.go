package restcatalog_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/warehouse"
)

// retrying makes iceberg-go refresh, revalidate and replay a commit the catalog rejected.
var retrying = icecat.WithProperties(iceberg.Properties{
	table.CommitNumRetriesKey: "1000", table.CommitMinRetryWaitMsKey: "1", table.CommitMaxRetryWaitMsKey: "20"})

// racingCommits is how many appends TestRacingWriters races. The default keeps `go test -race
// ./...` within CI's budget; the issue's figure is -racing-commits 500 (about a minute a store
// without -race).
var racingCommits = flag.Int("racing-commits", 100, "appends two writers race in TestRacingWriters")

// TestRacingWriters has two clients append to one table at once: every append lands exactly
// once, the losers of races get 409 and succeed after revalidating, and no update is lost.
func TestRacingWriters(t *testing.T) {
	commits := *racingCommits
	if testing.Short() {
		commits = min(commits, 40)
	}
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		ident := table.Identifier{"stream", "events"}
		setup := s.client(t)
		if err := setup.CreateNamespace(ctx, table.Identifier{"stream"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := setup.CreateTable(ctx, ident, tablestest.Schema, retrying); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cat := s.client(t) // each writer its own client, as two engines would be
				tbl, err := cat.LoadTable(ctx, ident)
				if err != nil {
					errs <- err
					return
				}
				for i := w; i < commits; i += 2 {
					rdr := s.lake.Record(tbl, []tablestest.Row{{ID: int64(i), Region: "eu"}})
					if tbl, err = tbl.Append(ctx, rdr, nil); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("a writer failed: %v", err)
		}
		final, err := setup.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		// Every append is a snapshot in the current chain, and every row is there once.
		chain := 0
		for snap := final.CurrentSnapshot(); snap != nil; {
			chain++
			if snap.ParentSnapshotID == nil {
				break
			}
			snap = final.Metadata().SnapshotByID(*snap.ParentSnapshotID)
		}
		if chain != commits {
			t.Fatalf("the current snapshot has %d ancestors (itself included), want %d: an append was lost", chain, commits)
		}
		files := s.lake.Files(final, *final.CurrentSnapshot())
		var rows int64
		for _, f := range files {
			rows += f[1]
		}
		if len(files) != commits || rows != int64(commits) {
			t.Fatalf("the table holds %d files and %d rows, want %d of each", len(files), rows, commits)
		}
		id := assetOf(t, s, final)
		recs, _, err := s.App.Warehouse.Commits(ctx, id, uuid.Nil, 100000)
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]int{}
		for _, c := range recs {
			by[c.Kind+"/"+c.State]++
		}
		if by["commit/committed"] != commits {
			t.Fatalf("recorded %d committed appends, want %d (%v)", by["commit/committed"], commits, by)
		}
		if by["commit/conflict"] == 0 {
			t.Fatalf("two writers raced %d times and no commit was refused with 409: %v", commits, by)
		}
		t.Logf("%d commits, %d refused with 409 and retried", commits, by["commit/conflict"])
		live, complete, err := s.App.Warehouse.LiveFromInventory(ctx, id, final.Metadata(), final.CurrentSnapshot().SnapshotID)
		if err != nil || !complete || len(live) != len(files) {
			t.Fatalf("the inventory holds %d live files (complete %v, err %v), the walk %d", len(live), complete, err, len(files))
		}
		for p := range files {
			if !live[p] {
				t.Fatalf("the walk found %s, the inventory does not hold it", p)
			}
		}
	})
}

func assetOf(t *testing.T, s *testServer, tbl *table.Table) uuid.UUID {
	t.Helper()
	ref, ok, err := s.App.Catalog.LookupExternal(context.Background(), catalog.SystemIcebergTable, tbl.Metadata().TableUUID().String())
	if err != nil || !ok {
		t.Fatalf("table %s has no asset: %v", tbl.Metadata().TableUUID(), err)
	}
	return ref.ID
}

// TestTransactionAllOrNothing commits to two tables at once: one failed requirement changes
// neither; a valid transaction changes both.
func TestTransactionAllOrNothing(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		a := create(t, cat, "tx", "a")
		b, err := cat.CreateTable(ctx, table.Identifier{"tx", "b"}, tablestest.Schema)
		if err != nil {
			t.Fatal(err)
		}
		b = s.append(t, b, 0, 5)
		stale := int64(12345) // not b's current snapshot
		txc := cat.(icecat.TransactionalCatalog)
		err = txc.CommitTransaction(ctx, []table.TableCommit{
			{Identifier: table.Identifier{"tx", "a"}, Requirements: []table.Requirement{table.AssertTableUUID(a.Metadata().TableUUID())},
				Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"batch": "1"})}},
			{Identifier: table.Identifier{"tx", "b"}, Requirements: []table.Requirement{table.AssertRefSnapshotID("main", &stale)},
				Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"batch": "1"})}},
		})
		if !errors.Is(err, rest.ErrCommitFailed) {
			t.Fatalf("a transaction with a failed requirement gave %v, want a 409 commit failure", err)
		}
		for _, n := range []string{"a", "b"} {
			got, err := cat.LoadTable(ctx, table.Identifier{"tx", n})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Properties()["batch"]; ok {
				t.Fatalf("table %s changed although the transaction failed", n)
			}
		}
		cur := b.CurrentSnapshot().SnapshotID
		err = txc.CommitTransaction(ctx, []table.TableCommit{
			{Identifier: table.Identifier{"tx", "a"}, Requirements: []table.Requirement{table.AssertTableUUID(a.Metadata().TableUUID())},
				Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"batch": "2"})}},
			{Identifier: table.Identifier{"tx", "b"}, Requirements: []table.Requirement{table.AssertRefSnapshotID("main", &cur)},
				Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"batch": "2"})}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var txIDs []uuid.UUID
		for _, n := range []string{"a", "b"} {
			got, err := cat.LoadTable(ctx, table.Identifier{"tx", n})
			if err != nil {
				t.Fatal(err)
			}
			if got.Properties()["batch"] != "2" {
				t.Fatalf("table %s lacks the committed transaction's property: %v", n, got.Properties())
			}
			recs, _, err := s.App.Warehouse.Commits(ctx, assetOf(t, s, got), uuid.Nil, 10)
			if err != nil || recs[0].TransactionID == nil {
				t.Fatalf("table %s's newest commit is not part of a transaction: %+v %v", n, recs[0], err)
			}
			txIDs = append(txIDs, *recs[0].TransactionID)
		}
		if txIDs[0] != txIDs[1] {
			t.Fatalf("the two tables' commits are in transactions %s and %s, want one", txIDs[0], txIDs[1])
		}
	})
}

// TestCrashBeforeSwap stops a commit between writing its metadata file and swapping the
// pointer: the client is told the outcome is unknown, the pointer still names a file that
// exists (no dangling reference), and once settled the written file is listed as a staged
// leftover.
func TestCrashBeforeSwap(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var mu sync.Mutex
		crash := false
		s := newServer(t, db, warehouse.WithFaults(warehouse.Faults{BeforeSwap: func(ctx context.Context, written []string) error {
			mu.Lock()
			defer mu.Unlock()
			if crash {
				crash = false
				return errors.New("injected: the process stops here")
			}
			return nil
		}}))
		cat := s.client(t)
		tbl := create(t, cat, "c", "t")
		tbl = s.append(t, tbl, 0, 3)
		before := tbl.MetadataLocation()
		mu.Lock()
		crash = true
		mu.Unlock()
		_, err := tbl.Append(ctx, s.lake.Record(tbl, tablestest.Rows(3, 3, time.UnixMilli(tbl.Metadata().LastUpdatedMillis()))), nil)
		if !errors.Is(err, rest.ErrCommitStateUnknown) {
			t.Fatalf("the interrupted commit gave %v, want commit state unknown", err)
		}
		now, err := cat.LoadTable(ctx, table.Identifier{"c", "t"})
		if err != nil {
			t.Fatal(err)
		}
		if now.MetadataLocation() != before {
			t.Fatalf("the pointer moved to %s although the swap never happened", now.MetadataLocation())
		}
		if _, err := os.Stat(strings.TrimPrefix(now.MetadataLocation(), "file://")); err != nil {
			t.Fatalf("the pointer names a missing file: %v", err)
		}
		if n, err := s.App.Warehouse.ResolvePending(ctx, 0); err != nil || n != 1 {
			t.Fatalf("settled %d pending commits (err %v), want 1", n, err)
		}
		id := assetOf(t, s, now)
		staged, _, err := s.App.Warehouse.Inventory(ctx, id, warehouse.InventoryFilter{Change: "staged", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, f := range staged {
			kinds[f.Kind]++
			if _, err := os.Stat(strings.TrimPrefix(f.Path, "file://")); err != nil {
				t.Fatalf("the leftover %s is not on disk: %v", f.Path, err)
			}
			if f.Path == before {
				t.Fatal("the leftover is the live metadata file")
			}
		}
		// The metadata file it wrote, and what its snapshot wrote: read from that metadata file.
		if kinds["metadata"] != 1 || kinds["manifest_list"] != 1 || kinds["manifest"] != 1 || kinds["data"] != 1 {
			t.Fatalf("staged leftovers %+v, want the interrupted commit's metadata file, manifest list, manifest and data file", staged)
		}
		// The table goes on: the next commit succeeds from the pointer that stayed.
		if _, err := now.Append(ctx, s.lake.Record(now, tablestest.Rows(6, 3, time.UnixMilli(now.Metadata().LastUpdatedMillis()))), nil); err != nil {
			t.Fatal(err)
		}
	})
}
