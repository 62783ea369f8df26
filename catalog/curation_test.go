package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

func intp(i int) *int { return &i }

func (e env) columnID(t *testing.T, id uuid.UUID, path string) uuid.UUID {
	t.Helper()
	cols, err := e.cat.Columns(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if c.Path == path {
			return c.ID
		}
	}
	t.Fatalf("asset %s has no current column %s (has %v)", id, path, cols)
	return uuid.Nil
}

func (e env) sync(t *testing.T, id uuid.UUID, src catalog.LabelSource, cols ...catalog.ColumnInput) bool {
	t.Helper()
	changed, err := e.cat.SyncColumns(context.Background(), id, catalog.SchemaInput{Source: src, Columns: cols})
	if err != nil {
		t.Fatalf("sync columns: %v", err)
	}
	return changed
}

func tagsOf(t *testing.T, e env, id, col uuid.UUID) []string {
	t.Helper()
	ls, err := e.cat.Labels(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		if l.ColumnID == col && l.Kind == catalog.LabelTag {
			out = append(out, l.Value)
		}
	}
	slices.Sort(out)
	return out
}

func TestColumnsFollowFieldIDsThroughRenames(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "shop", "customers")
		if !e.sync(t, a.ID, catalog.SourceIceberg,
			catalog.ColumnInput{FieldID: intp(1), Path: "id", Type: "long"},
			catalog.ColumnInput{FieldID: intp(2), Path: "email", Type: "string", Doc: "login"}) {
			t.Fatal("first sync reported no change")
		}
		email := e.columnID(t, a.ID, "email")
		cur, _ := e.cat.Get(ctx, a.ID)
		if _, err := e.cat.SetColumnDescription(ctx, a.ID, cur.Version, email, "The customer's *login* address."); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cat.AddLabel(ctx, a.ID, catalog.AnyVersion, catalog.LabelInput{ColumnID: email, Kind: catalog.LabelTag, Value: "pii.email"}); err != nil {
			t.Fatal(err)
		}
		// The same sync again changes nothing.
		if e.sync(t, a.ID, catalog.SourceIceberg,
			catalog.ColumnInput{FieldID: intp(1), Path: "id", Type: "long"},
			catalog.ColumnInput{FieldID: intp(2), Path: "email", Type: "string", Doc: "login"}) {
			t.Fatal("an unchanged schema reported a change")
		}
		// Field 2 renamed, field 1 retyped, field 3 added; the asset renamed too.
		e.sync(t, a.ID, catalog.SourceIceberg,
			catalog.ColumnInput{FieldID: intp(1), Path: "id", Type: "string"},
			catalog.ColumnInput{FieldID: intp(2), Path: "email_address", Type: "string", Doc: "login"},
			catalog.ColumnInput{FieldID: intp(3), Path: "country", Type: "string"})
		if _, err := e.cat.Rename(ctx, a.ID, catalog.AnyVersion, "crm", "people"); err != nil {
			t.Fatal(err)
		}
		if got := e.columnID(t, a.ID, "email_address"); got != email {
			t.Fatalf("renamed column has ID %s, want the same record %s", got, email)
		}
		cols, _ := e.cat.Columns(ctx, a.ID, false)
		var desc string
		for _, c := range cols {
			if c.ID == email {
				desc = c.Description
			}
		}
		if desc != "The customer's *login* address." {
			t.Fatalf("description after rename = %q", desc)
		}
		if got := tagsOf(t, e, a.ID, email); !slices.Equal(got, []string{"pii.email"}) {
			t.Fatalf("tags after renames = %v", got)
		}
		hist, err := e.cat.SchemaHistory(ctx, a.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 2 {
			t.Fatalf("schema history has %d entries, want 2", len(hist))
		}
		var ops []string
		for _, c := range hist[0].Changes {
			ops = append(ops, c.Op+":"+c.Path)
		}
		slices.Sort(ops)
		if want := []string{"added:country", "renamed:email_address", "retyped:id"}; !slices.Equal(ops, want) {
			t.Fatalf("latest change = %v, want %v", ops, want)
		}
		// A dropped column leaves the current list but stays in the history.
		e.sync(t, a.ID, catalog.SourceIceberg, catalog.ColumnInput{FieldID: intp(1), Path: "id", Type: "string"})
		all, _ := e.cat.Columns(ctx, a.ID, true)
		if len(all) != 3 || all[0].Path != "id" || all[1].RemovedAt == nil || all[2].RemovedAt == nil {
			t.Fatalf("columns with history = %+v", all)
		}
	})
}

