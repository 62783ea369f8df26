package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/label"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

func (e env) createWith(t *testing.T, in catalog.CreateInput) catalog.Asset {
	t.Helper()
	if in.Kind == "" {
		in.Kind = catalog.KindTable
	}
	res, err := e.cat.Create(context.Background(), in)
	if err != nil {
		t.Fatalf("create %s.%s: %v", in.Namespace, in.Name, err)
	}
	return res.Asset
}

func (e env) search(t *testing.T, q catalog.SearchQuery) catalog.SearchResult {
	t.Helper()
	res, err := e.cat.SearchAssets(context.Background(), q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return res
}

// tag puts a current tag on an asset (columnID uuid.Nil) or one of its columns, as the curation
// code will.
func (e env) tag(t *testing.T, assetID, columnID uuid.UUID, kind label.Kind, value string) {
	t.Helper()
	if err := e.db.Client.Label.Create().SetAssetID(assetID).SetColumnID(columnID).SetKind(kind).SetValue(value).
		SetSource(label.SourcePerson).SetAddedAt(e.clock.Now()).SetAddedBy("test").Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func hitIDs(res catalog.SearchResult) []uuid.UUID {
	out := make([]uuid.UUID, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

func hitOf(t *testing.T, res catalog.SearchResult, id uuid.UUID) catalog.SearchHit {
	t.Helper()
	for _, h := range res.Hits {
		if h.ID == id {
			return h
		}
	}
	t.Fatalf("asset %s is not among the hits %v", id, hitIDs(res))
	return catalog.SearchHit{}
}

// TestSearchRanking: an exact match of the current name comes first, then assets whose current
// name holds every word, then matches elsewhere (former names, description); the last word is
// a prefix; every word must match.
func TestSearchRanking(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		byDesc := e.createWith(t, catalog.CreateInput{Namespace: "finance", Name: "revenue", Description: "Revenue from all orders, by day"}).ID
		renamed := e.create(t, "legacy", "orders_archive").ID
		if _, err := e.cat.Rename(ctx, renamed, catalog.AnyVersion, "", "archive_2019"); err != nil {
			t.Fatal(err)
		}
		daily := e.create(t, "sales", "orders_daily").ID
		exact := e.create(t, "sales", "orders").ID
		inNamespace := e.create(t, "orders", "items").ID
		e.create(t, "hr", "people")

		for _, tc := range []struct {
			name, q string
			first   []uuid.UUID // the hits in this order, first
			rest    []uuid.UUID // then these, in any order
		}{
			{"ExactNameFirst", "orders", []uuid.UUID{exact}, []uuid.UUID{daily, inNamespace, renamed, byDesc}},
			{"NamespaceAndName", "sales.orders", []uuid.UUID{exact, daily}, nil},
			{"AllWordsMustMatch", "orders daily", []uuid.UUID{daily}, nil},
			{"LastWordIsAPrefix", "orders_dai", []uuid.UUID{daily}, nil},
			{"PrefixAlone", "ord", nil, []uuid.UUID{exact, daily, inNamespace, renamed, byDesc}},
			{"CaseAndPunctuation", "  ORDERS__Daily!! ", []uuid.UUID{daily}, nil},
			{"NothingMatches", "payroll", nil, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := e.search(t, catalog.SearchQuery{Text: tc.q})
				got := hitIDs(res)
				if res.Total != len(tc.first)+len(tc.rest) || len(got) != res.Total {
					t.Fatalf("%q: total %d, %d hits %v; want %d", tc.q, res.Total, len(got), res.Hits, len(tc.first)+len(tc.rest))
				}
				if !slices.Equal(got[:len(tc.first)], tc.first) {
					t.Errorf("%q: first hits %v, want %v", tc.q, got[:len(tc.first)], tc.first)
				}
				for _, id := range tc.rest {
					if !slices.Contains(got[len(tc.first):], id) {
						t.Errorf("%q: %s missing after the first hits: %v", tc.q, id, got)
					}
				}
				for i := 1; i < len(res.Hits); i++ {
					if res.Hits[i].Score > res.Hits[i-1].Score {
						t.Errorf("%q: scores rise: %v", tc.q, res.Hits)
					}
				}
			})
		}

		t.Run("CurrentNameBeforeFormerNameAndDescription", func(t *testing.T) {
			res := e.search(t, catalog.SearchQuery{Text: "orders"})
			pos := func(id uuid.UUID) int { return slices.Index(hitIDs(res), id) }
			for _, named := range []uuid.UUID{exact, daily, inNamespace} {
				for _, other := range []uuid.UUID{renamed, byDesc} {
					if pos(named) > pos(other) {
						t.Errorf("%s (current name) ranks after %s: %v", named, other, hitIDs(res))
					}
				}
			}
			if h := hitOf(t, res, exact); h.Score < 2 || !slices.Equal(h.MatchedIn, []string{catalog.MatchedName}) {
				t.Errorf("exact hit: %+v", h)
			}
			if h := hitOf(t, res, byDesc); !slices.Equal(h.MatchedIn, []string{catalog.MatchedDescription}) || h.Score >= 1 {
				t.Errorf("description hit: %+v", h)
			}
		})
	})
}

// TestSearchExactFormerName is issue 35's case: 30 tables whose current name holds "orders", a
// job load_orders and a CSV file; the table once called db.orders (now db.sales_orders) comes
// right after the exact current name, on the first page, and so does a search for its whole
// former name.
func TestSearchExactFormerName(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		sales := e.create(t, "iceberg://lake", "db.orders").ID
		e.clock.Advance(time.Hour)
		if _, err := e.cat.Rename(ctx, sales, catalog.AnyVersion, "", "db.sales_orders"); err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			e.create(t, "iceberg://lake", fmt.Sprintf("db.orders_%02d", i))
		}
		e.createWith(t, catalog.CreateInput{Kind: catalog.KindJob, Namespace: "spark", Name: "load_orders"})
		e.createWith(t, catalog.CreateInput{Kind: catalog.KindFileSet, Namespace: "s3://landing", Name: "orders/2026-11-29.csv"})
		// An old name that merely holds the word is no exact match: it stays with the others.
		archive := e.create(t, "legacy", "orders_archive").ID
		if _, err := e.cat.Rename(ctx, archive, catalog.AnyVersion, "", "archive_2019"); err != nil {
			t.Fatal(err)
		}
		exact := e.create(t, "shop", "orders").ID

		for _, tc := range []struct {
			name, q string
			first   []uuid.UUID
		}{
			{"LastPartOfAFormerName", "orders", []uuid.UUID{exact, sales}},
			{"WholeFormerName", "db.orders", []uuid.UUID{sales}},
			{"NamespaceAndFormerName", "iceberg://lake.db.orders", []uuid.UUID{sales}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := e.search(t, catalog.SearchQuery{Text: tc.q, Limit: 100})
				got := hitIDs(res)
				if len(got) < len(tc.first) || !slices.Equal(got[:len(tc.first)], tc.first) {
					t.Fatalf("%q: first hits %v, want %v", tc.q, got, tc.first)
				}
				if tc.q == "orders" && len(got) != 35 {
					t.Errorf("%q: %d hits, want the 35 assets holding the word", tc.q, len(got))
				}
				h := hitOf(t, res, sales)
				if h.MatchedFormer == nil || h.MatchedFormer.Name != "db.orders" || h.Score < 2 || h.Score >= 3 {
					t.Errorf("%q: former-name hit %+v (former %+v), want score in [2, 3)", tc.q, h, h.MatchedFormer)
				}
				if pos := slices.Index(got, archive); tc.q == "orders" && pos < 2 { // -1 (missing) too
					t.Errorf("%q: orders_archive (a former name holding the word) at %d: %v", tc.q, pos, got)
				}
			})
		}
	})
}

