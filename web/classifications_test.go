package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestClassificationsPage: anyone sees the classifications and their values; an admin creates one
// and changes one at the version the page showed; a stale form, a taken name, a value still in
// use and a non-admin session are refused and change nothing.
func TestClassificationsPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		x := newCurated(t, db)
		admin := signIn(t, x.srv, db, "root", auth.ScopeAdmin)
		if _, err := x.cat.AddLabel(ctx, x.customers.ID, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: "tier.gold"}); err != nil {
			t.Fatal(err)
		}
		if _, page := x.nob.get("/classifications"); !strings.Contains(page, "pii.email") || !strings.Contains(page, "tier.gold") || strings.Contains(page, "classification-create") {
			t.Fatalf("anonymous page:\n%s", page)
		}
		tier := func() catalog.Classification {
			t.Helper()
			cls, err := x.cat.Classifications(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cls {
				if c.Name == "tier" {
					return c
				}
			}
			t.Fatal("no tier")
			return catalog.Classification{}
		}
		v := func(c catalog.Classification) string { return strconv.FormatInt(c.Version, 10) }
		for _, tc := range []struct {
			name   string
			who    *browser
			form   url.Values
			status int
			page   string
			values string // tier's values after
		}{
			{"Create", admin, url.Values{"version": {"0"}, "name": {"sensitivity"}, "values": {"public, internal secret"}}, 303, "sensitivity.internal", "gold silver bronze"},
			{"CreateTaken", admin, url.Values{"version": {"0"}, "name": {"tier"}, "values": {"a"}}, 409, "exists already", "gold silver bronze"},
			{"WriterMayNot", x.writer, url.Values{"version": {v(tier())}, "name": {"tier"}, "values": {"gold"}}, 403, "admin scope", "gold silver bronze"},
			{"DropAValueInUse", admin, url.Values{"version": {v(tier())}, "name": {"tier"}, "values": {"silver bronze"}}, 409, "tier.gold is still on some assets", "gold silver bronze"},
			{"BadValue", admin, url.Values{"version": {v(tier())}, "name": {"tier"}, "values": {"Gold!"}}, 400, `Gold!&#34;: use one segment`, "gold silver bronze"},
			{"Change", admin, url.Values{"version": {v(tier())}, "name": {"tier"}, "values": {"gold silver bronze platinum"}}, 303, "tier.platinum", "gold silver bronze platinum"},
			{"Stale", admin, url.Values{"version": {"1"}, "name": {"tier"}, "values": {"gold"}, "description": {"typed"}}, 409, "changed since you loaded the page", "gold silver bronze platinum"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, loc, body := tc.who.post("/classifications", tc.form)
				if code != tc.status {
					t.Fatalf("POST: %d, want %d\n%s", code, tc.status, body)
				}
				if code == http.StatusSeeOther {
					_, body = tc.who.get(loc)
				}
				if !strings.Contains(body, tc.page) {
					t.Fatalf("the page lacks %q:\n%s", tc.page, body)
				}
				if got := strings.Join(tier().Values, " "); got != tc.values {
					t.Fatalf("tier's values: %q, want %q", got, tc.values)
				}
			})
		}
	})
}
