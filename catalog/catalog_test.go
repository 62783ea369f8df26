package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

func TestCreateAndGet(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		res, err := e.cat.Create(ctx, catalog.CreateInput{
			Kind: catalog.KindTable, Namespace: "warehouse", Name: "orders", Description: "all orders",
			ExternalIDs: []catalog.ExternalIDInput{{System: "iceberg", Value: "a1b2"}},
			Owners:      []catalog.OwnerInput{{Principal: "alice"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Created || res.Asset.ID.Version() != 7 {
			t.Fatalf("created=%v id=%s (version %d), want a new UUIDv7", res.Created, res.Asset.ID, res.Asset.ID.Version())
		}
		got, err := e.cat.Get(ctx, res.Asset.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Namespace != "warehouse" || got.Name != "orders" || got.Status != catalog.StatusActive || got.Version != 1 {
			t.Fatalf("got %+v", got)
		}
		if len(got.Owners) != 1 || got.Owners[0].Principal != "alice" || got.Owners[0].Kind != catalog.OwnerUser || got.Owners[0].Role != "technical" {
			t.Fatalf("owners = %+v, want alice (user, technical)", got.Owners)
		}
		if len(got.ExternalIDs) != 1 || got.ExternalIDs[0].Value != "a1b2" {
			t.Fatalf("external ids = %+v", got.ExternalIDs)
		}
		if !got.CreatedAt.Equal(e.clock.Now()) {
			t.Fatalf("created_at = %s, want the injected clock %s", got.CreatedAt, e.clock.Now())
		}
		if acts := e.auditActions(t, got.ID); !slices.Equal(acts, []string{catalog.ActionCreate}) {
			t.Fatalf("audit = %v", acts)
		}
		if _, err := e.cat.Get(ctx, uuid.Must(uuid.NewV7())); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("get missing: %v, want ErrNotFound", err)
		}
	})
}

func TestCreateRefusesBadInputAndWritesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		e.create(t, "warehouse", "taken")
		before := e.counts(t)
		cases := []struct {
			name string
			in   catalog.CreateInput
			want error
		}{
			{"EmptyName", catalog.CreateInput{Kind: "table", Namespace: "w", Name: ""}, catalog.ErrInvalid},
			{"EmptyNamespace", catalog.CreateInput{Kind: "table", Namespace: "", Name: "x"}, catalog.ErrInvalid},
			{"NameTooLong", catalog.CreateInput{Kind: "table", Namespace: "w", Name: strings.Repeat("n", catalog.MaxNameBytes+1)}, catalog.ErrInvalid},
			{"ControlCharacter", catalog.CreateInput{Kind: "table", Namespace: "w", Name: "a\x00b"}, catalog.ErrInvalid},
			{"TrailingSpace", catalog.CreateInput{Kind: "table", Namespace: "w", Name: "orders "}, catalog.ErrInvalid},
			{"BadKind", catalog.CreateInput{Kind: "spreadsheet", Namespace: "w", Name: "x"}, catalog.ErrInvalid},
			{"BadOwnerKind", catalog.CreateInput{Kind: "table", Namespace: "w", Name: "x", Owners: []catalog.OwnerInput{{Principal: "a", Kind: "robot"}}}, catalog.ErrInvalid},
			{"DuplicateOwner", catalog.CreateInput{Kind: "table", Namespace: "w", Name: "x", Owners: []catalog.OwnerInput{{Principal: "a"}, {Principal: "a"}}}, catalog.ErrInvalid},
			{"NameTaken", catalog.CreateInput{Kind: "table", Namespace: "warehouse", Name: "taken"}, catalog.ErrNameTaken},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.cat.Create(context.Background(), tc.in)
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				var de *catalog.Error
				if !errors.As(err, &de) || de.Message == "" {
					t.Fatalf("err %v carries no message for the caller", err)
				}
			})
		}
		if after := e.counts(t); !maps.Equal(before, after) {
			t.Fatalf("refused creates wrote rows: before %v after %v", before, after)
		}
	})
}

func TestCreateIdempotencyKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		in := catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: "events", IdempotencyKey: "k-1"}
		const n = 10
		var (
			wg      sync.WaitGroup
			results [n]catalog.CreateResult
			errs    [n]error
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = e.cat.Create(ctx, in)
			}()
		}
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("create %d: %v", i, errs[i])
			}
			if results[i].Asset.ID != results[0].Asset.ID {
				t.Fatalf("create %d returned %s, create 0 returned %s", i, results[i].Asset.ID, results[0].Asset.ID)
			}
			if results[i].Created {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d creates report Created, want exactly 1", created)
		}
		if c := e.counts(t); c["assets"] != 1 || c["audit_events"] != 1 {
			t.Fatalf("rows = %v, want one asset and one audit event", c)
		}
		other := in
		other.Name = "different"
		if _, err := e.cat.Create(ctx, other); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("same key, different request: %v, want ErrConflict", err)
		}
	})
}

func TestCreateIsIdempotentOnExternalID(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		in := catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: "t",
			ExternalIDs: []catalog.ExternalIDInput{{System: "iceberg", Value: "uuid-1"}}}
		first, err := e.cat.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		in.Name = "t_renamed_elsewhere"
		second, err := e.cat.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if second.Created || second.Asset.ID != first.Asset.ID {
			t.Fatalf("second create: created=%v id=%s, want the first asset %s", second.Created, second.Asset.ID, first.Asset.ID)
		}
		other := e.create(t, "w", "other")
		if _, err := e.cat.BindExternalID(ctx, other.ID, catalog.ExternalIDInput{System: "iceberg", Value: "uuid-1"}); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("binding an ID held by another asset: %v, want ErrConflict", err)
		}
		got, ok, err := e.cat.LookupExternal(ctx, "iceberg", "uuid-1")
		if err != nil || !ok || got.ID != first.Asset.ID {
			t.Fatalf("lookup = %+v, %v, %v", got, ok, err)
		}
	})
}

// TestRenameStory is DESIGN rule 1 at the catalog level: a rename keeps the ID, owners and
// audit trail; the old name resolves to the same asset as a former name; a new asset may take
// the old name and gets its own ID.
func TestRenameStory(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		orders := e.create(t, "warehouse", "orders")
		a, err := e.cat.SetOwner(ctx, orders.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "alice", Role: "business"})
		if err != nil {
			t.Fatal(err)
		}
		beforeRename := e.clock.Now()
		e.clock.Advance(24 * time.Hour)
		renamed, err := e.cat.Rename(ctx, orders.ID, a.Version, "", "sales_orders")
		if err != nil {
			t.Fatal(err)
		}
		if renamed.ID != orders.ID || renamed.Namespace != "warehouse" || renamed.Name != "sales_orders" {
			t.Fatalf("renamed = %+v", renamed)
		}
		if len(renamed.Owners) != 1 || renamed.Owners[0].Principal != "alice" {
			t.Fatalf("owners after rename = %+v", renamed.Owners)
		}
		if renamed.Version != a.Version+1 {
			t.Fatalf("version = %d, want %d", renamed.Version, a.Version+1)
		}

		res, err := e.cat.Resolve(ctx, "warehouse", "orders")
		if err != nil {
			t.Fatal(err)
		}
		if res.Asset.ID != orders.ID || !res.Former || res.Asset.Name != "sales_orders" {
			t.Fatalf("resolve old name = %+v, want former name of %s now called sales_orders", res, orders.ID)
		}
		cur, err := e.cat.Resolve(ctx, "warehouse", "sales_orders")
		if err != nil || cur.Former || cur.Asset.ID != orders.ID {
			t.Fatalf("resolve new name = %+v, %v", cur, err)
		}

		e.clock.Advance(time.Hour)
		newcomer := e.create(t, "warehouse", "orders")
		if newcomer.ID == orders.ID {
			t.Fatal("the new orders got the old asset's ID")
		}
		now, err := e.cat.Resolve(ctx, "warehouse", "orders")
		if err != nil || now.Asset.ID != newcomer.ID || now.Former {
			t.Fatalf("resolve orders after reuse = %+v, %v; want the newcomer as current", now, err)
		}
		then, err := e.cat.ResolveAt(ctx, "", "warehouse", "orders", beforeRename)
		if err != nil || then.Asset.ID != orders.ID {
			t.Fatalf("resolve orders as of before the rename = %+v, %v; want the original", then, err)
		}

		names, err := e.cat.Names(ctx, orders.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 2 || names[0].Name != "orders" || names[0].Current() || names[1].Name != "sales_orders" || !names[1].Current() ||
			!names[0].ValidTo.Equal(names[1].ValidFrom) {
			t.Fatalf("history = %+v, want orders (closed) then sales_orders (current), contiguous", names)
		}
		if acts := e.auditActions(t, orders.ID); !slices.Equal(acts, []string{catalog.ActionCreate, catalog.ActionOwnerSet, catalog.ActionRename}) {
			t.Fatalf("audit = %v", acts)
		}
	})
}

func TestRenameRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "a")
		e.create(t, "w", "b")
		before := e.counts(t)
		cases := []struct {
			name     string
			version  int64
			ns, to   string
			want     error
			wantText string
		}{
			{"NameTaken", a.Version, "", "b", catalog.ErrNameTaken, "held by asset"},
			{"StaleVersion", a.Version + 5, "", "c", catalog.ErrStaleVersion, "version"},
			{"SameName", a.Version, "", "a", catalog.ErrInvalid, "already named"},
			{"EmptyName", a.Version, "", "", catalog.ErrInvalid, "empty"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.cat.Rename(ctx, a.ID, tc.version, tc.ns, tc.to)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("err = %v, want %v mentioning %q", err, tc.want, tc.wantText)
				}
			})
		}
		if _, err := e.cat.Rename(ctx, uuid.Must(uuid.NewV7()), 1, "", "z"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("rename of a missing asset: %v", err)
		}
		if after := e.counts(t); !maps.Equal(before, after) {
			t.Fatalf("refused renames wrote rows: %v -> %v", before, after)
		}
		got, _ := e.cat.Get(ctx, a.ID)
		if got.Version != a.Version {
			t.Fatalf("refused renames moved the version from %d to %d", a.Version, got.Version)
		}
	})
}

// TestConcurrentRenamesOneWins races two renames carrying the same expected version, 50 times:
// exactly one succeeds, the other gets ErrStaleVersion, and the winner's name is the one stored.
func TestConcurrentRenamesOneWins(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "start")
		version := a.Version
		for round := range 50 {
			var (
				wg   sync.WaitGroup
				errs [2]error
				out  [2]catalog.Asset
			)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out[i], errs[i] = e.cat.Rename(ctx, a.ID, version, "", fmt.Sprintf("r%d_%d", round, i))
				}()
			}
			wg.Wait()
			winner := -1
			for i := range 2 {
				switch {
				case errs[i] == nil:
					if winner >= 0 {
						t.Fatalf("round %d: both renames succeeded", round)
					}
					winner = i
				case !errors.Is(errs[i], catalog.ErrStaleVersion):
					t.Fatalf("round %d: loser got %v, want ErrStaleVersion", round, errs[i])
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: no rename succeeded: %v", round, errs)
			}
			got, err := e.cat.Get(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != out[winner].Name || got.Version != version+1 {
				t.Fatalf("round %d: stored %s v%d, winner %s, want v%d", round, got.Name, got.Version, out[winner].Name, version+1)
			}
			version = got.Version
		}
		names, _ := e.cat.Names(ctx, a.ID)
		if len(names) != 51 {
			t.Fatalf("history has %d names, want 51 (start + 50 winners)", len(names))
		}
	})
}