// TestSearchFormerNames: a rename shows at once: the new name is found as the current name,
// the old one as a former name, with the name that matched.
func TestSearchFormerNames(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "warehouse", "orders")
		e.clock.Advance(time.Hour)
		if _, err := e.cat.Rename(ctx, a.ID, catalog.AnyVersion, "", "sales_facts"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Hour)
		if _, err := e.cat.Rename(ctx, a.ID, catalog.AnyVersion, "mart", "revenue"); err != nil {
			t.Fatal(err)
		}

		res := e.search(t, catalog.SearchQuery{Text: "revenue"})
		if len(res.Hits) != 1 || res.Hits[0].Name != "revenue" || res.Hits[0].Namespace != "mart" || res.Hits[0].MatchedFormer != nil {
			t.Fatalf("new name: %+v", res.Hits)
		}
		for _, tc := range []struct{ q, ns, name string }{
			{"orders", "warehouse", "orders"},
			{"sales facts", "warehouse", "sales_facts"},
			{"warehouse sales", "warehouse", "sales_facts"}, // the best-covering former name
		} {
			res := e.search(t, catalog.SearchQuery{Text: tc.q})
			if len(res.Hits) != 1 {
				t.Fatalf("%q: %+v", tc.q, res.Hits)
			}
			h := res.Hits[0]
			if h.Name != "revenue" || !slices.Equal(h.MatchedIn, []string{catalog.MatchedFormerName}) || h.MatchedFormer == nil ||
				h.MatchedFormer.Namespace != tc.ns || h.MatchedFormer.Name != tc.name || h.MatchedFormer.Current() {
				t.Errorf("%q: %+v (former %+v)", tc.q, h, h.MatchedFormer)
			}
		}
		// Renamed back: the name is current again and not reported as former.
		if _, err := e.cat.Rename(ctx, a.ID, catalog.AnyVersion, "warehouse", "orders"); err != nil {
			t.Fatal(err)
		}
		res = e.search(t, catalog.SearchQuery{Text: "orders"})
		if len(res.Hits) != 1 || res.Hits[0].MatchedFormer != nil || res.Hits[0].Score < 2 {
			t.Errorf("after renaming back: %+v", res.Hits)
		}
	})
}

