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
	"path/filepath"
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

	var tokOut strings.Builder
	if err := Run(ctx, []string{"token", "create", "--data-dir", dir, "--name", "carol", "--scopes", "write"}, &tokOut, &strings.Builder{}, nil); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(tokOut.String())
	logs := newSignalWriter("serving")
	addr, done := startServe(t, ctx, logs, "--data-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "text",
		"--scan-interval", "0", "--cleanup-interval", "0", "--tables-sync-interval", "0")
	base := "http://" + addr
	t.Cleanup(func() {
		stop()
		<-done
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// The API, as a lineage producer and another person would use it.
	api := func(method, path string, body any, header ...string) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			must(err)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, base+path, rd)
		must(err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		must(err)
		return res.StatusCode, []byte(readAll(t, res))
	}
	var event any
	must(json.Unmarshal(customerEmailsRun(time.Now()), &event))
	if code, body := api("POST", "/api/v1/lineage", event); code/100 != 2 {
		t.Fatalf("post the OpenLineage event: %d %s", code, body)
	}
	const ns = "postgres://shop:5432"
	type asset struct {
		ID      uuid.UUID `json:"id"`
		Version int64     `json:"version"`
	}
	resolve := func(name string) asset {
		t.Helper()
		code, body := api("GET", "/api/v1/resolve?namespace="+url.QueryEscape(ns)+"&name="+url.QueryEscape(name), nil)
		var res struct{ Asset asset }
		if code != 200 || json.Unmarshal(body, &res) != nil {
			t.Fatalf("resolve %s: %d %s", name, code, body)
		}
		return res.Asset
	}
	current := func(id uuid.UUID) asset {
		t.Helper()
		code, body := api("GET", "/api/v1/assets/"+id.String(), nil)
		var a asset
		if code != 200 || json.Unmarshal(body, &a) != nil {
			t.Fatalf("get %s: %d %s", id, code, body)
		}
		return a
	}
	// The event's schema facets made the columns (lineage ingest records them).
	customers, emails := resolve("shop.customers"), resolve("mart.customer_emails")

	must(os.MkdirAll(screenshotDir, 0o755))
	actx, cancelA := chromiumAllocator(ctx, t, bin)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	bctx, cancelT := context.WithTimeout(bctx, 3*time.Minute)
	defer cancelT()
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		must(err)
		return s
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: PNG
		must(err)
		must(os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644))
	}
	// submit clicks a button that submits a form and waits for the page it leads to.
	submit := func(sel string) {
		t.Helper()
		_, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel))))
		must(err)
	}
	open := func(id uuid.UUID, visible string) {
		t.Helper()
		must(chromedp.Do(bctx, chromedp.Navigate(base+"/assets/"+id.String()), chromedp.WaitVisible(chromedp.CSS(visible))))
	}
	has := func(sel string, wants ...string) {
		t.Helper()
		got := text(sel)
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Fatalf("%s lacks %q: %q", sel, w, got)
			}
		}
	}

	// Sign in with the write token.
	must(chromedp.Do(bctx, chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	submit("#signin-submit")
	has("#who", "carol")

	// Tag the upstream column as an email address.
	const email, emailHash = `tr[data-column="email"]`, `tr[data-column="email_hash"]`
	open(customers.ID, email)
	must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS(email+` input[name="tag"]`), "pii.email")))
	submit(email + " form.add-tag button")
	has(".flash", "Tag added")
	has(email, "pii.email", "by web:carol")
	shot("curation-tagged")

	// Downstream, the column derived from it has the tag suggested; accept it.
	open(emails.ID, "#suggestions")
	has("#suggestions", "pii.email on column email_hash, from shop.customers.email")
	shot("curation-suggestion")
	submit(`#suggestions li[data-column="email_hash"] button.accept`)
	has(".flash", "Suggestion accepted")
	has(emailHash, "pii.email", "propagated from shop.customers.email, accepted by web:carol")
	if gone, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("suggestions") === null`)); err != nil || !gone {
		t.Fatalf("the accepted suggestion is still offered (%v)", err)
	}

	// Searching for the classification finds both tables.
	must(chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("q")), chromedp.SendKeys(chromedp.ID("q"), "pii")))
	submit("form.search button")
	if results := text("#results"); !strings.Contains(results, "shop.customers") || !strings.Contains(results, "mart.customer_emails") {
		t.Fatalf("searching for pii does not find both tables: %q", results)
	}
	shot("curation-search")

	// Rename the upstream table: its column's tag and the accepted tag downstream stay, and the
	// provenance names the new name.
	v := current(customers.ID).Version
	if code, body := api("POST", "/api/v1/assets/"+customers.ID.String()+"/rename", map[string]string{"name": "shop.clients"}, "If-Match", fmt.Sprintf(`"%d"`, v)); code != 200 {
		t.Fatalf("rename: %d %s", code, body)
	}
	open(customers.ID, email)
	has("h1", "shop.clients")
	has(email, "pii.email", "by web:carol")
	open(emails.ID, emailHash)
	has(emailHash, "pii.email", "propagated from shop.clients.email")
	shot("curation-renamed")

	// A glossary term, created on the glossary page and linked to the column.
	must(chromedp.Do(bctx, chromedp.Navigate(base+"/glossary"), chromedp.WaitVisible(chromedp.ID("term-name")),
		chromedp.SendKeys(chromedp.ID("term-name"), "Customer email"), chromedp.SendKeys(chromedp.ID("term-definition"), "An address we may **write** to.")))
	submit("#term-create-submit")
	has("#definition", "An address we may write to.")
	termURL, err := chromedp.Run(bctx, chromedp.Location())
	must(err)
	termID := strings.SplitN(strings.TrimPrefix(termURL, base+"/glossary/"), "?", 2)[0]
	open(customers.ID, email)
	must(chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS(email+` select[name="term"]`), termID)))
	submit(email + " form.add-term button")
	has(email, "Customer email")
	must(chromedp.Do(bctx, chromedp.Navigate(termURL), chromedp.WaitVisible(chromedp.ID("term-links"))))
	has("#term-links", "shop.clients", "email")
	shot("glossary-term")

	// A stale edit: the page is loaded, someone changes the description through the API, then
	// the page's form is sent. It is refused, shows the current value and keeps the typed one.
	open(emails.ID, "#description-edit")
	cur := current(emails.ID)
	if code, body := api("PATCH", "/api/v1/assets/"+emails.ID.String(), map[string]string{"description": "Changed through the API."},
		"If-Match", fmt.Sprintf(`"%d"`, cur.Version)); code != 200 {
		t.Fatalf("patch: %d %s", code, body)
	}
	must(chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#description-edit summary")), chromedp.WaitVisible(chromedp.ID("description-text")),
		chromedp.SendKeys(chromedp.ID("description-text"), "My edit from the page.")))
	res, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.ID("description-save")))
	must(err)
	if res.Status != http.StatusConflict {
		t.Fatalf("the stale edit answered %d, want 409", res.Status)
	}
	has("#edit-error", "changed since you loaded the page", "nothing was saved")
	if got := text("#edit-current"); got != "Changed through the API." {
		t.Fatalf("the refusal shows %q as the current description", got)
	}
	if typed, err := chromedp.Run(bctx, chromedp.Value(chromedp.ID("description-text"))); err != nil || typed != "My edit from the page." {
		t.Fatalf("the typed description was lost: %q (%v)", typed, err)
	}
	shot("curation-stale")
	if got := current(emails.ID); got.Version != cur.Version+1 {
		t.Fatalf("the stale edit changed the asset: version %d, want %d", got.Version, cur.Version+1)
	}

	// Phone width: the curated page still fits.
	must(chromedp.Do(bctx, chromedp.EmulateViewport(390, 844)))
	open(emails.ID, emailHash)
	wide, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth + 1`))
	must(err)
	shot("curation-phone")
	if !wide {
		culprits, _ := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body, body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`))
		t.Fatalf("the curated asset page scrolls sideways at phone width: %v", culprits)
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
