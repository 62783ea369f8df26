package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// browser is a signed-in (or anonymous) client that does not follow redirects, and the CSRF
// token its session's forms carry.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
	csrf string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn signs in with a new token of scope named name; an empty scope is an anonymous browser.
func signIn(t *testing.T, srv *httptest.Server, db *storage.DB, name string, scope auth.Scope) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, base: srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if scope == "" {
		return b
	}
	secret, _, err := auth.NewStore(db.Client, nil).Create(context.Background(), name, []auth.Scope{scope})
	if err != nil {
		t.Fatal(err)
	}
	form := csrfField.FindStringSubmatch(readBody(mustGet(t, b.c, srv.URL+"/signin")))
	if form == nil {
		t.Fatal("no CSRF field on the sign-in form")
	}
	if r, err := b.c.PostForm(srv.URL+"/signin", url.Values{"csrf": {form[1]}, "token": {secret}}); err != nil || r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %v %v", r.StatusCode, err)
	}
	m := csrfField.FindStringSubmatch(readBody(mustGet(t, b.c, srv.URL+"/glossary")))
	if m == nil {
		t.Fatal("no CSRF token on a signed-in page")
	}
	b.csrf = m[1]
	return b
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	r := mustGet(b.t, b.c, b.base+path)
	return r.StatusCode, readBody(r)
}

// post sends a form with the session's CSRF token (unless the form sets its own) and returns
// the status, the redirect target and the body.
func (b *browser) post(path string, form url.Values) (int, string, string) {
	b.t.Helper()
	if _, ok := form["csrf"]; !ok && b.csrf != "" {
		form.Set("csrf", b.csrf)
	}
	r, err := b.c.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return r.StatusCode, r.Header.Get("Location"), readBody(r)
}

// mustPost posts and wants a 303 back to the asset page with the flash.
func (b *browser) mustPost(path string, form url.Values, flash string) {
	b.t.Helper()
	status, loc, body := b.post(path, form)
	if status != http.StatusSeeOther || !strings.Contains(loc, "flash="+flash) {
		b.t.Fatalf("POST %s %v: %d to %q, want 303 with flash %s\n%s", path, form, status, loc, flash, body)
	}
}

// curated is a small catalog to curate: shop.customers (id, email) feeding
// mart.customer_emails (customer_id, email_hash) column by column, and a glossary term.
type curated struct {
	cat                 *catalog.Catalog
	customers, emails   catalog.Asset
	email, emailHash    catalog.Column
	term                catalog.Term
	srv                 *httptest.Server
	writer, reader, nob *browser
}