func TestOwners(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "t")
		got, err := e.cat.SetOwner(ctx, a.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "data-eng", Kind: catalog.OwnerGroup})
		if err != nil {
			t.Fatal(err)
		}
		again, err := e.cat.SetOwner(ctx, a.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "data-eng", Kind: catalog.OwnerGroup})
		if err != nil || again.Version != got.Version {
			t.Fatalf("repeating the same owner moved the version %d -> %d (%v)", got.Version, again.Version, err)
		}
		e.clock.Advance(time.Minute)
		business, err := e.cat.SetOwner(ctx, a.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "data-eng", Kind: catalog.OwnerGroup, Role: "business"})
		if err != nil {
			t.Fatal(err)
		}
		hist, _ := e.cat.Owners(ctx, a.ID)
		if len(hist) != 2 || hist[0].RemovedAt == nil || hist[1].Role != "business" || hist[1].RemovedAt != nil {
			t.Fatalf("owner history = %+v, want technical (closed) then business (current)", hist)
		}
		// A change of data-eng made against a version from before data-eng last changed is
		// refused, and changes nothing (an unrelated owner would land: TestFieldConflicts).
		stale := business.Version - 1
		if _, err := e.cat.SetOwner(ctx, a.ID, stale, catalog.OwnerInput{Principal: "data-eng", Kind: catalog.OwnerUser}); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("add an owner at a stale version: %v, want ErrStaleVersion", err)
		}
		if _, err := e.cat.RemoveOwner(ctx, a.ID, stale, "data-eng"); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("remove an owner at a stale version: %v, want ErrStaleVersion", err)
		}
		if now, _ := e.cat.Owners(ctx, a.ID); len(now) != 2 {
			t.Fatalf("owner history after stale changes = %+v, want it unchanged", now)
		}
		if _, err := e.cat.RemoveOwner(ctx, a.ID, catalog.AnyVersion, "nobody"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("remove a non-owner: %v, want ErrNotFound", err)
		}
		cur, err := e.cat.RemoveOwner(ctx, a.ID, business.Version, "data-eng")
		if err != nil || len(cur.Owners) != 0 {
			t.Fatalf("after remove: owners %+v, %v", cur.Owners, err)
		}
		if _, err := e.cat.SetOwner(ctx, a.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "x", Role: "Big Boss"}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("bad role: %v", err)
		}
		want := []string{catalog.ActionCreate, catalog.ActionOwnerSet, catalog.ActionOwnerSet, catalog.ActionOwnerRemove}
		if acts := e.auditActions(t, a.ID); !slices.Equal(acts, want) {
			t.Fatalf("audit = %v, want %v", acts, want)
		}
	})
}

func TestDeleteReleasesName(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "t")
		if _, err := e.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: "t"}); !errors.Is(err, catalog.ErrNameTaken) {
			t.Fatalf("taking a held name: %v", err)
		}
		if _, err := e.cat.Delete(ctx, a.ID, a.Version+1); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("delete with a stale version: %v", err)
		}
		e.clock.Advance(time.Hour)
		del, err := e.cat.Delete(ctx, a.ID, a.Version)
		if err != nil {
			t.Fatal(err)
		}
		if del.Status != catalog.StatusDeleted || del.DeletedAt == nil || del.Name != "t" {
			t.Fatalf("deleted = %+v", del)
		}
		again, err := e.cat.Delete(ctx, a.ID, catalog.AnyVersion)
		if err != nil || again.Version != del.Version {
			t.Fatalf("second delete: v%d, %v; want no change", again.Version, err)
		}
		if _, err := e.cat.Rename(ctx, a.ID, del.Version, "", "u"); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("rename of a deleted asset: %v", err)
		}
		res, err := e.cat.Resolve(ctx, "w", "t")
		if err != nil || res.Asset.ID != a.ID || !res.Former || res.Asset.Status != catalog.StatusDeleted {
			t.Fatalf("resolve a deleted asset's name = %+v, %v", res, err)
		}
		b := e.create(t, "w", "t")
		if b.ID == a.ID {
			t.Fatal("reused ID")
		}
	})
}

func TestUpdate(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "t")
		desc, dep := "daily snapshot", catalog.StatusDeprecated
		got, err := e.cat.Update(ctx, a.ID, a.Version, catalog.UpdateInput{Description: &desc, Status: &dep})
		if err != nil || got.Description != desc || got.Status != dep || got.Version != a.Version+1 {
			t.Fatalf("update = %+v, %v", got, err)
		}
		del := catalog.StatusDeleted
		if _, err := e.cat.Update(ctx, a.ID, got.Version, catalog.UpdateInput{Status: &del}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("status deleted through update: %v", err)
		}
	})
}