// TestSearchLabelsAndBody: tags (on the asset and its columns), glossary terms, owners, the
// description and columns are found, and the hit says which.
func TestSearchLabelsAndBody(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.createWith(t, catalog.CreateInput{Namespace: "crm", Name: "contacts", Description: "People we talk to",
			Owners: []catalog.OwnerInput{{Principal: "alice@example.com"}}})
		b := e.create(t, "crm", "accounts")
		term, err := e.db.Client.GlossaryTerm.Create().SetName("Gross Merchandise Value").SetNameKey("gross merchandise value").
			SetCreatedAt(e.clock.Now()).SetUpdatedAt(e.clock.Now()).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		col, err := e.db.Client.Column.Create().SetAssetID(a.ID).SetPath("customer_email").SetSourceDoc("the buyer's address").
			SetDescription("verified on signup").SetAddedAt(e.clock.Now()).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gone, err := e.db.Client.Column.Create().SetAssetID(a.ID).SetPath("fax_number").SetAddedAt(e.clock.Now()).
			SetRemovedAt(e.clock.Now()).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.tag(t, a.ID, uuid.Nil, label.KindTag, "tier.gold")
		e.tag(t, a.ID, col.ID, label.KindTag, "pii.email")
		e.tag(t, a.ID, gone.ID, label.KindTag, "pii.phone") // on a removed column: not the asset's now
		e.tag(t, b.ID, uuid.Nil, label.KindTerm, term.ID.String())
		if err := e.cat.Reindex(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		// Any change reindexes: b's term is found after an update of its description.
		desc := "Companies"
		if _, err := e.cat.Update(ctx, b.ID, catalog.AnyVersion, catalog.UpdateInput{Description: &desc}); err != nil {
			t.Fatal(err)
		}

		for _, tc := range []struct {
			q       string
			want    uuid.UUID
			matched []string
			tags    []string
			owners  []string
		}{
			{"gold", a.ID, []string{catalog.MatchedTag}, []string{"tier.gold"}, nil},
			{"pii email", a.ID, []string{catalog.MatchedTag, catalog.MatchedColumn}, []string{"pii.email"}, nil},
			{"alice", a.ID, []string{catalog.MatchedOwner}, nil, []string{"alice@example.com"}},
			{"example", a.ID, []string{catalog.MatchedOwner}, nil, []string{"alice@example.com"}},
			{"talk", a.ID, []string{catalog.MatchedDescription}, nil, nil},
			{"buyer", a.ID, []string{catalog.MatchedColumn}, nil, nil},
			{"verified", a.ID, []string{catalog.MatchedColumn}, nil, nil},
			{"customer", a.ID, []string{catalog.MatchedColumn}, nil, nil},
			{"merchandise", b.ID, []string{catalog.MatchedTerm}, nil, nil},
			{"companies", b.ID, []string{catalog.MatchedDescription}, nil, nil},
			{"crm contacts", a.ID, []string{catalog.MatchedName}, nil, nil},
		} {
			t.Run(tc.q, func(t *testing.T) {
				res := e.search(t, catalog.SearchQuery{Text: tc.q})
				if len(res.Hits) != 1 || res.Hits[0].ID != tc.want {
					t.Fatalf("%q: %+v, want only %s", tc.q, res.Hits, tc.want)
				}
				h := res.Hits[0]
				if !slices.Equal(h.MatchedIn, tc.matched) || !slices.Equal(h.MatchedTags, tc.tags) || !slices.Equal(h.MatchedOwners, tc.owners) {
					t.Errorf("%q: matched in %v, tags %v, owners %v; want %v, %v, %v", tc.q, h.MatchedIn, h.MatchedTags, h.MatchedOwners,
						tc.matched, tc.tags, tc.owners)
				}
			})
		}
		for _, q := range []string{"fax", "phone"} { // the removed column and its tag
			if res := e.search(t, catalog.SearchQuery{Text: q}); res.Total != 0 {
				t.Errorf("%q found %+v", q, res.Hits)
			}
		}
		// Removing an owner through the catalog takes it out of search in the same transaction.
		if _, err := e.cat.RemoveOwner(ctx, a.ID, catalog.AnyVersion, "alice@example.com"); err != nil {
			t.Fatal(err)
		}
		if res := e.search(t, catalog.SearchQuery{Text: "alice"}); res.Total != 0 {
			t.Errorf("removed owner still found: %+v", res.Hits)
		}
		if res := e.search(t, catalog.SearchQuery{Owner: "alice@example.com"}); res.Total != 0 {
			t.Errorf("removed owner still a facet: %+v", res.Hits)
		}
		res := e.search(t, catalog.SearchQuery{Namespace: "crm"})
		if got := res.Facets[catalog.FacetTag]; fmt.Sprint(got) != "[{pii.email 1} {tier.gold 1}]" {
			t.Errorf("tag facets %v", got)
		}
	})
}