func newCurated(t *testing.T, db *storage.DB) *curated {
	t.Helper()
	ctx := context.Background()
	var lin *lineage.Service
	srv, cat := newUIWith(t, db, func(c *web.Config) { lin = c.Lineage })
	if err := cat.EnsureClassifications(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := lin.Ingest(ctx, customerEmailsEvent(time.Now())); err != nil {
		t.Fatal(err)
	}
	x := &curated{cat: cat, srv: srv}
	for _, a := range []struct {
		into *catalog.Asset
		col  *catalog.Column
		name string
		cols []catalog.ColumnInput
	}{
		{&x.customers, &x.email, "shop.customers", []catalog.ColumnInput{{Path: "id", Type: "INTEGER"}, {Path: "email", Type: "STRING"}}},
		{&x.emails, &x.emailHash, "mart.customer_emails", []catalog.ColumnInput{{Path: "customer_id", Type: "INTEGER"}, {Path: "email_hash", Type: "STRING"}}},
	} {
		res, err := cat.Resolve(ctx, "postgres://shop:5432", a.name)
		if err != nil {
			t.Fatalf("resolve %s: %v", a.name, err)
		}
		// As lineage ingest records a schema facet (the same call, so a no-op once it does).
		if _, err := cat.SyncColumns(ctx, res.Asset.ID, catalog.SchemaInput{Source: catalog.SourceOpenLineage, Columns: a.cols}); err != nil {
			t.Fatal(err)
		}
		cols, err := cat.Columns(ctx, res.Asset.ID, false)
		if err != nil || len(cols) != 2 {
			t.Fatalf("columns of %s: %v %v", a.name, cols, err)
		}
		*a.col = cols[1]
		if *a.into, err = cat.Get(ctx, res.Asset.ID); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if x.term, err = cat.CreateTerm(ctx, catalog.TermInput{Name: "Customer email", Definition: "An address we may write to.", Owners: []string{"team-crm"}}); err != nil {
		t.Fatal(err)
	}
	x.writer = signIn(t, srv, db, "writer", auth.ScopeWrite)
	x.reader = signIn(t, srv, db, "reader", auth.ScopeRead)
	x.nob = signIn(t, srv, db, "", "")
	return x
}

// version is the asset's current version, as its page shows it.
func (x *curated) version(t *testing.T, id uuid.UUID) string {
	t.Helper()
	a, err := x.cat.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(a.Version, 10)
}

// customerEmailsEvent is an OpenLineage run of a job reading shop.customers and writing
// mart.customer_emails, whose email_hash is derived from customers.email.
func customerEmailsEvent(at time.Time) []byte {
	return fmt.Appendf(nil, `{"eventType":"COMPLETE","eventTime":%q,"producer":"https://example.com/test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
"run":{"runId":%q},"job":{"namespace":"etl","name":"build_customer_emails"},
"inputs":[{"namespace":"postgres://shop:5432","name":"shop.customers","facets":{"schema":{"_producer":"https://example.com/test","_schemaURL":"https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json","fields":[{"name":"id","type":"INTEGER"},{"name":"email","type":"STRING"}]}}}],
"outputs":[{"namespace":"postgres://shop:5432","name":"mart.customer_emails","facets":{
 "schema":{"_producer":"https://example.com/test","_schemaURL":"https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json","fields":[{"name":"customer_id","type":"INTEGER"},{"name":"email_hash","type":"STRING"}]},
 "columnLineage":{"_producer":"https://example.com/test","_schemaURL":"https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json","fields":{
  "customer_id":{"inputFields":[{"namespace":"postgres://shop:5432","name":"shop.customers","field":"id","transformations":[{"type":"DIRECT","subtype":"IDENTITY"}]}]},
  "email_hash":{"inputFields":[{"namespace":"postgres://shop:5432","name":"shop.customers","field":"email","transformations":[{"type":"DIRECT","subtype":"TRANSFORMATION","masking":true}]}]}}}}}]}`,
		at.UTC().Format(time.RFC3339Nano), uuid.Must(uuid.NewV7()).String())
}

// TestCurationEdits: a write session edits the asset page's parts (description, owners, tags
// and terms on the asset and a column, a column's description) and each lands on the page.
func TestCurationEdits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		x := newCurated(t, db)
		id := x.customers.ID.String()
		path := "/assets/" + id
		_, page := x.writer.get(path)
		for _, want := range []string{`id="description-text"`, `id="asset-columns"`, `data-column="email"`, `<option value="pii.email">`, "Customer email", "Add tag"} {
			if !strings.Contains(page, want) {
				t.Fatalf("the writer's asset page lacks %q:\n%s", want, page)
			}
		}
		col := x.email.ID.String()
		x.writer.mustPost(path+"/description", url.Values{"version": {x.version(t, x.customers.ID)}, "description": {"Who buys from us.\r\n\r\nSee **CRM**."}}, "description-saved")
		x.writer.mustPost(path+"/tags", url.Values{"version": {x.version(t, x.customers.ID)}, "column": {col}, "tag": {"pii.email"}}, "tag-added")
		x.writer.mustPost(path+"/tags", url.Values{"version": {x.version(t, x.customers.ID)}, "tag": {"tier.gold"}}, "tag-added")
		x.writer.mustPost(path+"/tags", url.Values{"version": {x.version(t, x.customers.ID)}, "tag": {"crm"}}, "tag-added")
		x.writer.mustPost(path+"/tags/remove", url.Values{"version": {x.version(t, x.customers.ID)}, "tag": {"crm"}}, "tag-removed")
		x.writer.mustPost(path+"/terms", url.Values{"version": {x.version(t, x.customers.ID)}, "column": {col}, "term": {x.term.ID.String()}}, "term-linked")
		x.writer.mustPost(path+"/column-description", url.Values{"version": {x.version(t, x.customers.ID)}, "column": {col}, "description": {"The _primary_ address."}}, "column-saved")
		x.writer.mustPost(path+"/owners", url.Values{"version": {x.version(t, x.customers.ID)}, "principal": {"team-crm"}, "kind": {"group"}, "role": {"business"}}, "owner-added")
		x.writer.mustPost(path+"/owners", url.Values{"version": {x.version(t, x.customers.ID)}, "principal": {"bob"}}, "owner-added")
		x.writer.mustPost(path+"/owners/remove", url.Values{"version": {x.version(t, x.customers.ID)}, "principal": {"bob"}}, "owner-removed")

		status, page := x.nob.get(path + "?flash=tag-added")
		if status != 200 {
			t.Fatalf("asset page: %d", status)
		}
		row := regexp.MustCompile(`(?s)<tr id="col-` + col + `".*?</tr>`).FindString(page)
		owners := regexp.MustCompile(`(?s)<ul id="owners">.*?</ul>`).FindString(page)
		for _, c := range []struct{ in, want string }{
			{page, "Tag added"},
			{page, "<p>Who buys from us.</p>\n<p>See <strong>CRM</strong>.</p>"},
			{page, "tier.gold"},
			{row, "pii.email"},
			{row, "by web:writer"},
			{row, "Customer email"},
			{row, "<em>primary</em>"},
			{owners, "team-crm"},
			{owners, "group, business"},
		} {
			if !strings.Contains(c.in, c.want) {
				t.Errorf("the page lacks %q in:\n%s", c.want, c.in)
			}
		}
		if strings.Contains(page, ">crm<") || strings.Contains(owners, "bob") {
			t.Errorf("a removed tag or owner is still shown:\n%s", page)
		}
		if strings.Contains(page, `id="description-text"`) || strings.Contains(page, "Add tag") {
			t.Error("an anonymous visitor got edit forms")
		}
		// The term's page lists the column it is linked to.
		_, termPage := x.nob.get("/glossary/" + x.term.ID.String())
		if links := regexp.MustCompile(`(?s)<ul id="term-links">.*?</ul>`).FindString(termPage); !strings.Contains(links, "shop.customers") || !strings.Contains(links, "email") {
			t.Errorf("term links: %s", links)
		}
		// The audit log names the person.
		evs, err := x.cat.AuditLog(context.Background(), uuid.Nil, 50)
		if err != nil {
			t.Fatal(err)
		}
		edits := 0
		for _, e := range evs {
			if e.AssetID != nil && *e.AssetID == x.customers.ID && e.Actor == "web:writer" {
				edits++
			}
		}
		if edits != 10 {
			t.Errorf("%d audit events by web:writer, want 10 (one per edit)", edits)
		}
	})
}

