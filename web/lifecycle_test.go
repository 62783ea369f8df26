package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestLifecycleForms: a write session renames, deprecates, deletes (only with the name typed)
// and restores an asset from its page; each shows on the page, and refusals change nothing.
func TestLifecycleForms(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		x := newCurated(t, db)
		id := x.customers.ID
		path := "/assets/" + id.String()
		const ns = "postgres://shop:5432"
		status := func() catalog.Asset {
			t.Helper()
			a, err := x.cat.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		for _, tc := range []struct {
			name, action string
			form         url.Values
			wantStatus   int
			wantPage     []string // on the page the request leads to
			wantState    catalog.Status
			wantName     string
		}{
			{"RenameNeedsAName", "/rename", url.Values{"name": {" "}}, 400, []string{"type the new name"}, catalog.StatusActive, ns + ".shop.customers"},
			{"RenameToATakenName", "/rename", url.Values{"namespace": {ns}, "name": {"mart.customer_emails"}}, 409, []string{"is held by asset", `value="mart.customer_emails"`}, catalog.StatusActive, ns + ".shop.customers"},
			{"Rename", "/rename", url.Values{"namespace": {ns}, "name": {"shop.clients"}}, 303, []string{"Renamed: the former name", "<strong>shop.clients</strong>", `shop.customers <span class="ns">postgres://shop:5432</span> <span class="former">former</span>`}, catalog.StatusActive, ns + ".shop.clients"},
			{"Deprecate", "/status", url.Values{"status": {"deprecated"}}, 303, []string{`id="status-banner"`, "Deprecated.", `id="undeprecate"`}, catalog.StatusDeprecated, ns + ".shop.clients"},
			{"BadStatus", "/status", url.Values{"status": {"deleted"}}, 400, []string{"other than active or deprecated"}, catalog.StatusDeprecated, ns + ".shop.clients"},
			{"Undeprecate", "/status", url.Values{"status": {"active"}}, 303, []string{"No longer deprecated", `id="deprecate"`}, catalog.StatusActive, ns + ".shop.clients"},
			{"DeleteWithoutTheName", "/delete", url.Values{}, 400, []string{"To delete, type the asset&#39;s name, shop.clients, exactly; nothing was deleted"}, catalog.StatusActive, ns + ".shop.clients"},
			{"DeleteWithAnotherName", "/delete", url.Values{"confirm": {"shop.customers"}}, 400, []string{"nothing was deleted", `value="shop.customers"`}, catalog.StatusActive, ns + ".shop.clients"},
			{"Delete", "/delete", url.Values{"confirm": {"shop.clients"}}, 303, []string{"Deleted from the catalog", "the data itself was not touched", `id="restore"`}, catalog.StatusDeleted, ns + ".shop.clients"},
			{"Restore", "/restore", url.Values{}, 303, []string{"Restored", `id="delete-confirm"`}, catalog.StatusActive, ns + ".shop.clients"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.form.Set("version", x.version(t, id))
				code, loc, body := x.writer.post(path+tc.action, tc.form)
				if code != tc.wantStatus {
					t.Fatalf("POST %s: %d, want %d\n%s", tc.action, code, tc.wantStatus, body)
				}
				if code == http.StatusSeeOther {
					_, body = x.writer.get(loc)
				}
				for _, w := range tc.wantPage {
					if !strings.Contains(body, w) {
						t.Fatalf("the page lacks %q:\n%s", w, body)
					}
				}
				a := status()
				if a.Status != tc.wantState || a.Namespace+"."+a.Name != tc.wantName {
					t.Fatalf("asset is %s %s.%s, want %s %s", a.Status, a.Namespace, a.Name, tc.wantState, tc.wantName)
				}
			})
		}
		// A read-only session sees no such forms and may not post them.
		if _, page := x.reader.get(path); strings.Contains(page, `id="lifecycle-h"`) {
			t.Fatal("a read-only session is offered the rename/delete forms")
		}
		if code, _, _ := x.reader.post(path+"/delete", url.Values{"version": {x.version(t, id)}, "confirm": {"shop.clients"}}); code != http.StatusForbidden {
			t.Fatalf("read-only delete: %d, want 403", code)
		}
		if a := status(); a.Status != catalog.StatusActive {
			t.Fatalf("a read-only delete changed the asset: %s", a.Status)
		}
	})
}

