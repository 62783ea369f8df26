package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
)

// queueEnv is a cleanup service over db with a storage price of $1 per GB-month (round costs).
func queueEnv(t *testing.T, db *storage.DB) (*cleanup.Service, *catalog.Catalog) {
	t.Helper()
	cat := mustCatalog(t, db)
	tbls, err := tables.New(db, cat, tables.WithWarehouseRoots(os.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return mustCleanup(t, db, cat, tbls, cleanup.WithPrices(cleanup.Prices{StorageGBMonth: 1})), cat
}

// listed writes a proposal of a kind and state whose file list is sizes, its files modified
// age ago, opened at opened; it returns the proposal's ID.
func listed(t *testing.T, db *storage.DB, cat *catalog.Catalog, kind proposal.Kind, state proposal.State, opened time.Time, age time.Duration, sizes ...int64) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	a, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "iceberg://lake", Name: "db.t" + uuid.NewString()[:8]})
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.Client.Proposal.Create().SetKind(kind).SetAssetID(a.Asset.ID).SetState(state).
		SetEvidence(fmt.Sprintf(`{"summary":"test","files":%d}`, len(sizes))).SetCreatedAt(opened).SetUpdatedAt(opened).Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		if err := db.Client.ProposalFile.Create().SetProposalID(p.ID).SetPath(fmt.Sprintf("file:///lake/%s/f-%d", p.ID, i)).
			SetSize(n).SetModifiedAt(opened.Add(-age - time.Duration(i)*time.Hour)).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return p.ID
}

// TestQueueTotalsAndSort: the totals cover every proposal a filter matches (not a page), the
// queue sorts by each column with the ID breaking ties, and pages neither repeat nor skip.
func TestQueueTotalsAndSort(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		svc, cat := queueEnv(t, db)
		now := time.Now().UTC().Truncate(time.Second)
		small := listed(t, db, cat, proposal.KindOrphanFiles, proposal.StateOpen, now.Add(-3*time.Hour), 200*time.Hour, 1e9)         // 1 file, oldest 200 h
		big := listed(t, db, cat, proposal.KindOrphanFiles, proposal.StateOpen, now.Add(-2*time.Hour), 100*time.Hour, 2e9, 1e9, 1e9) // 3 files, 4 GB, oldest 102 h
		tie := listed(t, db, cat, proposal.KindPurge, proposal.StateOpen, now.Add(-1*time.Hour), 300*time.Hour, 1e9)                 // 1 file like small
		unlisted := listed(t, db, cat, proposal.KindUnusedAsset, proposal.StateOpen, now, 0)                                         // no list
		listed(t, db, cat, proposal.KindOrphanFiles, proposal.StateRejected, now, time.Hour, 5e9)                                    // excluded by state

		for _, tc := range []struct {
			name, state, kind string
			want              cleanup.QueueTotals
		}{
			{"Open", "open", "", cleanup.QueueTotals{Proposals: 4, Files: 5, Bytes: 6e9, MonthlyCost: 6}},
			{"OpenOrphans", "open", "orphan_files", cleanup.QueueTotals{Proposals: 2, Files: 4, Bytes: 5e9, MonthlyCost: 5}},
			{"Any", "", "", cleanup.QueueTotals{Proposals: 5, Files: 6, Bytes: 11e9, MonthlyCost: 11}},
			{"Nothing", "executed", "", cleanup.QueueTotals{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := svc.QueueTotals(ctx, tc.state, tc.kind)
				if err != nil || got != tc.want {
					t.Fatalf("totals %+v (%v), want %+v", got, err, tc.want)
				}
			})
		}
		// Ties in files and bytes (small and tie) go by ID, which follows the order of creation.
		for _, tc := range []struct {
			sort, order string
			want        []uuid.UUID
		}{
			{"", "", []uuid.UUID{unlisted, tie, big, small}},
			{"opened", "asc", []uuid.UUID{small, big, tie, unlisted}},
			{"files", "desc", []uuid.UUID{big, tie, small, unlisted}},
			{"bytes", "asc", []uuid.UUID{unlisted, small, tie, big}},
			{"cost", "desc", []uuid.UUID{big, tie, small, unlisted}},
			{"oldest", "asc", []uuid.UUID{tie, small, big, unlisted}},
		} {
			t.Run("Sort_"+tc.sort+"_"+tc.order, func(t *testing.T) {
				var got []uuid.UUID
				for off := 0; ; off += 3 {
					rows, more, err := svc.Queue(ctx, cleanup.QueueQuery{State: "open", Sort: tc.sort, Order: tc.order, Offset: off, Limit: 3})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rows {
						got = append(got, r.ID)
					}
					if !more {
						break
					}
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("order %v, want %v", got, tc.want)
				}
			})
		}
		rows, _, err := svc.Queue(ctx, cleanup.QueueQuery{State: "open", Sort: "bytes", Order: "desc", Limit: 1})
		if err != nil || len(rows) != 1 || rows[0].Files != 3 || rows[0].Bytes != 4e9 || rows[0].MonthlyCost != 4 ||
			rows[0].OldestFile == nil || !rows[0].OldestFile.Equal(now.Add(-2*time.Hour-102*time.Hour)) {
			t.Fatalf("the biggest row: %+v %v", rows, err)
		}
		for _, q := range []cleanup.QueueQuery{{Sort: "size"}, {Order: "up"}, {State: "pending"}} {
			if _, _, err := svc.Queue(ctx, q); !errors.Is(err, catalog.ErrInvalid) {
				t.Errorf("%+v: %v, want invalid", q, err)
			}
		}
	})
}