// TestCurationStaleEdits: an edit made against a version that is no longer current is refused
// with 409, the page saying the asset changed, showing the current value of what was edited
// and keeping what the person typed.
func TestCurationStaleEdits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		x := newCurated(t, db)
		path := "/assets/" + x.customers.ID.String()
		seen := x.version(t, x.customers.ID)
		// Someone else changes the description, tags the column, describes it and adds an owner
		// meanwhile: the same fields the forms below edit.
		other := catalog.WithActor(ctx, "api:alice")
		desc := "Changed by **alice**."
		if _, err := x.cat.Update(other, x.customers.ID, catalog.AnyVersion, catalog.UpdateInput{Description: &desc}); err != nil {
			t.Fatal(err)
		}
		if _, err := x.cat.AddLabel(other, x.customers.ID, catalog.AnyVersion, catalog.LabelInput{ColumnID: x.email.ID, Kind: catalog.LabelTag, Value: "pii.email"}); err != nil {
			t.Fatal(err)
		}
		if _, err := x.cat.SetColumnDescription(other, x.customers.ID, catalog.AnyVersion, x.email.ID, "alice's words"); err != nil {
			t.Fatal(err)
		}
		if _, err := x.cat.SetOwner(other, x.customers.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: "carol", Role: "business"}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, action string
			form         url.Values
			current      []string // the current value, on the page
			typed        string   // what was typed, kept in the form
		}{
			{"Description", "/description", url.Values{"description": {"My own <text>"}}, []string{`<pre id="edit-current">Changed by **alice**.</pre>`}, `>My own &lt;text&gt;</textarea>`},
			{"ColumnTag", "/tags", url.Values{"column": {x.email.ID.String()}, "tag": {"pii.email"}}, []string{"Current tags of column email", "pii.email (by api:alice)"}, `value="pii.email" required`},
			{"ColumnDescription", "/column-description", url.Values{"column": {x.email.ID.String()}, "description": {"typed here"}}, []string{"Current description of column email", `<pre id="edit-current">alice&#39;s words</pre>`}, ">typed here</textarea>"},
			{"Owner", "/owners", url.Values{"principal": {"carol"}}, []string{"Current owners", "carol (user, business)"}, `value="carol"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.form.Set("version", seen)
				status, _, page := x.writer.post(path+tc.action, tc.form)
				if status != http.StatusConflict {
					t.Fatalf("stale edit: %d, want 409", status)
				}
				want := append([]string{`id="edit-error"`, "changed since you loaded the page", "nothing was saved", tc.typed}, tc.current...)
				for _, w := range want {
					if !strings.Contains(page, w) {
						t.Fatalf("the refusal lacks %q:\n%s", w, page)
					}
				}
			})
		}
		// Nothing the stale forms sent was saved.
		a, err := x.cat.Get(ctx, x.customers.ID)
		if err != nil {
			t.Fatal(err)
		}
		labels, err := x.cat.Labels(ctx, x.customers.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if a.Description != desc || len(labels) != 1 || len(a.Owners) != 1 || a.Owners[0].Role != "business" {
			t.Fatalf("a stale edit changed something: %q %v %v", a.Description, labels, a.Owners)
		}
		// An edit from the same old page of something nobody touched since lands.
		x.writer.mustPost(path+"/owners", url.Values{"version": {seen}, "principal": {"dave"}}, "owner-added")
	})
}

// TestCurationRefusals: bad input is 400 with the message and the typed value kept; forms
// without the session's CSRF token, anonymous ones and those of a read-only session are 403 and
// change nothing.
func TestCurationRefusals(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		x := newCurated(t, db)
		path := "/assets/" + x.customers.ID.String()
		col := x.email.ID.String()
		for _, tc := range []struct {
			name   string
			b      *browser
			action string
			form   url.Values
			status int
			has    string
		}{
			{"BadTag", x.writer, "/tags", url.Values{"column": {col}, "tag": {"PII.Email"}}, 400, "lower-case letters"},
			{"BadTagKept", x.writer, "/tags", url.Values{"column": {col}, "tag": {"PII.Email"}}, 400, `value="PII.Email"`},
			{"UnknownClassificationValue", x.writer, "/tags", url.Values{"column": {col}, "tag": {"pii.shoe_size"}}, 400, "is a classification"},
			{"BadOwnerKind", x.writer, "/owners", url.Values{"principal": {"x"}, "kind": {"robot"}}, 400, "is not one of user, group"},
			{"RemoveMissingTag", x.writer, "/tags/remove", url.Values{"column": {col}, "tag": {"pii.email"}}, 409, "has no tag"},
			{"NoVersion", x.writer, "/description", url.Values{"description": {"x"}, "version": {""}}, 400, "reload the page"},
			{"NoCSRF", x.writer, "/description", url.Values{"description": {"x"}, "csrf": {""}}, 403, "forbidden"},
			{"WrongCSRF", x.writer, "/description", url.Values{"description": {"x"}, "csrf": {"forged"}}, 403, "forbidden"},
			{"Anonymous", x.nob, "/description", url.Values{"description": {"x"}}, 403, "forbidden"},
			{"ReadOnlyToken", x.reader, "/description", url.Values{"description": {"x"}}, 403, "write scope"},
			{"ReadOnlyTag", x.reader, "/tags", url.Values{"tag": {"crm"}}, 403, "write scope"},
			{"ReadOnlySuggestion", x.reader, "/suggestions/accept", url.Values{}, 403, "write scope"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, ok := tc.form["version"]; !ok {
					tc.form.Set("version", x.version(t, x.customers.ID))
				}
				status, _, body := tc.b.post(path+tc.action, tc.form)
				if status != tc.status || !strings.Contains(body, tc.has) {
					t.Fatalf("%d, want %d containing %q:\n%s", status, tc.status, tc.has, body)
				}
			})
		}
		a, err := x.cat.Get(context.Background(), x.customers.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a.Description != "" || a.Version != x.customers.Version {
			t.Fatalf("a refused edit changed the asset: %+v", a)
		}
		// A read-only session sees no forms.
		if _, page := x.reader.get(path); strings.Contains(page, `id="description-text"`) || strings.Contains(page, "Add tag") {
			t.Fatal("a read-only session got edit forms")
		}
		if _, page := x.reader.get("/glossary"); strings.Contains(page, `id="term-create"`) {
			t.Fatal("a read-only session got the term form")
		}
		if status, _, _ := x.reader.post("/glossary", url.Values{"name": {"x"}}); status != http.StatusForbidden {
			t.Fatalf("a read-only session created a term: %d", status)
		}
	})
}

// TestSuggestions: a pii tag on an upstream column is suggested on the column derived from it;
// accepting applies it with its provenance, rejecting one hides it for good.
func TestSuggestions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		x := newCurated(t, db)
		up := "/assets/" + x.customers.ID.String()
		down := "/assets/" + x.emails.ID.String()
		x.writer.mustPost(up+"/tags", url.Values{"version": {x.version(t, x.customers.ID)}, "column": {x.email.ID.String()}, "tag": {"pii.email"}}, "tag-added")
		x.writer.mustPost(up+"/tags", url.Values{"version": {x.version(t, x.customers.ID)}, "column": {x.email.ID.String()}, "tag": {"pii.other"}}, "tag-added")
		_, page := x.writer.get(down)
		sugg := regexp.MustCompile(`(?s)<ul id="suggestions".*?</ul>`).FindString(page)
		for _, want := range []string{"pii.email", "pii.other", "email_hash", "shop.customers", "<code>email</code>", "masked", "Accept", "Reject"} {
			if !strings.Contains(sugg, want) {
				t.Fatalf("suggestions lack %q:\n%s", want, sugg)
			}
		}
		from := x.email.ID.String()
		seen := x.version(t, x.emails.ID)
		x.writer.mustPost(down+"/suggestions/accept", url.Values{"version": {seen}, "path": {"email_hash"}, "tag": {"pii.email"}, "from": {from}}, "suggestion-accepted")
		// The same page's other button: the accept since touched another tag, so it lands.
		x.writer.mustPost(down+"/suggestions/reject", url.Values{"version": {seen}, "path": {"email_hash"}, "tag": {"pii.other"}, "from": {from}}, "suggestion-rejected")
		// The same page's accept again: what it depends on changed since, so it is refused as stale.
		status, _, body := x.writer.post(down+"/suggestions/accept", url.Values{"version": {seen}, "path": {"email_hash"}, "tag": {"pii.email"}, "from": {from}})
		if status != http.StatusConflict || !strings.Contains(body, "changed since you loaded the page") || !strings.Contains(body, "Current suggested tags") {
			t.Fatalf("stale accept: %d\n%s", status, body)
		}
		// Accepting what is not suggested any more is a conflict.
		status, _, _ = x.writer.post(down+"/suggestions/accept", url.Values{"version": {x.version(t, x.emails.ID)}, "path": {"email_hash"}, "tag": {"pii.email"}, "from": {from}})
		if status != http.StatusConflict {
			t.Fatalf("accepting twice: %d", status)
		}
		_, page = x.nob.get(down)
		if strings.Contains(page, `id="suggestions"`) {
			t.Fatalf("suggestions left after accepting and rejecting:\n%s", page)
		}
		row := regexp.MustCompile(`(?s)<tr id="col-[^"]+" data-column="email_hash">.*?</tr>`).FindString(page)
		if !strings.Contains(row, "pii.email") || !strings.Contains(row, "propagated from shop.customers.email, accepted by web:writer") {
			t.Fatalf("the accepted tag on email_hash: %s", row)
		}
		// The provenance follows renames: it names the upstream column by its current name.
		if _, err := x.cat.Rename(ctx, x.customers.ID, catalog.AnyVersion, "", "shop.clients"); err != nil {
			t.Fatal(err)
		}
		_, page = x.nob.get(down)
		if !strings.Contains(page, "propagated from shop.clients.email") {
			t.Fatalf("provenance after the rename:\n%s", page)
		}
	})
}