// TestLifecycleInABrowser: in a real browser, two pages loaded at the same version edit
// different columns and both land; a rename shows the former name under "Names over time";
// deleting needs the name typed and then shows the deleted banner.
func TestLifecycleInABrowser(t *testing.T) {
	bin := chromium(t)
	db := storagetest.Open(t, storagetest.Backends[0])
	x := newCurated(t, db)
	token, _, err := auth.NewStore(db.Client, nil).Create(context.Background(), "alice", []auth.Scope{auth.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	text := func(ctx context.Context, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		must(err)
		return s
	}
	click := func(ctx context.Context, sel string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel))))
		must(err)
	}
	must(chromedp.Do(bctx, chromedp.Navigate(x.srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	click(bctx, "#signin-submit")
	assetURL := x.srv.URL + "/assets/" + x.customers.ID.String()
	cols, err := x.cat.Columns(context.Background(), x.customers.ID, false)
	must(err)
	email, id := cols[1], cols[0]

	// Two tabs of one signed-in browser load the page at the same version.
	second, cancel := chromedp.NewContext(bctx)
	defer cancel()
	for _, tab := range []context.Context{bctx, second} {
		must(chromedp.Do(tab, chromedp.Navigate(assetURL), chromedp.WaitVisible(chromedp.ID("asset-columns"))))
	}
	seen := x.version(t, x.customers.ID)
	for _, tab := range []context.Context{bctx, second} {
		if v, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("#description-edit input[name=version]").value`)); err != nil || v != seen {
			t.Fatalf("a tab's forms carry version %q (%v), want %s", v, err, seen)
		}
	}
	editColumn := func(tab context.Context, colID, desc string) {
		t.Helper()
		row := "#col-" + colID
		must(chromedp.Do(tab, chromedp.Click(chromedp.CSS(row+" details.edit summary")), chromedp.WaitVisible(chromedp.ID("coldesc-"+colID)),
			chromedp.SendKeys(chromedp.ID("coldesc-"+colID), desc)))
		click(tab, row+" form.stack button[type=submit]")
	}
	editColumn(bctx, email.ID.String(), "Where we write to the customer.")
	editColumn(second, id.ID.String(), "The customer's key.")
	if flash := text(second, ".flash"); !strings.Contains(flash, "Column description saved") {
		t.Fatalf("the second tab's edit (from version %s): %q", seen, flash)
	}
	for col, want := range map[string]string{email.ID.String(): "Where we write to the customer.", id.ID.String(): "The customer's key."} {
		if got := text(second, "#col-"+col+" .col-description .md"); !strings.Contains(got, want) {
			t.Fatalf("column %s shows %q, want %q", col, got, want)
		}
	}
	shot(t, second, "edits-two-columns")

	// Rename: the old name stays, marked former.
	must(chromedp.Do(bctx, chromedp.Navigate(assetURL), chromedp.WaitVisible(chromedp.ID("lifecycle-h")),
		chromedp.Click(chromedp.CSS("#rename-edit summary")), chromedp.WaitVisible(chromedp.ID("rename-name")),
		chromedp.SendKeys(chromedp.ID("rename-name"), "shop.clients")))
	click(bctx, "#rename-save")
	names := text(bctx, "#names")
	if !strings.Contains(names, "shop.clients") || !strings.Contains(names, "shop.customers") || !strings.Contains(names, "former") {
		t.Fatalf("names over time after the rename: %q", names)
	}
	if h := text(bctx, "h1"); !strings.HasPrefix(h, "shop.clients") {
		t.Fatalf("heading after the rename: %q", h)
	}
	shot(t, bctx, "edits-renamed")

	// Deprecate: a banner says so; un-deprecate takes it away.
	click(bctx, "#deprecate")
	if banner := text(bctx, "#status-banner"); !strings.Contains(banner, "Deprecated.") {
		t.Fatalf("deprecated banner: %q", banner)
	}
	shot(t, bctx, "edits-deprecated")
	click(bctx, "#undeprecate")
	if a, _ := x.cat.Get(context.Background(), x.customers.ID); a.Status != catalog.StatusActive {
		t.Fatalf("after un-deprecating: %s", a.Status)
	}

	// Delete: a wrong name is refused and deletes nothing; the right one deletes the record.
	must(chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#delete-edit summary")), chromedp.WaitVisible(chromedp.ID("delete-confirm")),
		chromedp.SendKeys(chromedp.ID("delete-confirm"), "shop.customers")))
	shot(t, bctx, "edits-delete-confirm")
	click(bctx, "#delete-submit")
	if msg := text(bctx, "#edit-message"); !strings.Contains(msg, "To delete, type the asset's name, shop.clients") {
		t.Fatalf("a wrong name: %q", msg)
	}
	if a, _ := x.cat.Get(context.Background(), x.customers.ID); a.Status != catalog.StatusActive {
		t.Fatalf("a wrong name deleted it: %s", a.Status)
	}
	shot(t, bctx, "edits-delete-refused")
	must(chromedp.Do(bctx, chromedp.Clear(chromedp.ID("delete-confirm")), chromedp.SendKeys(chromedp.ID("delete-confirm"), "shop.clients")))
	click(bctx, "#delete-submit")
	if banner := text(bctx, "#status-banner"); !strings.Contains(banner, "Deleted from the catalog") || !strings.Contains(banner, "data itself was not touched") {
		t.Fatalf("deleted banner: %q", banner)
	}
	if a, _ := x.cat.Get(context.Background(), x.customers.ID); a.Status != catalog.StatusDeleted {
		t.Fatalf("after confirming: %s", a.Status)
	}
	shot(t, bctx, "edits-deleted")

	// The classifications, with their values, on a page of their own.
	must(chromedp.Do(bctx, chromedp.Navigate(x.srv.URL+"/classifications"), chromedp.WaitVisible(chromedp.ID("values-pii"))))
	if vals := text(bctx, "#values-pii"); !strings.Contains(vals, "pii.email") {
		t.Fatalf("pii's values: %q", vals)
	}
	shot(t, bctx, "edits-classifications")
}