func TestResolve(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w1", "shared")
		if res, err := e.cat.Resolve(ctx, "", "shared"); err != nil || res.Asset.ID != a.ID {
			t.Fatalf("resolve without namespace = %+v, %v", res, err)
		}
		e.create(t, "w2", "shared")
		if _, err := e.cat.Resolve(ctx, "", "shared"); !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "w1, w2") {
			t.Fatalf("ambiguous resolve: %v", err)
		}
		if _, err := e.cat.Resolve(ctx, "w1", "nope"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unknown name: %v", err)
		}
		if _, err := e.cat.ResolveAt(ctx, "", "w1", "shared", e.clock.Now().Add(-time.Hour)); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("resolve before the asset existed: %v", err)
		}
	})
}

func TestListPagesInStableOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		var want []uuid.UUID
		for i := range 25 {
			ns := "a"
			if i%5 == 0 {
				ns = "b"
			}
			want = append(want, e.create(t, ns, fmt.Sprintf("Table_%02d", i)).ID)
		}
		var got []uuid.UUID
		after := uuid.Nil
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("paging did not end")
			}
			items, more, err := e.cat.List(ctx, catalog.ListFilter{Limit: 10, After: after})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range items {
				got = append(got, a.ID)
			}
			if !more {
				break
			}
			after = items[len(items)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Fatalf("paged %d ids, want the %d created, in creation order", len(got), len(want))
		}
		items, _, err := e.cat.List(ctx, catalog.ListFilter{Limit: 100, Namespace: "b"})
		if err != nil || len(items) != 5 {
			t.Fatalf("namespace filter: %d items, %v", len(items), err)
		}
		items, _, err = e.cat.List(ctx, catalog.ListFilter{Limit: 100, Query: "table_1"})
		if err != nil || len(items) != 10 {
			t.Fatalf("q filter (case-insensitive): %d items, %v; want 10", len(items), err)
		}
		if _, err := e.cat.Delete(ctx, want[0], catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
		items, _, _ = e.cat.List(ctx, catalog.ListFilter{Limit: 100})
		if len(items) != 24 {
			t.Fatalf("default list shows %d, want 24 (deleted hidden)", len(items))
		}
		items, _, _ = e.cat.List(ctx, catalog.ListFilter{Limit: 100, Status: catalog.StatusDeleted})
		if len(items) != 1 || items[0].Name != "Table_00" {
			t.Fatalf("deleted list = %+v", items)
		}
	})
}

func TestRestore(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "t")
		del, err := e.cat.Delete(ctx, a.ID, catalog.AnyVersion)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.cat.Restore(ctx, a.ID, del.Version)
		if err != nil || got.Status != catalog.StatusActive || got.DeletedAt != nil || got.Name != "t" {
			t.Fatalf("restore = %+v, %v", got, err)
		}
		if res, err := e.cat.Resolve(ctx, "w", "t"); err != nil || res.Former || res.Asset.ID != a.ID {
			t.Fatalf("resolve after restore = %+v, %v", res, err)
		}
		if _, err := e.cat.Delete(ctx, a.ID, catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
		e.create(t, "w", "t") // takes the released name
		if _, err := e.cat.Restore(ctx, a.ID, catalog.AnyVersion); !errors.Is(err, catalog.ErrNameTaken) {
			t.Fatalf("restore onto a taken name: %v", err)
		}
		want := []string{catalog.ActionCreate, catalog.ActionDelete, catalog.ActionRestore, catalog.ActionDelete}
		if acts := e.auditActions(t, a.ID); !slices.Equal(acts, want) {
			t.Fatalf("audit = %v, want %v", acts, want)
		}
	})
}