// TestDecideSelection: a selection is decided only with its exact typed totals, and only while
// every proposal in it is open and unchanged; then each is decided as a single decision is.
func TestDecideSelection(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		svc, cat := queueEnv(t, db)
		ctx := catalog.WithActor(context.Background(), "web:alice")
		now := time.Now().UTC()
		a := listed(t, db, cat, proposal.KindOrphanFiles, proposal.StateOpen, now, 100*time.Hour, 10, 20)
		b := listed(t, db, cat, proposal.KindOrphanFiles, proposal.StateOpen, now, 100*time.Hour, 30)
		ids := []uuid.UUID{a, b}
		rows, tot, err := svc.Selected(ctx, ids)
		if err != nil || len(rows) != 2 || rows[0].ID != a || tot != (cleanup.QueueTotals{Proposals: 2, Files: 3, Bytes: 60, MonthlyCost: 60 / 1e9}) {
			t.Fatalf("selected %+v %+v %v", rows, tot, err)
		}
		vs := []int64{rows[0].Version, rows[1].Version}
		for _, tc := range []struct {
			name string
			d    cleanup.SelectionDecision
		}{
			{"WrongFiles", cleanup.SelectionDecision{IDs: ids, Versions: vs, Approve: true, Files: 2, Bytes: 60}},
			{"WrongBytes", cleanup.SelectionDecision{IDs: ids, Versions: vs, Approve: true, Files: 3, Bytes: 59}},
			{"StaleVersion", cleanup.SelectionDecision{IDs: ids, Versions: []int64{vs[0], vs[1] + 1}, Approve: true, Files: 3, Bytes: 60}},
			{"RejectWithoutReason", cleanup.SelectionDecision{IDs: ids, Versions: vs, Files: 3, Bytes: 60}},
			{"Twice", cleanup.SelectionDecision{IDs: []uuid.UUID{a, a}, Versions: []int64{vs[0], vs[0]}, Approve: true, Files: 4, Bytes: 60}},
			{"Empty", cleanup.SelectionDecision{Approve: true}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := svc.DecideSelection(ctx, tc.d); !errors.Is(err, catalog.ErrInvalid) {
					t.Fatalf("%v, want invalid", err)
				}
				for _, id := range ids {
					if p, _ := svc.GetProposal(ctx, id); p.State != "open" {
						t.Fatalf("proposal %s is %s after a refused decision", id, p.State)
					}
				}
			})
		}
		tooMany := make([]uuid.UUID, cleanup.MaxSelection+1)
		for i := range tooMany {
			tooMany[i] = uuid.New()
		}
		if _, _, err := svc.Selected(ctx, tooMany); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("%d selected: %v", len(tooMany), err)
		}
		done, err := svc.DecideSelection(ctx, cleanup.SelectionDecision{IDs: ids, Versions: vs, Approve: true, Reason: "the team's Friday sweep", Files: 3, Bytes: 60})
		if err != nil || len(done) != 2 {
			t.Fatalf("decide: %v", err)
		}
		for _, p := range done {
			if p.State != "approved" || p.DecidedBy != "web:alice" || p.Reason != "the team's Friday sweep" {
				t.Fatalf("decided: %+v", p)
			}
		}
		if _, err := svc.DecideSelection(ctx, cleanup.SelectionDecision{IDs: ids, Versions: []int64{done[0].Version, done[1].Version}, Approve: true, Files: 3, Bytes: 60}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("deciding approved proposals again: %v", err)
		}
	})
}