// TestSearchDeletedAndFacets: deleted assets are left out (unless asked for) and never counted;
// facets count the matching assets per value; filters narrow hits and counts alike; without words
// a filter lists its assets by name.
func TestSearchDeletedAndFacets(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		mk := func(ns, name string, kind catalog.Kind, owner string, tags ...string) catalog.Asset {
			in := catalog.CreateInput{Kind: kind, Namespace: ns, Name: name, Description: "daily metrics"}
			if owner != "" {
				in.Owners = []catalog.OwnerInput{{Principal: owner}}
			}
			a := e.createWith(t, in)
			for _, tag := range tags {
				e.tag(t, a.ID, uuid.Nil, label.KindTag, tag)
			}
			if len(tags) > 0 {
				if err := e.cat.Reindex(ctx, a.ID); err != nil {
					t.Fatal(err)
				}
			}
			return a
		}
		a1 := mk("alpha", "clicks", catalog.KindTable, "ana", "pii.email", "tier.gold").ID
		a2 := mk("alpha", "views", catalog.KindView, "ana", "tier.gold").ID
		a3 := mk("alpha", "sessions", catalog.KindTable, "bo").ID
		b1 := mk("beta", "clicks_raw", catalog.KindTable, "bo", "pii.email").ID
		gone := mk("beta", "clicks_old", catalog.KindTable, "ana", "pii.email")
		if _, err := e.cat.Delete(ctx, gone.ID, catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
		deprecated := catalog.StatusDeprecated
		if _, err := e.cat.Update(ctx, a3, catalog.AnyVersion, catalog.UpdateInput{Status: &deprecated}); err != nil {
			t.Fatal(err)
		}

		res := e.search(t, catalog.SearchQuery{Text: "metrics"})
		if res.Total != 4 || slices.Contains(hitIDs(res), gone.ID) {
			t.Fatalf("deleted asset found or total wrong: %d %v", res.Total, hitIDs(res))
		}
		want := map[string][]catalog.FacetCount{
			catalog.FacetKind:      {{"table", 3}, {"view", 1}},
			catalog.FacetNamespace: {{"alpha", 3}, {"beta", 1}},
			catalog.FacetTag:       {{"pii.email", 2}, {"tier.gold", 2}},
			catalog.FacetOwner:     {{"ana", 2}, {"bo", 2}},
		}
		if fmt.Sprint(res.Facets) != fmt.Sprint(want) {
			t.Errorf("facets %v, want %v", res.Facets, want)
		}
		only := e.search(t, catalog.SearchQuery{Text: "metrics", HitsOnly: true})
		if fmt.Sprint(hitIDs(only)) != fmt.Sprint(hitIDs(res)) || only.Total != res.Total || only.TotalExact != res.TotalExact {
			t.Errorf("HitsOnly: hits %v (total %d), want %v (total %d)", hitIDs(only), only.Total, hitIDs(res), res.Total)
		}
		for _, h := range only.Hits {
			if len(h.MatchedIn) != 0 {
				t.Errorf("HitsOnly explained what %s matched: %v", h.Name, h.MatchedIn)
			}
		}
		for f, counts := range only.Facets {
			if len(counts) != 0 {
				t.Errorf("HitsOnly counted facet %s: %v", f, counts)
			}
		}
		if res := e.search(t, catalog.SearchQuery{Text: "clicks old"}); res.Total != 0 {
			t.Errorf("deleted asset found by its name: %+v", res.Hits)
		}
		res = e.search(t, catalog.SearchQuery{Text: "clicks old", IncludeDeleted: true})
		if len(res.Hits) != 1 || res.Hits[0].ID != gone.ID || res.Hits[0].Status != catalog.StatusDeleted || res.Hits[0].Name != "clicks_old" {
			t.Errorf("IncludeDeleted: %+v", res.Hits)
		}
		if n := len(res.Facets[catalog.FacetKind]); n != 0 {
			t.Errorf("a deleted asset was counted: %v", res.Facets)
		}

		for _, tc := range []struct {
			name string
			q    catalog.SearchQuery
			want []uuid.UUID // in order
		}{
			{"Tag", catalog.SearchQuery{Text: "metrics", Tag: "pii.email"}, nil},
			{"TagAndWord", catalog.SearchQuery{Text: "clicks", Tag: "pii.email"}, []uuid.UUID{a1, b1}},
			{"Owner", catalog.SearchQuery{Text: "clicks", Owner: "bo"}, []uuid.UUID{b1}},
			{"Kind", catalog.SearchQuery{Text: "metrics", Kind: "view"}, []uuid.UUID{a2}},
			{"Namespace", catalog.SearchQuery{Text: "clicks", Namespace: "beta"}, []uuid.UUID{b1}},
			{"NoWordsTagListsByName", catalog.SearchQuery{Tag: "tier.gold"}, []uuid.UUID{a1, a2}},
			{"NoWordsNamespace", catalog.SearchQuery{Namespace: "alpha"}, []uuid.UUID{a1, a3, a2}},
			{"NoWordsOwnerAndKind", catalog.SearchQuery{Owner: "ana", Kind: "table"}, []uuid.UUID{a1}},
			{"StatusDeleted", catalog.SearchQuery{Namespace: "beta", Status: catalog.StatusDeleted}, []uuid.UUID{gone.ID}},
			{"UnknownTag", catalog.SearchQuery{Tag: "nope"}, []uuid.UUID{}},
			{"Deprecated", catalog.SearchQuery{Status: catalog.StatusDeprecated}, []uuid.UUID{a3}},
			{"ActiveOnly", catalog.SearchQuery{Status: catalog.StatusActive}, []uuid.UUID{a1, b1, a2}},
			{"ActiveInNamespace", catalog.SearchQuery{Namespace: "alpha", Status: catalog.StatusActive}, []uuid.UUID{a1, a2}},
			{"ActiveWord", catalog.SearchQuery{Text: "clicks", Status: catalog.StatusActive, Kind: "table"}, []uuid.UUID{a1, b1}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := e.search(t, tc.q)
				if tc.want == nil { // only the count matters
					if res.Total != 2 {
						t.Errorf("total %d, want 2", res.Total)
					}
					return
				}
				if got := hitIDs(res); !slices.Equal(got, tc.want) || res.Total != len(tc.want) {
					t.Errorf("%d hits %v, want %v", res.Total, got, tc.want)
				}
				// The counts are over the filtered hits: the filter's own value counts all of them.
				if tc.q.Kind != "" && len(res.Hits) > 0 {
					if f := res.Facets[catalog.FacetKind]; len(f) != 1 || f[0].Count != res.Total {
						t.Errorf("kind facet %v after the kind filter", f)
					}
				}
			})
		}
		// A status filter lets deleted assets in.
		res = e.search(t, catalog.SearchQuery{Text: "clicks", Status: catalog.StatusDeleted})
		if got := hitIDs(res); !slices.Equal(got, []uuid.UUID{gone.ID}) {
			t.Errorf("status deleted: %v", got)
		}
	})
}