// TestJobAndDatasetMayShareAName: OpenLineage lets a job and a dataset share a namespace and
// name; they are two assets, resolved apart by space.
func TestJobAndDatasetMayShareAName(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		table := e.create(t, "openlineage", "name")
		job, err := e.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindJob, Namespace: "openlineage", Name: "name"})
		if err != nil || !job.Created || job.Asset.ID == table.ID {
			t.Fatalf("job with a dataset's name: %+v, %v", job, err)
		}
		if _, err := e.cat.Resolve(ctx, "openlineage", "name"); !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "space=job") {
			t.Fatalf("resolve without space: %v, want an ambiguity naming space=", err)
		}
		for space, want := range map[catalog.Space]uuid.UUID{catalog.SpaceJob: job.Asset.ID, catalog.SpaceDataset: table.ID} {
			res, err := e.cat.ResolveIn(ctx, space, "openlineage", "name")
			if err != nil || res.Asset.ID != want {
				t.Fatalf("resolve in %s = %s, %v; want %s", space, res.Asset.ID, err, want)
			}
		}
		if _, err := e.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindView, Namespace: "openlineage", Name: "name"}); !errors.Is(err, catalog.ErrNameTaken) {
			t.Fatalf("a view takes a table's name: %v", err)
		}
	})
}

func TestCreateMany(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		held := e.create(t, "w", "a")
		n, err := e.cat.CreateMany(ctx, []catalog.CreateInput{
			{Kind: catalog.KindTable, Namespace: "w", Name: "a"}, // held: skipped
			{Kind: catalog.KindTable, Namespace: "w", Name: "b"},
			{Kind: catalog.KindJob, Namespace: "w", Name: "a"},   // a job may share a table's name
			{Kind: catalog.KindTable, Namespace: "w", Name: "b"}, // twice in one call: once
		})
		if err != nil || n != 2 {
			t.Fatalf("CreateMany = %d, %v; want 2 created", n, err)
		}
		res, err := e.cat.ResolveIn(ctx, catalog.SpaceDataset, "w", "a")
		if err != nil || res.Asset.ID != held.ID {
			t.Fatalf("the held name moved: %+v %v", res, err)
		}
		b, err := e.cat.Resolve(ctx, "w", "b")
		if err != nil || b.Asset.Version != 1 {
			t.Fatalf("b = %+v, %v", b, err)
		}
		if acts := e.auditActions(t, b.Asset.ID); !slices.Equal(acts, []string{catalog.ActionCreate}) {
			t.Fatalf("audit of b = %v", acts)
		}
		if _, err := e.cat.CreateMany(ctx, []catalog.CreateInput{{Kind: "table", Namespace: "w", Name: " bad"}}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("invalid name: %v", err)
		}
		if c := e.counts(t); c["assets"] != 3 || c["audit_events"] != 3 {
			t.Fatalf("rows = %v", c)
		}
	})
}

func TestCreateUnseen(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		renamed := e.create(t, "w", "old")
		if _, err := e.cat.Rename(ctx, renamed.ID, catalog.AnyVersion, "w", "new"); err != nil {
			t.Fatal(err)
		}
		located := e.create(t, "w", "table")
		if _, err := e.cat.BindExternalID(ctx, located.ID, catalog.SymlinkID("s3://bucket", "/warehouse/table")); err != nil {
			t.Fatal(err)
		}
		n, err := e.cat.CreateUnseen(ctx, []catalog.CreateInput{
			{Kind: catalog.KindTable, Namespace: "w", Name: "old"},                        // a former name: skipped
			{Kind: catalog.KindTable, Namespace: "w", Name: "new"},                        // held: skipped
			{Kind: catalog.KindTable, Namespace: "s3://bucket", Name: "/warehouse/table"}, // a symlink: skipped
			{Kind: catalog.KindTable, Namespace: "w", Name: "fresh"},
			{Kind: catalog.KindJob, Namespace: "w", Name: "old"}, // another name space: never held
		})
		if err != nil || n != 2 {
			t.Fatalf("CreateUnseen = %d, %v; want 2 created", n, err)
		}
		if _, ok, err := e.cat.Lookup(ctx, catalog.SpaceDataset, "s3://bucket", "/warehouse/table"); err != nil || ok {
			t.Fatalf("the bound location got a name: %v %v", ok, err)
		}
		old, err := e.cat.ResolveIn(ctx, catalog.SpaceDataset, "w", "old")
		if err != nil || old.Asset.ID != renamed.ID {
			t.Fatalf("w.old resolves to %+v, %v; want the renamed asset", old, err)
		}
		fresh, err := e.cat.Resolve(ctx, "w", "fresh")
		if err != nil {
			t.Fatal(err)
		}
		if acts := e.auditActions(t, fresh.Asset.ID); !slices.Equal(acts, []string{catalog.ActionCreate}) {
			t.Fatalf("audit of w.fresh = %v", acts)
		}
		if c := e.counts(t); c["assets"] != 4 {
			t.Fatalf("rows = %v", c)
		}
		var docs int
		if err := e.db.SQL.QueryRow("SELECT count(*) FROM search_docs WHERE asset_id = $1", fresh.Asset.ID).Scan(&docs); err != nil || docs != 1 {
			t.Fatalf("search docs of w.fresh = %d, %v", docs, err)
		}
	})
}