func TestOpenLineageSchemaNeverDropsIcebergColumns(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		a := e.create(t, "shop", "orders")
		e.sync(t, a.ID, catalog.SourceIceberg, catalog.ColumnInput{FieldID: intp(1), Path: "id", Type: "long"},
			catalog.ColumnInput{FieldID: intp(2), Path: "total", Type: "decimal(10,2)"})
		// An older view of the schema from a lineage producer, without "total" and with its own doc.
		e.sync(t, a.ID, catalog.SourceOpenLineage, catalog.ColumnInput{Path: "id", Type: "BIGINT", Doc: "order number"},
			catalog.ColumnInput{Path: "note", Type: "STRING"})
		cols, _ := e.cat.Columns(context.Background(), a.ID, false)
		var paths []string
		for _, c := range cols {
			paths = append(paths, c.Path)
		}
		slices.Sort(paths)
		if !slices.Equal(paths, []string{"id", "note", "total"}) {
			t.Fatalf("columns = %v; the Iceberg column total must stay and note be added", paths)
		}
		// A column without a field ID first seen through lineage takes Iceberg's ID later.
		e.sync(t, a.ID, catalog.SourceIceberg, catalog.ColumnInput{FieldID: intp(1), Path: "id", Type: "long"},
			catalog.ColumnInput{FieldID: intp(2), Path: "total", Type: "decimal(10,2)"}, catalog.ColumnInput{FieldID: intp(3), Path: "note", Type: "string"})
		note := e.columnID(t, a.ID, "note")
		cols, _ = e.cat.Columns(context.Background(), a.ID, false)
		for _, c := range cols {
			if c.ID == note && (c.FieldID == nil || *c.FieldID != 3) {
				t.Fatalf("note has field ID %v, want 3", c.FieldID)
			}
		}
	})
}

func TestColumnSwapKeepsRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		a := e.create(t, "shop", "swap")
		e.sync(t, a.ID, catalog.SourceIceberg, catalog.ColumnInput{FieldID: intp(1), Path: "a"}, catalog.ColumnInput{FieldID: intp(2), Path: "b"})
		ida, idb := e.columnID(t, a.ID, "a"), e.columnID(t, a.ID, "b")
		e.sync(t, a.ID, catalog.SourceIceberg, catalog.ColumnInput{FieldID: intp(1), Path: "b"}, catalog.ColumnInput{FieldID: intp(2), Path: "a"})
		if e.columnID(t, a.ID, "b") != ida || e.columnID(t, a.ID, "a") != idb {
			t.Fatal("swapped names did not follow the field IDs")
		}
	})
}