// TestSchemaHistoryOnThePage: columns as a table, schema changes newest first.
func TestSchemaHistoryOnThePage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		srv, cat := newUI(t, db)
		res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "lake", Name: "events"})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Asset.ID
		one, two := 1, 2
		for _, cols := range [][]catalog.ColumnInput{
			{{FieldID: &one, Path: "id", Type: "int"}, {FieldID: &two, Path: "ts", Type: "timestamp", Doc: "When it *happened*."}},
			{{FieldID: &one, Path: "id", Type: "long"}, {FieldID: &two, Path: "event_time", Type: "timestamp", Doc: "When it *happened*."}},
		} {
			if _, err := cat.SyncColumns(ctx, id, catalog.SchemaInput{Source: catalog.SourceIceberg, Columns: cols}); err != nil {
				t.Fatal(err)
			}
		}
		page := readBody(mustGet(t, srv.Client(), srv.URL+"/assets/"+id.String()))
		table := regexp.MustCompile(`(?s)<table class="cols" id="asset-columns">.*?</table>`).FindString(page)
		hist := regexp.MustCompile(`(?s)<ol id="schema-history".*?</ol>`).FindString(page)
		for _, c := range []struct{ in, want string }{
			{table, "<code>event_time</code>"}, {table, ">long<"}, {table, `data-label="Field ID">2<`}, {table, "When it <em>happened</em>."}, {table, "from the source"},
			{hist, "renamed ts → event_time"}, {hist, "retyped id int → long"}, {hist, "added ts (timestamp)"},
		} {
			if !strings.Contains(c.in, c.want) {
				t.Errorf("lacks %q:\n%s", c.want, c.in)
			}
		}
		if strings.Index(hist, "renamed") > strings.Index(hist, "added") {
			t.Errorf("schema history not newest first:\n%s", hist)
		}
	})
}

