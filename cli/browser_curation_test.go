package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// TestBrowserCuration drives curation through the real server in headless Chromium: a person
// tags an upstream column as personal data, sees the tag suggested on the column derived from
// it downstream (column lineage from a real OpenLineage event) and accepts it; both tags survive
// a rename of the upstream table; a glossary term is created and linked; and an edit made on a
// page that went stale meanwhile is refused with the current value shown.
func TestBrowserCuration(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	base, token := startCurationServer(t, ctx, stop, dir)
	s := &browserSession{t: t, base: base, token: token}
	customers, emails := s.postCustomerEmails()

	s.must(os.MkdirAll(screenshotDir, 0o755))
	bctx, closeBrowser := openBrowser(ctx, t, bin)
	defer closeBrowser()
	s.bctx = bctx

	s.signInAsCarol()
	s.tagAndAcceptSuggestion(customers, emails)
	s.searchFindsBothTables()
	s.renameKeepsTags(customers, emails)
	s.linkGlossaryTerm(customers)
	s.refuseStaleEdit(emails)
	s.curatedFitsPhone(emails)
}

// The rows of the upstream email column and of the downstream column derived from it.
const emailRow, emailHashRow = `tr[data-column="email"]`, `tr[data-column="email_hash"]`

// curatedAsset is the part of an asset the curation test reads through the API.
type curatedAsset struct {
	ID      uuid.UUID `json:"id"`
	Version int64     `json:"version"`
}

// startCurationServer makes a write token for carol in dir and serves dir until ctx ends (stop
// ends it at cleanup); it returns the server's base URL and the token.
func startCurationServer(t *testing.T, ctx context.Context, stop context.CancelFunc, dir string) (base, token string) {
	t.Helper()
	var tokOut strings.Builder
	if err := Run(ctx, []string{"token", "create", "--data-dir", dir, "--name", "carol", "--scopes", "write"}, &tokOut, &strings.Builder{}, nil); err != nil {
		t.Fatal(err)
	}
	token = strings.TrimSpace(tokOut.String())
	logs := newSignalWriter("serving")
	addr, done := startServe(t, ctx, logs, "--data-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "text",
		"--scan-interval", "0", "--cleanup-interval", "0", "--tables-sync-interval", "0")
	base = "http://" + addr
	t.Cleanup(func() {
		stop()
		<-done
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return base, token
}

// api calls the API with the token, as a lineage producer and another person would use it; header
// holds extra header names and values in turn.
func (s *browserSession) api(method, path string, body any, header ...string) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		s.must(err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	s.must(err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	s.must(err)
	return res.StatusCode, []byte(readAll(s.t, res))
}

// resolve finds the asset named name in the shop's namespace.
func (s *browserSession) resolve(name string) curatedAsset {
	s.t.Helper()
	const ns = "postgres://shop:5432"
	code, body := s.api("GET", "/api/v1/resolve?namespace="+url.QueryEscape(ns)+"&name="+url.QueryEscape(name), nil)
	var res struct{ Asset curatedAsset }
	if code != 200 || json.Unmarshal(body, &res) != nil {
		s.t.Fatalf("resolve %s: %d %s", name, code, body)
	}
	return res.Asset
}

// current reads the asset id as it is now.
func (s *browserSession) current(id uuid.UUID) curatedAsset {
	s.t.Helper()
	code, body := s.api("GET", "/api/v1/assets/"+id.String(), nil)
	var a curatedAsset
	if code != 200 || json.Unmarshal(body, &a) != nil {
		s.t.Fatalf("get %s: %d %s", id, code, body)
	}
	return a
}

// submit clicks a button that submits a form and waits for the page it leads to.
func (s *browserSession) submit(sel string) {
	s.t.Helper()
	_, err := chromedp.Run(s.bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel))))
	s.must(err)
}