func TestLabels(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := catalog.WithActor(context.Background(), "alice")
		if err := e.cat.EnsureClassifications(ctx); err != nil {
			t.Fatal(err)
		}
		a := e.create(t, "shop", "users")
		e.sync(t, a.ID, catalog.SourceOpenLineage, catalog.ColumnInput{Path: "email"})
		email := e.columnID(t, a.ID, "email")
		for _, tc := range []struct {
			name  string
			in    catalog.LabelInput
			kind  error
			field string
		}{
			{"FreeTag", catalog.LabelInput{Kind: catalog.LabelTag, Value: "finance"}, nil, ""},
			{"ClassificationValue", catalog.LabelInput{ColumnID: email, Kind: catalog.LabelTag, Value: "pii.email"}, nil, ""},
			{"UnknownClassificationValue", catalog.LabelInput{Kind: catalog.LabelTag, Value: "pii.shoe_size"}, catalog.ErrInvalid, "tag"},
			{"UpperCase", catalog.LabelInput{Kind: catalog.LabelTag, Value: "PII"}, catalog.ErrInvalid, "tag"},
			{"EmptySegment", catalog.LabelInput{Kind: catalog.LabelTag, Value: "pii..email"}, catalog.ErrInvalid, "tag"},
			{"UnknownColumn", catalog.LabelInput{ColumnID: uuid.New(), Kind: catalog.LabelTag, Value: "x"}, catalog.ErrNotFound, ""},
			{"UnknownTerm", catalog.LabelInput{Kind: catalog.LabelTerm, Value: uuid.NewString()}, catalog.ErrNotFound, ""},
			{"TermNotAnID", catalog.LabelInput{Kind: catalog.LabelTerm, Value: "revenue"}, catalog.ErrInvalid, "term"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.cat.AddLabel(ctx, a.ID, catalog.AnyVersion, tc.in)
				if !errors.Is(err, tc.kind) && !(tc.kind == nil && err == nil) {
					t.Fatalf("err = %v, want %v", err, tc.kind)
				}
				var ce *catalog.Error
				if tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field) {
					t.Fatalf("err = %v, want field %s", err, tc.field)
				}
			})
		}
		// Adding again is a no-op; a stale version is refused; removal keeps history.
		before, _ := e.cat.Get(ctx, a.ID)
		again, err := e.cat.AddLabel(ctx, a.ID, before.Version, catalog.LabelInput{Kind: catalog.LabelTag, Value: "finance"})
		if err != nil || again.Version != before.Version {
			t.Fatalf("re-adding: %v, version %d -> %d", err, before.Version, again.Version)
		}
		// Two versions back is before finance was added (the last change was pii.email on email).
		if _, err := e.cat.RemoveLabel(ctx, a.ID, before.Version-2, uuid.Nil, catalog.LabelTag, "finance"); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("stale removal: %v", err)
		}
		if _, err := e.cat.RemoveLabel(ctx, a.ID, before.Version, uuid.Nil, catalog.LabelTag, "finance"); err != nil {
			t.Fatal(err)
		}
		hist, _ := e.cat.Labels(ctx, a.ID, true)
		if len(hist) != 2 || hist[0].RemovedAt == nil || hist[0].RemovedBy != "alice" || hist[1].Column != "email" {
			t.Fatalf("label history = %+v", hist)
		}
		acts := e.auditActions(t, a.ID)
		if !slices.Contains(acts, catalog.ActionLabelAdd) || !slices.Contains(acts, catalog.ActionLabelRemove) {
			t.Fatalf("audit = %v", acts)
		}
	})
}

func TestSourceTagsLeavePeopleAlone(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		if err := e.cat.EnsureClassifications(ctx); err != nil {
			t.Fatal(err)
		}
		a := e.create(t, "shop", "events")
		e.sync(t, a.ID, catalog.SourceOpenLineage, catalog.ColumnInput{Path: "ip"})
		ip := e.columnID(t, a.ID, "ip")
		if _, err := e.cat.AddLabel(ctx, a.ID, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: "tier.gold"}); err != nil {
			t.Fatal(err)
		}
		skipped, err := e.cat.SyncSourceTags(ctx, a.ID, catalog.SourceOpenLineage, []catalog.SourceTag{
			{Column: "ip", Tag: "pii.ip_address"}, {Tag: "tier.gold"}, {Tag: "Bad Tag"}, {Column: "nope", Tag: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(skipped) != 2 {
			t.Fatalf("skipped = %v, want the bad tag and the unknown column", skipped)
		}
		if got := tagsOf(t, e, a.ID, ip); !slices.Equal(got, []string{"pii.ip_address"}) {
			t.Fatalf("column tags = %v", got)
		}
		// The source stops reporting everything: its tags go, the person's stays.
		if _, err := e.cat.SyncSourceTags(ctx, a.ID, catalog.SourceOpenLineage, nil); err != nil {
			t.Fatal(err)
		}
		if got := tagsOf(t, e, a.ID, ip); len(got) != 0 {
			t.Fatalf("column tags after the source dropped them = %v", got)
		}
		if got := tagsOf(t, e, a.ID, uuid.Nil); !slices.Equal(got, []string{"tier.gold"}) {
			t.Fatalf("asset tags = %v, want the person's tier.gold", got)
		}
	})
}