// TestCreateManyHookSummaries: the summaries CreateMany hands its change hooks as written (on
// PostgreSQL; SQLite hands none and the hook reads them) are what a read after the commit returns.
func TestCreateManyHookSummaries(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var cat *catalog.Catalog
		var seen map[uuid.UUID]catalog.Summary
		many := false // the hook is called by CreateMany (not by the single Create first)
		cat = mustCatalog(t, db, catalog.WithChangeHook(func(ctx context.Context, ids []uuid.UUID, written map[uuid.UUID]catalog.Summary) {
			if many && db.Dialect == dialect.Postgres && len(written) != len(ids) {
				t.Errorf("CreateMany on PostgreSQL handed %d of %d summaries as written", len(written), len(ids))
			}
			seen = map[uuid.UUID]catalog.Summary{}
			for _, id := range ids {
				if s, ok := written[id]; ok {
					seen[id] = s
				}
			}
			if len(seen) == len(ids) {
				return
			}
			sums, err := cat.Summaries(ctx, ids)
			if err != nil {
				t.Error(err)
			}
			seen = sums
		}))
		if _, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: "held"}); err != nil {
			t.Fatal(err)
		}
		many = true
		n, err := cat.CreateMany(ctx, []catalog.CreateInput{{Kind: catalog.KindTable, Namespace: "w", Name: "held"},
			{Kind: catalog.KindView, Namespace: "w", Name: "v"}, {Kind: catalog.KindJob, Namespace: "w", Name: "j"}})
		if err != nil || n != 2 || len(seen) != 2 {
			t.Fatalf("CreateMany = %d, %v; the hook saw %v", n, err, seen)
		}
		if _, err := cat.CreateMany(ctx, []catalog.CreateInput{{Kind: catalog.KindView, Namespace: "w", Name: "v2"}}); err != nil || len(seen) != 1 {
			t.Fatalf("CreateMany of one: %v; the hook saw %v", err, seen)
		}
		ids := make([]uuid.UUID, 0, len(seen))
		for id := range seen {
			ids = append(ids, id)
		}
		read, err := cat.Summaries(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		for id, s := range seen {
			if r := read[id]; r != s || !r.CreatedAt.Equal(s.CreatedAt) {
				t.Errorf("hook saw %+v, a read gives %+v", s, r)
			}
		}
	})
}

func TestIdempotencyKeysExpire(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		in := catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: "once", IdempotencyKey: "k"}
		first, err := e.cat.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := e.cat.PurgeIdempotencyKeys(ctx); err != nil || n != 0 {
			t.Fatalf("purge within the window: %d, %v", n, err)
		}
		e.clock.Advance(catalog.IdempotencyWindow + time.Hour)
		if n, err := e.cat.PurgeIdempotencyKeys(ctx); err != nil || n != 1 {
			t.Fatalf("purge after the window: %d, %v", n, err)
		}
		// The key is forgotten: the same request now meets the name it created.
		if _, err := e.cat.Create(ctx, in); !errors.Is(err, catalog.ErrNameTaken) {
			t.Fatalf("replay after expiry: %v", err)
		}
		if got, _ := e.cat.Get(ctx, first.Asset.ID); got.Name != "once" {
			t.Fatalf("asset changed: %+v", got)
		}
	})
}