// open opens the asset id's page and waits until the element visible selects is shown.
func (s *browserSession) open(id uuid.UUID, visible string) {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/assets/"+id.String()), chromedp.WaitVisible(chromedp.CSS(visible))))
}

// has fails the test unless the text of the element sel selects contains every one of wants.
func (s *browserSession) has(sel string, wants ...string) {
	s.t.Helper()
	got := s.text(sel)
	for _, w := range wants {
		if !strings.Contains(got, w) {
			s.t.Fatalf("%s lacks %q: %q", sel, w, got)
		}
	}
}

// postCustomerEmails posts the OpenLineage event of customerEmailsRun and returns the two tables
// it names (the event's schema facets made the columns: lineage ingest records them).
func (s *browserSession) postCustomerEmails() (customers, emails curatedAsset) {
	s.t.Helper()
	var event any
	s.must(json.Unmarshal(customerEmailsRun(time.Now()), &event))
	if code, body := s.api("POST", "/api/v1/lineage", event); code/100 != 2 {
		s.t.Fatalf("post the OpenLineage event: %d %s", code, body)
	}
	return s.resolve("shop.customers"), s.resolve("mart.customer_emails")
}

// signInAsCarol signs in with the write token.
func (s *browserSession) signInAsCarol() {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), s.token)))
	s.submit("#signin-submit")
	s.has("#who", "carol")
}

// tagAndAcceptSuggestion tags the upstream column as an email address; downstream, the column
// derived from it has the tag suggested, and it is accepted.
func (s *browserSession) tagAndAcceptSuggestion(customers, emails curatedAsset) {
	s.t.Helper()
	s.open(customers.ID, emailRow)
	s.must(chromedp.Do(s.bctx, chromedp.SendKeys(chromedp.CSS(emailRow+` input[name="tag"]`), "pii.email")))
	s.submit(emailRow + " form.add-tag button")
	s.has(".flash", "Tag added")
	s.has(emailRow, "pii.email", "by web:carol")
	s.shot("curation-tagged")

	s.open(emails.ID, "#suggestions")
	s.has("#suggestions", "pii.email on column email_hash, from shop.customers.email")
	s.shot("curation-suggestion")
	s.submit(`#suggestions li[data-column="email_hash"] button.accept`)
	s.has(".flash", "Suggestion accepted")
	s.has(emailHashRow, "pii.email", "propagated from shop.customers.email, accepted by web:carol")
	if gone, err := chromedp.Run(s.bctx, chromedp.Evaluate[bool](`document.getElementById("suggestions") === null`)); err != nil || !gone {
		s.t.Fatalf("the accepted suggestion is still offered (%v)", err)
	}
}

// searchFindsBothTables checks searching for the classification finds both tables.
func (s *browserSession) searchFindsBothTables() {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.ID("q")), chromedp.SendKeys(chromedp.ID("q"), "pii")))
	s.submit("form.search button")
	if results := s.text("#results"); !strings.Contains(results, "shop.customers") || !strings.Contains(results, "mart.customer_emails") {
		s.t.Fatalf("searching for pii does not find both tables: %q", results)
	}
	s.shot("curation-search")
}

// renameKeepsTags renames the upstream table: its column's tag and the accepted tag downstream
// stay, and the provenance names the new name.
func (s *browserSession) renameKeepsTags(customers, emails curatedAsset) {
	s.t.Helper()
	v := s.current(customers.ID).Version
	if code, body := s.api("POST", "/api/v1/assets/"+customers.ID.String()+"/rename", map[string]string{"name": "shop.clients"}, "If-Match", fmt.Sprintf(`"%d"`, v)); code != 200 {
		s.t.Fatalf("rename: %d %s", code, body)
	}
	s.open(customers.ID, emailRow)
	s.has("h1", "shop.clients")
	s.has(emailRow, "pii.email", "by web:carol")
	s.open(emails.ID, emailHashRow)
	s.has(emailHashRow, "pii.email", "propagated from shop.clients.email")
	s.shot("curation-renamed")
}