// TestSearchPaging: limit and offset page through the ranked hits; the total stays.
func TestSearchPaging(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		var names []catalog.CreateInput
		for i := range 25 {
			names = append(names, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "p", Name: fmt.Sprintf("events_%02d", i)})
		}
		if n, err := e.cat.CreateMany(context.Background(), names); err != nil || n != 25 {
			t.Fatalf("CreateMany: %d %v", n, err)
		}
		var all []uuid.UUID
		for off := 0; off < 30; off += 10 {
			res := e.search(t, catalog.SearchQuery{Text: "events", Limit: 10, Offset: off})
			if res.Total != 25 {
				t.Fatalf("offset %d: total %d", off, res.Total)
			}
			all = append(all, hitIDs(res)...)
		}
		slices.SortFunc(all, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
		if len(slices.Compact(all)) != 25 {
			t.Errorf("pages held %d distinct assets, want 25", len(all))
		}
		res := e.search(t, catalog.SearchQuery{Text: "events", Offset: 100})
		if res.Total != 25 || len(res.Hits) != 0 {
			t.Errorf("past the end: total %d, %d hits", res.Total, len(res.Hits))
		}
		if res := e.search(t, catalog.SearchQuery{Text: "events"}); len(res.Hits) != catalog.DefaultSearchLimit {
			t.Errorf("default page: %d hits", len(res.Hits))
		}
	})
}