// TestGlossaryPages: terms are listed and created; a term's page renders its definition and
// refuses a stale change with the current definition shown and the typed one kept.
func TestGlossaryPages(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		x := newCurated(t, db)
		status, page := x.writer.get("/glossary")
		if status != 200 || !strings.Contains(page, "Customer email") || !strings.Contains(page, `id="term-create"`) {
			t.Fatalf("glossary: %d\n%s", status, page)
		}
		status, _, page = x.writer.post("/glossary", url.Values{"name": {""}, "definition": {"typed"}})
		if status != 400 || !strings.Contains(page, "name is empty") || !strings.Contains(page, ">typed</textarea>") {
			t.Fatalf("term without a name: %d\n%s", status, page)
		}
		status, _, _ = x.writer.post("/glossary", url.Values{"name": {"customer EMAIL"}})
		if status != 409 {
			t.Fatalf("a term named like another: %d", status)
		}
		status, loc, _ := x.writer.post("/glossary", url.Values{"name": {"Churn"}, "definition": {"Customers who **left**.\n\n<script>alert(1)</script>"},
			"owners": {"team-crm, team-growth"}, "related": {x.term.ID.String()}})
		if status != http.StatusSeeOther || !strings.Contains(loc, "flash=term-created") {
			t.Fatalf("create a term: %d %q", status, loc)
		}
		termPath := strings.SplitN(loc, "?", 2)[0]
		_, page = x.nob.get(termPath)
		for _, want := range []string{"Churn", "Customers who <strong>left</strong>.", "team-growth", `href="/glossary/` + x.term.ID.String() + `">Customer email`} {
			if !strings.Contains(page, want) {
				t.Fatalf("term page lacks %q:\n%s", want, page)
			}
		}
		if strings.Contains(page, "<script>alert") {
			t.Fatal("raw HTML in a definition was rendered")
		}
		id, err := uuid.Parse(strings.TrimPrefix(termPath, "/glossary/"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.cat.UpdateTerm(ctx, id, catalog.AnyVersion, catalog.TermInput{Name: "Churn", Definition: "Customers who left in the last 90 days."}); err != nil {
			t.Fatal(err)
		}
		status, _, page = x.writer.post(termPath, url.Values{"version": {"1"}, "name": {"Churn"}, "definition": {"My definition"}})
		if status != http.StatusConflict || !strings.Contains(page, "changed since you loaded the page") ||
			!strings.Contains(page, `<pre id="edit-current">Customers who left in the last 90 days.</pre>`) || !strings.Contains(page, ">My definition</textarea>") {
			t.Fatalf("stale term edit: %d\n%s", status, page)
		}
		status, loc, _ = x.writer.post(termPath, url.Values{"version": {"2"}, "name": {"Churn"}, "definition": {"My definition"}})
		if status != http.StatusSeeOther || !strings.Contains(loc, "flash=term-saved") {
			t.Fatalf("term edit: %d %q", status, loc)
		}
		if _, page = x.nob.get(termPath); !strings.Contains(page, "<p>My definition</p>") {
			t.Fatalf("the edit is not on the page:\n%s", page)
		}
		for _, tc := range []struct {
			b      *browser
			form   url.Values
			status int
		}{
			{x.reader, url.Values{"version": {"3"}, "name": {"Churn"}}, 403},
			{x.writer, url.Values{"version": {"3"}, "name": {"Churn"}, "csrf": {""}}, 403},
			{x.writer, url.Values{"version": {"3"}, "name": {"Churn"}, "related": {"nope"}}, 400},
		} {
			if status, _, body := tc.b.post(termPath, tc.form); status != tc.status {
				t.Errorf("POST %s %v: %d, want %d\n%s", termPath, tc.form, status, tc.status, body)
			}
		}
		for path, want := range map[string]int{"/glossary/nope": 400, "/glossary/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70": 404} {
			if status, _ := x.nob.get(path); status != want {
				t.Errorf("GET %s: %d, want %d", path, status, want)
			}
		}
		if _, page := x.nob.get("/"); !strings.Contains(page, `href="/glossary">Glossary</a>`) {
			t.Error("the navigation does not link the glossary")
		}
	})
}