// linkGlossaryTerm creates a glossary term on the glossary page and links it to the column.
func (s *browserSession) linkGlossaryTerm(customers curatedAsset) {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/glossary"), chromedp.WaitVisible(chromedp.ID("term-name")),
		chromedp.SendKeys(chromedp.ID("term-name"), "Customer email"), chromedp.SendKeys(chromedp.ID("term-definition"), "An address we may **write** to.")))
	s.submit("#term-create-submit")
	s.has("#definition", "An address we may write to.")
	termURL, err := chromedp.Run(s.bctx, chromedp.Location())
	s.must(err)
	termID := strings.SplitN(strings.TrimPrefix(termURL, s.base+"/glossary/"), "?", 2)[0]
	s.open(customers.ID, emailRow)
	s.must(chromedp.Do(s.bctx, chromedp.SetValue(chromedp.CSS(emailRow+` select[name="term"]`), termID)))
	s.submit(emailRow + " form.add-term button")
	s.has(emailRow, "Customer email")
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(termURL), chromedp.WaitVisible(chromedp.ID("term-links"))))
	s.has("#term-links", "shop.clients", "email")
	s.shot("glossary-term")
}

// refuseStaleEdit makes a stale edit: the page is loaded, someone changes the description
// through the API, then the page's form is sent. It is refused, shows the current value and
// keeps the typed one.
func (s *browserSession) refuseStaleEdit(emails curatedAsset) {
	s.t.Helper()
	s.open(emails.ID, "#description-edit")
	cur := s.current(emails.ID)
	if code, body := s.api("PATCH", "/api/v1/assets/"+emails.ID.String(), map[string]string{"description": "Changed through the API."},
		"If-Match", fmt.Sprintf(`"%d"`, cur.Version)); code != 200 {
		s.t.Fatalf("patch: %d %s", code, body)
	}
	s.must(chromedp.Do(s.bctx, chromedp.Click(chromedp.CSS("#description-edit summary")), chromedp.WaitVisible(chromedp.ID("description-text")),
		chromedp.SendKeys(chromedp.ID("description-text"), "My edit from the page.")))
	res, err := chromedp.RunResponse(s.bctx, chromedp.Click(chromedp.ID("description-save")))
	s.must(err)
	if res.Status != http.StatusConflict {
		s.t.Fatalf("the stale edit answered %d, want 409", res.Status)
	}
	s.has("#edit-error", "changed since you loaded the page", "nothing was saved")
	if got := s.text("#edit-current"); got != "Changed through the API." {
		s.t.Fatalf("the refusal shows %q as the current description", got)
	}
	if typed, err := chromedp.Run(s.bctx, chromedp.Value(chromedp.ID("description-text"))); err != nil || typed != "My edit from the page." {
		s.t.Fatalf("the typed description was lost: %q (%v)", typed, err)
	}
	s.shot("curation-stale")
	if got := s.current(emails.ID); got.Version != cur.Version+1 {
		s.t.Fatalf("the stale edit changed the asset: version %d, want %d", got.Version, cur.Version+1)
	}
}

// curatedFitsPhone checks the curated page still fits at phone width.
func (s *browserSession) curatedFitsPhone(emails curatedAsset) {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.EmulateViewport(390, 844)))
	s.open(emails.ID, emailHashRow)
	wide, err := chromedp.Run(s.bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth + 1`))
	s.must(err)
	s.shot("curation-phone")
	if !wide {
		culprits, _ := chromedp.Run(s.bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body, body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`))
		s.t.Fatalf("the curated asset page scrolls sideways at phone width: %v", culprits)
	}
}

// customerEmailsRun is an OpenLineage run of a job reading shop.customers and writing
// mart.customer_emails, with both schemas and column lineage: email_hash is derived (masked)
// from customers.email.
func customerEmailsRun(at time.Time) []byte {
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