// TestSearchRefusals: bad searches are ErrInvalid naming the field.
func TestSearchRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		for _, tc := range []struct {
			name  string
			q     catalog.SearchQuery
			field string
		}{
			{"Empty", catalog.SearchQuery{}, "q"},
			{"OnlyPunctuation", catalog.SearchQuery{Text: "..."}, "q"},
			{"TooLong", catalog.SearchQuery{Text: strings.Repeat("a", 201)}, "q"},
			{"TooManyWords", catalog.SearchQuery{Text: strings.Repeat("w ", 17)}, "q"},
			{"LimitTooBig", catalog.SearchQuery{Text: "x", Limit: 101}, "limit"},
			{"LimitNegative", catalog.SearchQuery{Text: "x", Limit: -1}, "limit"},
			{"OffsetTooDeep", catalog.SearchQuery{Text: "x", Offset: 10_001}, "offset"},
			{"OffsetNegative", catalog.SearchQuery{Text: "x", Offset: -1}, "offset"},
			{"UnknownKind", catalog.SearchQuery{Text: "x", Kind: "spreadsheet"}, "kind"},
			{"UnknownStatus", catalog.SearchQuery{Text: "x", Status: "gone"}, "status"},
			{"NULInFilter", catalog.SearchQuery{Tag: "a\x00b"}, "tag"},
			{"BadUTF8InFilter", catalog.SearchQuery{Owner: "\xff"}, "owner"},
			{"FilterTooLong", catalog.SearchQuery{Namespace: strings.Repeat("n", 513)}, "namespace"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.cat.SearchAssets(context.Background(), tc.q)
				var ce *catalog.Error
				if !errors.Is(err, catalog.ErrInvalid) || !errors.As(err, &ce) || ce.Field != tc.field || ce.Message == "" {
					t.Errorf("got %v, want ErrInvalid on %s", err, tc.field)
				}
			})
		}
		// At the limits: accepted.
		for _, q := range []catalog.SearchQuery{
			{Text: strings.Repeat("a", 200)}, {Text: strings.TrimSpace(strings.Repeat("w ", 16))},
			{Text: "x", Limit: 100, Offset: 10_000}, {Text: "x\x00y"}, {Text: "\xff\xfe orders"},
		} {
			if _, err := e.cat.SearchAssets(context.Background(), q); err != nil {
				t.Errorf("%+v: %v", q, err)
			}
		}
	})
}