func TestSuggestionsFromColumnLineage(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := catalog.WithActor(context.Background(), "bob")
		if err := e.cat.EnsureClassifications(ctx); err != nil {
			t.Fatal(err)
		}
		up := e.create(t, "shop", "customers")
		down := e.create(t, "mart", "customer_emails")
		e.sync(t, up.ID, catalog.SourceOpenLineage, catalog.ColumnInput{Path: "email"}, catalog.ColumnInput{Path: "id"})
		e.sync(t, down.ID, catalog.SourceOpenLineage, catalog.ColumnInput{Path: "id"})
		now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		for _, f := range [][2]string{{"email_hash", "email"}, {"id", "id"}} {
			if err := e.db.Client.ColumnEdge.Create().SetOutAssetID(down.ID).SetOutField(f[0]).SetInAssetID(up.ID).SetInField(f[1]).
				SetTransformationType("INDIRECT").SetFirstSeen(now).SetLastSeen(now).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		email := e.columnID(t, up.ID, "email")
		id := e.columnID(t, up.ID, "id")
		for _, l := range []catalog.LabelInput{
			{ColumnID: email, Kind: catalog.LabelTag, Value: "pii.email"},
			{ColumnID: id, Kind: catalog.LabelTag, Value: "tier.gold"}, // tier does not propagate
			{ColumnID: id, Kind: catalog.LabelTag, Value: "keys"},      // nor do free tags
		} {
			if _, err := e.cat.AddLabel(ctx, up.ID, catalog.AnyVersion, l); err != nil {
				t.Fatal(err)
			}
		}
		sug, err := e.cat.Suggestions(ctx, down.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(sug) != 1 || sug[0].ColumnPath != "email_hash" || sug[0].Tag != "pii.email" || sug[0].ColumnID != uuid.Nil || sug[0].FromColumnID != email {
			t.Fatalf("suggestions = %+v", sug)
		}
		key := catalog.SuggestionKey{ColumnPath: "email_hash", Tag: "pii.email", FromColumnID: email}
		cur, _ := e.cat.Get(ctx, down.ID)
		// Made from a page loaded before the schema sync, which touched nothing the decision
		// depends on (it added column id): it lands.
		if _, err := e.cat.AcceptSuggestion(ctx, down.ID, cur.Version-1, key); err != nil {
			t.Fatalf("accept from before an unrelated change: %v", err)
		}
		hash := e.columnID(t, down.ID, "email_hash")
		ls, _ := e.cat.Labels(ctx, down.ID, false)
		if len(ls) != 1 || ls[0].ColumnID != hash || ls[0].Source != catalog.SourcePropagation || *ls[0].FromColumnID != email || ls[0].AddedBy != "bob" {
			t.Fatalf("labels after accepting = %+v", ls)
		}
		if sug, _ := e.cat.Suggestions(ctx, down.ID); len(sug) != 0 {
			t.Fatalf("suggestions after accepting = %+v", sug)
		}
		if _, err := e.cat.AcceptSuggestion(ctx, down.ID, catalog.AnyVersion, key); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("accepting twice: %v", err)
		}
		// Removing it brings the suggestion back; rejecting makes it go for good.
		if _, err := e.cat.RemoveLabel(ctx, down.ID, catalog.AnyVersion, hash, catalog.LabelTag, "pii.email"); err != nil {
			t.Fatal(err)
		}
		if sug, _ := e.cat.Suggestions(ctx, down.ID); len(sug) != 1 || sug[0].ColumnID != hash {
			t.Fatalf("suggestions after removal = %+v", sug)
		}
		if _, err := e.cat.RejectSuggestion(ctx, down.ID, catalog.AnyVersion, key); err != nil {
			t.Fatal(err)
		}
		if sug, _ := e.cat.Suggestions(ctx, down.ID); len(sug) != 0 {
			t.Fatalf("suggestions after rejecting = %+v", sug)
		}
		// A rename of the upstream asset and its column keeps the accepted provenance valid.
		if _, err := e.cat.Rename(ctx, up.ID, catalog.AnyVersion, "crm", "customers"); err != nil {
			t.Fatal(err)
		}
		if got := tagsOf(t, e, up.ID, email); !slices.Equal(got, []string{"pii.email"}) {
			t.Fatalf("upstream tags after rename = %v", got)
		}
	})
}

