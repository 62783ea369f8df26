package catalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// oddQueries are searches that have broken full-text query builders elsewhere: the syntax of
// FTS5 and tsquery (quotes, operators, column filters, prefixes), NUL and invalid UTF-8, and
// letters and digits outside ASCII that tokenizers classify differently.
var oddQueries = []string{
	"", " ", "orders", `"`, `""`, `'`, `''`, `\`, `\'`, "AND", "OR NOT", "NEAR(a b)", "a OR b", "-a", "+a", "*", "a*", "^a",
	"t_name:x", "t_name : x", "{t_name t_body}: x", "a:*", "a:A", "a & b | !c", "(a", "a)", "<->", "a <-> b", "'a':*",
	"é", "e\u0301", "ß", "İstanbul", "日本語のテーブル", "x²", "Ⅻ", "٣٤", "🙂 orders", "\u200b", "a\u00adb", "ﬁle",
	"a\x00b", "\xff\xfe", "analytics.orders_daily", "pii.email", "a b c d e f g h i j k l m n o p",
	strings.Repeat("x", 200), strings.Repeat("é", 100),
}

// FuzzSearchQuery: no search text makes the tokenizer or the query builders panic, yield a
// token that is not lower-case letters and digits, or build a full-text query SQLite rejects; a
// search either answers or is refused as invalid input.
//
//	go test -run '^$' -fuzz FuzzSearchQuery ./catalog/
func FuzzSearchQuery(f *testing.F) {
	for _, q := range oddQueries {
		f.Add(q)
	}
	db := storagetest.Open(f, "sqlite")
	cat := mustCatalog(f, db)
	seedSearch(f, cat)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range catalog.SearchTokens(text) {
			for _, r := range tok {
				if !(unicode.IsLetter(r) || unicode.IsDigit(r)) || (unicode.IsUpper(r) && unicode.ToLower(r) != r) {
					t.Fatalf("%q: token %q holds %q", text, tok, r)
				}
			}
		}
		if fts, _ := catalog.SearchQueries(text); fts != "" && len(text) <= 4096 {
			var n int
			if err := db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM search_fts WHERE search_fts MATCH ?", fts).Scan(&n); err != nil {
				t.Fatalf("%q: FTS5 refused %q: %v", text, fts, err)
			}
		}
		_, err := cat.SearchAssets(ctx, catalog.SearchQuery{Text: text})
		if err != nil && !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("%q: %v", text, err)
		}
	})
}

// TestOddQueries runs the fuzz seeds on both databases, PostgreSQL's tsquery included.
func TestOddQueries(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		cat := mustCatalog(t, db)
		seedSearch(t, cat)
		ctx := context.Background()
		for _, q := range oddQueries {
			for _, filtered := range []bool{false, true} {
				sq := catalog.SearchQuery{Text: q}
				if filtered {
					sq.Namespace, sq.Tag = q, q
				}
				_, err := cat.SearchAssets(ctx, sq)
				if err != nil && !errors.Is(err, catalog.ErrInvalid) {
					t.Errorf("%q (filtered %v): %v", q, filtered, err)
				}
			}
		}
		if db.Dialect == "postgres" {
			for _, q := range oddQueries {
				if _, tsq := catalog.SearchQueries(q); tsq != "" {
					var s string
					if err := db.SQL.QueryRowContext(ctx, "SELECT to_tsquery('simple', $1)::text", tsq).Scan(&s); err != nil {
						t.Errorf("%q: PostgreSQL refused %q: %v", q, tsq, err)
					}
				}
			}
		}
	})
}

func seedSearch(t testing.TB, cat *catalog.Catalog) {
	for _, n := range []struct{ ns, name, desc string }{
		{"analytics", "orders_daily", "Orders per day"}, {"日本", "テーブル", "説明"}, {"café", "crème_brûlée", "Straße İstanbul"},
		{"x", "a\"b'c\\d", "NEAR AND OR NOT"},
	} {
		if _, err := cat.Create(context.Background(), catalog.CreateInput{Kind: catalog.KindTable, Namespace: n.ns, Name: n.name, Description: n.desc}); err != nil {
			t.Fatal(err)
		}
	}
}