// TestIndexMissing: assets without a search doc (a database from before search) are indexed in
// the background, in batches, and found afterwards.
func TestIndexMissing(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		var ins []catalog.CreateInput
		for i := range 1500 {
			ins = append(ins, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "old", Name: fmt.Sprintf("table_%04d", i)})
		}
		for part := range slices.Chunk(ins, catalog.MaxCreateMany) {
			if _, err := e.cat.CreateMany(ctx, part); err != nil {
				t.Fatal(err)
			}
		}
		a := e.createWith(t, catalog.CreateInput{Namespace: "old", Name: "ledger", Owners: []catalog.OwnerInput{{Principal: "carol"}}})
		for _, stmt := range []string{"DELETE FROM search_facets", "DELETE FROM search_docs"} {
			if _, err := e.db.SQL.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		if res := e.search(t, catalog.SearchQuery{Text: "ledger"}); res.Total != 0 {
			t.Fatalf("found without docs: %+v", res.Hits)
		}
		var calls []int
		n, err := e.cat.IndexMissing(ctx, func(done int) { calls = append(calls, done) })
		if err != nil || n != 1501 || !slices.Equal(calls, []int{1000, 1501}) {
			t.Fatalf("IndexMissing: %d %v, progress %v", n, err, calls)
		}
		res := e.search(t, catalog.SearchQuery{Text: "carol"})
		if len(res.Hits) != 1 || res.Hits[0].ID != a.ID {
			t.Errorf("after the backfill: %+v", res.Hits)
		}
		if res := e.search(t, catalog.SearchQuery{Namespace: "old", Limit: 1}); res.Total != 1501 {
			t.Errorf("namespace total %d after the backfill", res.Total)
		}
		if n, err := e.cat.IndexMissing(ctx, nil); err != nil || n != 0 {
			t.Errorf("second run: %d %v", n, err)
		}
		// It stops when its context ends.
		if _, err := e.db.SQL.ExecContext(ctx, "DELETE FROM search_docs"); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		n, err = e.cat.IndexMissing(cctx, func(int) { cancel() })
		if !errors.Is(err, context.Canceled) || n != 1000 {
			t.Errorf("cancelled: %d %v", n, err)
		}
	})
}

// TestIndexMissingReplicas: replicas starting together on PostgreSQL share the backfill: each
// asset is indexed by one of them, so their counts add up to the assets without docs.
func TestIndexMissingReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		if e.db.Dialect != dialect.Postgres {
			t.Skip("replicas share PostgreSQL")
		}
		ctx := context.Background()
		var ins []catalog.CreateInput
		for i := range 3000 {
			ins = append(ins, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "old", Name: fmt.Sprintf("t_%04d", i)})
		}
		for part := range slices.Chunk(ins, catalog.MaxCreateMany) {
			if _, err := e.cat.CreateMany(ctx, part); err != nil {
				t.Fatal(err)
			}
		}
		for _, stmt := range []string{"DELETE FROM search_facets", "DELETE FROM search_docs"} {
			if _, err := e.db.SQL.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		replicas := []*catalog.Catalog{e.cat, mustCatalog(t, e.db), mustCatalog(t, e.db)}
		counts := make([]int, len(replicas))
		var g errgroup.Group
		for i, r := range replicas {
			g.Go(func() error {
				n, err := r.IndexMissing(ctx, nil)
				counts[i] = n
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if sum := counts[0] + counts[1] + counts[2]; sum != 3000 {
			t.Fatalf("replicas indexed %v = %d assets, want 3000 (each once)", counts, sum)
		}
		if res := e.search(t, catalog.SearchQuery{Namespace: "old", Limit: 1}); res.Total != 2000 || res.TotalExact {
			t.Fatalf("namespace search after the backfill: total %d exact %v", res.Total, res.TotalExact)
		}
	})
}

// TestCreateManyIndexesAsReindexDoes: CreateMany builds its assets' docs from the rows it wrote
// instead of reading them back; the docs and facets are the ones reindex builds.
func TestCreateManyIndexesAsReindexDoes(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		ins := []catalog.CreateInput{
			{Kind: catalog.KindTable, Namespace: "lake.raw", Name: "Orders_Daily", Description: "Orders per day"},
			{Kind: catalog.KindJob, Namespace: "airflow", Name: "load_orders"},
		}
		if n, err := e.cat.CreateMany(ctx, ins); err != nil || n != 2 {
			t.Fatalf("CreateMany: %d %v", n, err)
		}
		snapshot := func() string {
			var b strings.Builder
			for _, q := range []string{
				"SELECT asset_id, kind, status, namespace, name, name_key, t_name, t_former, t_labels, t_body, asset_version FROM search_docs ORDER BY asset_id",
				"SELECT d.asset_id, f.facet, f.value FROM search_facets f JOIN search_docs d ON d.id = f.doc_id ORDER BY d.asset_id, f.facet, f.value",
			} {
				rows, err := e.db.SQL.QueryContext(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				cols, _ := rows.Columns()
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					for _, v := range vals {
						if bs, ok := v.([]byte); ok {
							v = string(bs)
						}
						fmt.Fprintf(&b, "%v|", v)
					}
					b.WriteString("\n")
				}
				rows.Close()
			}
			return b.String()
		}
		before := snapshot()
		res := e.search(t, catalog.SearchQuery{Namespace: "lake.raw"})
		if len(res.Hits) != 1 {
			t.Fatalf("hits %+v", res.Hits)
		}
		var ids []uuid.UUID
		for _, k := range []catalog.Kind{catalog.KindTable, catalog.KindJob} {
			r := e.search(t, catalog.SearchQuery{Kind: string(k)})
			ids = append(ids, hitIDs(r)...)
		}
		if err := e.cat.Reindex(ctx, ids...); err != nil {
			t.Fatal(err)
		}
		if after := snapshot(); after != before || !strings.Contains(before, "lake raw orders daily") {
			t.Errorf("CreateMany's docs:\n%s\nreindex's:\n%s", before, after)
		}
	})
}

