package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// fieldFixture is an asset with two columns, an owner and a tag, as a page loaded it.
type fieldFixture struct {
	id         uuid.UUID
	email, cid uuid.UUID // the columns email and id
	seen       int64     // the version the page showed
	name       string
}

func newFieldFixture(t *testing.T, e env, name string) fieldFixture {
	t.Helper()
	ctx := catalog.WithActor(context.Background(), "setup")
	a := e.create(t, "fields", name)
	fid1, fid2 := 1, 2
	e.sync(t, a.ID, catalog.SourceIceberg, catalog.ColumnInput{FieldID: &fid1, Path: "email"}, catalog.ColumnInput{FieldID: &fid2, Path: "id"})
	if _, err := e.cat.SetOwner(ctx, a.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	got, err := e.cat.AddLabel(ctx, a.ID, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: "finance"})
	if err != nil {
		t.Fatal(err)
	}
	return fieldFixture{id: a.ID, email: e.columnID(t, a.ID, "email"), cid: e.columnID(t, a.ID, "id"), seen: got.Version, name: name}
}

// An edit made from a page loaded at version N is refused only when a change since N touched
// what the edit depends on; otherwise it lands at the current version.
func TestFieldConflicts(t *testing.T) {
	type edit func(ctx context.Context, e env, f fieldFixture, version int64) (catalog.Asset, error)
	describe := func(text string) edit {
		return func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
			return e.cat.Update(ctx, f.id, v, catalog.UpdateInput{Description: &text})
		}
	}
	describeColumn := func(email bool, text string) edit {
		return func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
			col := f.cid
			if email {
				col = f.email
			}
			return e.cat.SetColumnDescription(ctx, f.id, v, col, text)
		}
	}
	tag := func(email bool, value string) edit {
		return func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
			col := f.cid
			if email {
				col = f.email
			}
			return e.cat.AddLabel(ctx, f.id, v, catalog.LabelInput{ColumnID: col, Kind: catalog.LabelTag, Value: value})
		}
	}
	untag := func(value string) edit {
		return func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
			return e.cat.RemoveLabel(ctx, f.id, v, uuid.Nil, catalog.LabelTag, value)
		}
	}
	owner := func(p string) edit {
		return func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
			return e.cat.SetOwner(ctx, f.id, v, catalog.OwnerInput{Principal: p, Role: "steward"})
		}
	}
	unown := func(p string) edit {
		return func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
			return e.cat.RemoveOwner(ctx, f.id, v, p)
		}
	}
	rename := func(name string) edit {
		return func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
			return e.cat.Rename(ctx, f.id, v, "", name+"_"+f.name)
		}
	}
	deprecate := func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
		st := catalog.StatusDeprecated
		return e.cat.Update(ctx, f.id, v, catalog.UpdateInput{Status: &st})
	}
	renameColumnEmail := func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
		fid1, fid2 := 1, 2
		_, err := e.cat.SyncColumns(ctx, f.id, catalog.SchemaInput{Source: catalog.SourceIceberg,
			Columns: []catalog.ColumnInput{{FieldID: &fid1, Path: "mail"}, {FieldID: &fid2, Path: "id"}}})
		return catalog.Asset{}, err
	}
	sourceTag := func(ctx context.Context, e env, f fieldFixture, v int64) (catalog.Asset, error) {
		_, err := e.cat.SyncSourceTags(ctx, f.id, catalog.SourceOpenLineage, []catalog.SourceTag{{Column: "email", Tag: "pii.email"}})
		return catalog.Asset{}, err
	}
	cases := []struct {
		name        string
		meanwhile   edit // another person's change after the page loaded
		edit        edit // made from the page
		wantRefused bool
		wantWhat    string // in the refusal's message
	}{
		{"DescriptionAfterColumnDescription", describeColumn(true, "who to mail"), describe("users"), false, ""},
		{"DescriptionAfterDescription", describe("people"), describe("users"), true, "its description changed"},
		{"ColumnAfterOtherColumn", describeColumn(false, "the key"), describeColumn(true, "who to mail"), false, ""},
		{"ColumnAfterSameColumn", describeColumn(true, "address"), describeColumn(true, "who to mail"), true, "the description of column email"},
		{"TagAfterSameTagOnOtherColumn", tag(false, "pii.email"), tag(true, "pii.email"), false, ""},
		{"TagAfterSameTagSameColumn", tag(true, "pii.email"), tag(true, "pii.email"), true, "tag pii.email of column email"},
		{"UntagAfterUntag", untag("finance"), untag("finance"), true, "tag finance"},
		{"UntagAfterOtherTag", tag(true, "pii.phone"), untag("finance"), false, ""},
		{"OwnerAfterOtherOwner", owner("alice"), owner("bob"), false, ""},
		{"OwnerAfterSameOwnerRemoved", unown("alice"), owner("alice"), true, "owner alice"},
		{"DescriptionAfterRename", rename("people"), describe("users"), false, ""},
		{"RenameAfterRename", rename("people"), rename("persons"), true, "its name"},
		{"RenameAfterDescription", describe("people"), rename("persons"), false, ""},
		{"DeprecateAfterDeprecate", deprecate, deprecate, true, "its status"},
		{"ColumnAfterItWasRenamed", renameColumnEmail, describeColumn(true, "who to mail"), true, "column mail changed"},
		{"OtherColumnAfterRename", renameColumnEmail, describeColumn(false, "the key"), false, ""},
		// A source's tag note does not name its column, so any column's same tag conflicts.
		{"TagAfterSourceTag", sourceTag, tag(false, "pii.email"), true, "tag pii.email"},
	}
	eachBackend(t, func(t *testing.T, e env) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := catalog.WithActor(context.Background(), "bob")
				f := newFieldFixture(t, e, strings.ToLower(tc.name))
				if _, err := tc.meanwhile(catalog.WithActor(context.Background(), "carol"), e, f, f.seen); err != nil {
					t.Fatalf("the change meanwhile: %v", err)
				}
				cur, err := e.cat.Get(ctx, f.id)
				if err != nil {
					t.Fatal(err)
				}
				if cur.Version == f.seen {
					t.Fatalf("the change meanwhile left version %d", cur.Version)
				}
				got, err := tc.edit(ctx, e, f, f.seen)
				if tc.wantRefused {
					if !errors.Is(err, catalog.ErrStaleVersion) || !strings.Contains(err.Error(), tc.wantWhat) || !strings.Contains(err.Error(), "by carol") {
						t.Fatalf("err = %v, want ErrStaleVersion saying %q changed, by carol", err, tc.wantWhat)
					}
					if now, _ := e.cat.Get(ctx, f.id); now.Version != cur.Version {
						t.Fatalf("a refused edit moved the version %d -> %d", cur.Version, now.Version)
					}
					return
				}
				if err != nil {
					t.Fatalf("edit from version %d after an unrelated change (now %d): %v", f.seen, cur.Version, err)
				}
				if got.Version != cur.Version+1 {
					t.Fatalf("landed at version %d, want %d", got.Version, cur.Version+1)
				}
			})
		}
	})
}