func TestGlossaryTerms(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		rev, err := e.cat.CreateTerm(ctx, catalog.TermInput{Name: "Revenue", Definition: "Money in.", Owners: []string{"finance", "finance"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rev.Owners) != 1 {
			t.Fatalf("owners = %v, want duplicates folded", rev.Owners)
		}
		if _, err := e.cat.CreateTerm(ctx, catalog.TermInput{Name: "REVENUE"}); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("a second term named REVENUE: %v", err)
		}
		if _, err := e.cat.CreateTerm(ctx, catalog.TermInput{Name: "Net", Related: []uuid.UUID{uuid.New()}}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("unknown related term: %v", err)
		}
		net, err := e.cat.CreateTerm(ctx, catalog.TermInput{Name: "Net revenue", Related: []uuid.UUID{rev.ID}})
		if err != nil || len(net.Related) != 1 || net.Related[0].Name != "Revenue" {
			t.Fatalf("net = %+v, %v", net, err)
		}
		a := e.create(t, "fin", "ledger")
		if _, err := e.cat.AddLabel(ctx, a.ID, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTerm, Value: rev.ID.String()}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cat.UpdateTerm(ctx, rev.ID, rev.Version+1, catalog.TermInput{Name: "Revenue"}); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("stale term edit: %v", err)
		}
		upd, err := e.cat.UpdateTerm(ctx, rev.ID, rev.Version, catalog.TermInput{Name: "Gross revenue", Definition: "All money in."})
		if err != nil || upd.Version != rev.Version+1 {
			t.Fatalf("update = %+v, %v", upd, err)
		}
		links, err := e.cat.TermLinks(ctx, rev.ID, 10)
		if err != nil || len(links) != 1 || links[0].AssetID != a.ID || links[0].TermName != "Gross revenue" {
			t.Fatalf("links = %+v, %v", links, err)
		}
		terms, more, err := e.cat.Terms(ctx, "", 1)
		if err != nil || len(terms) != 1 || !more || terms[0].Name != "Gross revenue" {
			t.Fatalf("terms page = %+v, %v, %v", terms, more, err)
		}
	})
}

func TestClassifications(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		if err := e.cat.EnsureClassifications(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.cat.EnsureClassifications(ctx); err != nil {
			t.Fatal("second ensure:", err)
		}
		cls, err := e.cat.Classifications(ctx)
		if err != nil || len(cls) != 2 || cls[0].Name != "pii" || !cls[0].Propagate {
			t.Fatalf("classifications = %+v, %v", cls, err)
		}
		a := e.create(t, "shop", "t")
		if _, err := e.cat.AddLabel(ctx, a.ID, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: "tier.bronze"}); err != nil {
			t.Fatal(err)
		}
		tier := cls[1]
		tier.Values = []string{"gold", "silver"}
		if _, err := e.cat.PutClassification(ctx, tier, tier.Version); !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "tier.bronze") {
			t.Fatalf("dropping a used value: %v", err)
		}
		tier.Values = []string{"gold", "silver", "bronze", "platinum"}
		if _, err := e.cat.PutClassification(ctx, tier, tier.Version+5); !errors.Is(err, catalog.ErrStaleVersion) {
			t.Fatalf("stale: %v", err)
		}
		got, err := e.cat.PutClassification(ctx, tier, tier.Version)
		if err != nil || got.Version != tier.Version+1 || len(got.Values) != 4 {
			t.Fatalf("put = %+v, %v", got, err)
		}
		if _, err := e.cat.PutClassification(ctx, catalog.Classification{Name: "a.b", Values: []string{"x"}}, catalog.AnyVersion); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("dotted name: %v", err)
		}
	})
}