// TestSearchWindow: past the window a search examines what it can answer fast: the exact name
// first, then the current-name matches, then the rest in index order; the total is then a lower
// bound, and facets count the examined matches. Deeper pages widen the window.
func TestSearchWindow(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db, catalog.WithSearchWindow(5))
		var ins []catalog.CreateInput
		for i := range 12 {
			ins = append(ins, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "w", Name: fmt.Sprintf("events_%02d", i), Description: "daily metrics"})
		}
		if _, err := cat.CreateMany(ctx, ins); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindView, Namespace: "w", Name: fmt.Sprintf("clicks_%d", i), Description: "events per day"}); err != nil {
				t.Fatal(err)
			}
		}
		exact, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "z", Name: "events"})
		if err != nil {
			t.Fatal(err)
		}
		search := func(q catalog.SearchQuery) catalog.SearchResult {
			t.Helper()
			res, err := cat.SearchAssets(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		res := search(catalog.SearchQuery{Text: "events", Limit: 5})
		if res.Total != 5 || res.TotalExact || len(res.Hits) != 5 || res.Hits[0].ID != exact.Asset.ID {
			t.Fatalf("past the window: total %d exact %v, %d hits %+v", res.Total, res.TotalExact, len(res.Hits), res.Hits)
		}
		for _, h := range res.Hits[1:] {
			if !strings.HasPrefix(h.Name, "events_") { // current-name matches before description matches
				t.Errorf("hit %s.%s examined before the names", h.Namespace, h.Name)
			}
		}
		n := 0
		for _, fc := range res.Facets[catalog.FacetKind] {
			n += fc.Count
		}
		if n != 5 {
			t.Errorf("facets counted %d docs, want the 5 examined: %v", n, res.Facets)
		}
		res = search(catalog.SearchQuery{Text: "events", Limit: 4, Offset: 8})
		if res.Total != 12 || res.TotalExact || len(res.Hits) != 4 {
			t.Errorf("deep page: total %d exact %v, %d hits", res.Total, res.TotalExact, len(res.Hits))
		}
		res = search(catalog.SearchQuery{Text: "events per", Limit: 5})
		if res.Total != 3 || !res.TotalExact {
			t.Errorf("within the window: total %d exact %v", res.Total, res.TotalExact)
		}
		res = search(catalog.SearchQuery{Namespace: "w", Limit: 3})
		if res.Total != 5 || res.TotalExact || len(res.Hits) != 3 || res.Hits[0].Name != "clicks_0" || res.Hits[2].Name != "clicks_2" {
			t.Errorf("listing past the window: total %d exact %v, %+v", res.Total, res.TotalExact, res.Hits)
		}
		res = search(catalog.SearchQuery{Namespace: "w", Limit: 3, Offset: 3})
		if len(res.Hits) != 3 || res.Hits[0].Name != "events_00" {
			t.Errorf("listing page 2: %+v", res.Hits)
		}
		res = search(catalog.SearchQuery{Kind: "view", Limit: 5})
		if res.Total != 3 || !res.TotalExact || len(res.Hits) != 3 {
			t.Errorf("small listing: total %d exact %v", res.Total, res.TotalExact)
		}
	})
}