// TestFieldConflictsNeedTheLog: an edit far behind (beyond what is checked field by field) is
// refused whole, as before; so is one from a version the asset never had.
func TestFieldConflictsNeedTheLog(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		f := newFieldFixture(t, e, "far")
		desc := "x"
		if _, err := e.cat.Update(ctx, f.id, f.seen+5, catalog.UpdateInput{Description: &desc}); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("edit at a future version: %v, want ErrStaleVersion", err)
		}
		for i := range 201 {
			if _, err := e.cat.SetColumnDescription(ctx, f.id, catalog.AnyVersion, f.cid, fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.cat.Update(ctx, f.id, f.seen, catalog.UpdateInput{Description: &desc}); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("edit 201 versions behind: %v, want ErrStaleVersion", err)
		}
	})
}

// TestConcurrentColumnEdits: two edits made at once from pages loaded at the same version both
// land when they edit different columns; on the same column exactly one lands and the other is
// refused.
func TestConcurrentColumnEdits(t *testing.T) {
	const rounds = 15 // rounds, not sleeps, widen the window
	eachBackend(t, func(t *testing.T, e env) {
		for _, tc := range []struct {
			name       string
			sameColumn bool
		}{{"DifferentColumns", false}, {"SameColumn", true}} {
			t.Run(tc.name, func(t *testing.T) {
				for round := range rounds {
					f := newFieldFixture(t, e, fmt.Sprintf("race%s%d", strings.ToLower(tc.name), round))
					cols := []uuid.UUID{f.email, f.cid}
					if tc.sameColumn {
						cols[1] = f.email
					}
					errs := make([]error, 2)
					var wg sync.WaitGroup
					for i := range 2 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							ctx := catalog.WithActor(context.Background(), fmt.Sprintf("editor%d", i))
							_, errs[i] = e.cat.SetColumnDescription(ctx, f.id, f.seen, cols[i], fmt.Sprintf("by editor %d", i))
						}()
					}
					wg.Wait()
					cur, err := e.cat.Get(context.Background(), f.id)
					if err != nil {
						t.Fatal(err)
					}
					landed := 0
					for _, err := range errs {
						switch {
						case err == nil:
							landed++
						case !errors.Is(err, catalog.ErrStaleVersion):
							t.Fatalf("round %d: %v", round, err)
						}
					}
					want := 2
					if tc.sameColumn {
						want = 1
					}
					if landed != want || cur.Version != f.seen+int64(want) {
						t.Fatalf("round %d: %d landed (%v), version %d -> %d; want %d landed", round, landed, errs, f.seen, cur.Version, want)
					}
				}
			})
		}
	})
}