// TestMarkdownOnPages: descriptions are Markdown rendered safely on every page that shows them.
func TestMarkdownOnPages(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		x := newCurated(t, db)
		evil := "# Title\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(2)> [ok](https://example.com/a)"
		if _, err := x.cat.Update(ctx, x.customers.ID, catalog.AnyVersion, catalog.UpdateInput{Description: &evil}); err != nil {
			t.Fatal(err)
		}
		if _, err := x.cat.SetColumnDescription(ctx, x.customers.ID, catalog.AnyVersion, x.email.ID, evil); err != nil {
			t.Fatal(err)
		}
		if _, err := x.cat.UpdateTerm(ctx, x.term.ID, catalog.AnyVersion, catalog.TermInput{Name: x.term.Name, Definition: evil}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/assets/" + x.customers.ID.String(), "/glossary/" + x.term.ID.String(), "/glossary"} {
			_, page := x.nob.get(path)
			if strings.Contains(page, "<script>alert") || strings.Contains(page, "javascript:") || strings.Contains(page, "onerror") {
				t.Errorf("%s renders the description unsafely:\n%s", path, page)
			}
			if !strings.Contains(page, `<h1>Title</h1>`) || !strings.Contains(page, `<a href="https://example.com/a" rel="nofollow noopener">ok</a>`) {
				t.Errorf("%s does not render the Markdown:\n%s", path, page)
			}
		}
	})
}
