package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// TestQueueSortAndTotals: a sort or order the queue does not know is a 400 page naming the
// values it takes; the totals line sums every proposal the filter matches; the rows follow the
// sort, and the sort links keep the filter.
func TestQueueSortAndTotals(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		srv, cat := newUI(t, db)
		big := orphanProposal(t, db, cat, "db.big", 4, proposal.StateOpen)     // 4 files, 4006 bytes
		small := orphanProposal(t, db, cat, "db.small", 2, proposal.StateOpen) // 2 files, 2001 bytes
		orphanProposal(t, db, cat, "db.done", 3, proposal.StateExecuted)       // not in the open view
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"sort=size", []string{"sort", "opened, files, bytes, cost, oldest"}},
			{"sort=bytes&order=up", []string{"order", "asc or desc"}},
			{"page=0", []string{"page"}},
		} {
			t.Run(tc.query, func(t *testing.T) {
				r := mustGet(t, srv.Client(), srv.URL+"/proposals?"+tc.query)
				body := readBody(r)
				if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
					t.Fatalf("%d %s", r.StatusCode, r.Header.Get("Content-Type"))
				}
				for _, w := range tc.want {
					if !strings.Contains(body, w) {
						t.Fatalf("the error page lacks %q:\n%s", w, body)
					}
				}
			})
		}
		body := readBody(mustGet(t, srv.Client(), srv.URL+"/proposals?state=open&sort=bytes&order=asc"))
		if text, want := totalsText(t, body), "This view: 2 proposals, listing 6 files of 5.9 KiB, whose storage costs under $0.01 a month."; text != want {
			t.Fatalf("totals %q, want %q", text, want)
		}
		if i, j := strings.Index(body, small.String()), strings.Index(body, big.String()); i < 0 || j < 0 || i > j {
			t.Fatalf("sorted by bytes ascending, the small proposal is not first (%d, %d)", i, j)
		}
		if !strings.Contains(body, `href="/proposals?kind=&amp;order=desc&amp;sort=bytes&amp;state=open"`) {
			t.Fatal("the bytes header does not sort the other way within the filter")
		}
		if !strings.Contains(body, "4 files referenced by no snapshot, the oldest unchanged for 4 days 4 hours") {
			t.Fatalf("no brief evidence:\n%s", body)
		}
		if strings.Contains(body, `name="id"`) || strings.Contains(body, "decide-selected") {
			t.Fatal("an anonymous visitor gets the selection form")
		}
		all := readBody(mustGet(t, srv.Client(), srv.URL+"/proposals?state="))
		if text := totalsText(t, all); !strings.Contains(text, "3 proposals, listing 9 files of 8.8 KiB") {
			t.Fatalf("the totals of every state do not include the executed proposal: %q", text)
		}
	})
}

// totalsText is the queue page's totals line without its markup.
func totalsText(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)id="queue-totals">(.*?)</p>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no totals line")
	}
	return regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")
}

// TestDecideSelectionInBrowser: in a real browser an admin selects three proposals; the confirm
// step sums their files and bytes; a wrong typed total decides nothing; the right totals
// approve all three. Forged or anonymous posts are refused.
func TestDecideSelectionInBrowser(t *testing.T) {
	bin := chromium(t)
	db := storagetest.Open(t, storagetest.Backends[0])
	srv, cat := newUIWith(t, db, func(c *web.Config) {
		c.Cleanup = mustCleanup(t, db, c.Catalog, c.Tables, cleanup.WithStopWindow(5*time.Minute))
	})
	ids := []uuid.UUID{
		orphanProposal(t, db, cat, "db.events", 3, proposal.StateOpen), // 3003 bytes
		orphanProposal(t, db, cat, "db.clicks", 2, proposal.StateOpen), // 2001 bytes
		orphanProposal(t, db, cat, "db.orders", 1, proposal.StateOpen), // 1000 bytes
	}
	ctx := context.Background()
	token, _, err := auth.NewStore(db.Client, nil).Create(ctx, "alice", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	states := func() []proposal.State {
		var out []proposal.State
		for _, id := range ids {
			p, err := db.Client.Proposal.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.State)
		}
		return out
	}
	bctx := chromiumContext(t, bin)
	must, text, click := browserOps(t, bctx)
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	click("#signin-submit")
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/proposals"), chromedp.WaitVisible(chromedp.ID("proposals"))))
	if tot := text("#queue-totals"); !strings.Contains(tot, "3 proposals, listing 6 files of 5.9 KiB") {
		t.Fatalf("queue totals: %q", tot)
	}
	for _, id := range ids {
		must(chromedp.Do(bctx, chromedp.Click(chromedp.ID("select-"+id.String()))))
	}
	shot(t, bctx, "queue")
	click("#decide-selected")
	if sum := text("#selection-summary"); !strings.Contains(sum, "6 files") || !strings.Contains(sum, "6004 bytes") {
		t.Fatalf("confirm step: %q", sum)
	}
	shot(t, bctx, "queue-confirm")
	must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("confirm-files"), "6"), chromedp.SendKeys(chromedp.ID("confirm-bytes"), "6000")))
	click("#approve-selected")
	if msg := text("#selection-error"); !strings.Contains(msg, "6004 bytes") || !strings.Contains(msg, "nothing was decided") {
		t.Fatalf("a wrong total: %q", msg)
	}
	for _, st := range states() {
		if st != proposal.StateOpen {
			t.Fatalf("a wrong total decided: %v", states())
		}
	}
	must(chromedp.Do(bctx, chromedp.Clear(chromedp.ID("confirm-bytes")), chromedp.SendKeys(chromedp.ID("confirm-bytes"), "6004"),
		chromedp.SendKeys(chromedp.ID("decide-reason"), "Friday sweep")))
	click("#approve-selected")
	for _, st := range states() {
		if st != proposal.StateApproved {
			t.Fatalf("after the right totals: %v", states())
		}
	}
	if flash := text("body"); !strings.Contains(flash, "Decision recorded for every selected proposal") {
		t.Fatalf("no flash after deciding: %.300s", flash)
	}
	// A post without the form's CSRF token, or without a session, is refused.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	form := url.Values{"id": {ids[0].String()}, "version": {"2"}, "decision": {"reject"}, "reason": {"x"}, "confirm_files": {"3"}, "confirm_bytes": {"3003"}}
	for _, p := range []string{"/proposals/selection", "/proposals/decisions"} {
		r, err := c.PostForm(srv.URL+p, form)
		must(err)
		if r.StatusCode != http.StatusForbidden {
			t.Fatalf("forged post to %s: %d", p, r.StatusCode)
		}
	}
}

// TestDecideSelectionRefusesChanged: a selection in which a proposal changed after the confirm
// step was shown (another admin rejected it) is refused with a 400 page and nothing is decided,
// even with the right totals typed.
func TestDecideSelectionRefusesChanged(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		srv, cat := newUI(t, db)
		a := orphanProposal(t, db, cat, "db.a", 2, proposal.StateOpen)
		b := orphanProposal(t, db, cat, "db.b", 1, proposal.StateOpen)
		secret, _, err := auth.NewStore(db.Client, nil).Create(ctx, "alice", []auth.Scope{auth.ScopeAdmin})
		if err != nil {
			t.Fatal(err)
		}
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		csrf := func(body string) string {
			m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
			if m == nil {
				t.Fatal("no CSRF field")
			}
			return m[1]
		}
		if r, err := c.PostForm(srv.URL+"/signin", url.Values{"csrf": {csrf(readBody(mustGet(t, c, srv.URL+"/signin")))}, "token": {secret}}); err != nil || r.StatusCode != 200 {
			t.Fatalf("sign in: %v", err)
		}
		token := csrf(readBody(mustGet(t, c, srv.URL+"/proposals")))
		r, err := c.PostForm(srv.URL+"/proposals/selection", url.Values{"csrf": {token}, "id": {a.String(), b.String()}})
		if err != nil {
			t.Fatal(err)
		}
		confirm := readBody(r)
		versions := regexp.MustCompile(`name="version" value="(\d+)"`).FindAllStringSubmatch(confirm, -1)
		if r.StatusCode != 200 || len(versions) != 2 || !strings.Contains(confirm, "3 files") || !strings.Contains(confirm, "3001 bytes") {
			t.Fatalf("confirm step (%d): %s", r.StatusCode, confirm)
		}
		// Another admin decides b meanwhile; its version moves on.
		if err := db.Client.Proposal.UpdateOneID(b).SetState(proposal.StateRejected).SetReason("not now").AddVersion(1).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		r, err = c.PostForm(srv.URL+"/proposals/decisions", url.Values{"csrf": {token}, "id": {a.String(), b.String()},
			"version": {versions[0][1], versions[1][1]}, "decision": {"approve"}, "confirm_files": {"3"}, "confirm_bytes": {"3001"}})
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(r); r.StatusCode != http.StatusBadRequest || !strings.Contains(body, "no longer open: nothing was decided") {
			t.Fatalf("a changed selection (%d): %s", r.StatusCode, body)
		}
		if p, _ := db.Client.Proposal.Get(ctx, a); p.State != proposal.StateOpen {
			t.Fatalf("proposal a is %s after a refused selection", p.State)
		}
	})
}

// TestQueuePaging: past a page of proposals the queue links the next page with its filter and
// sort, and the next page holds the rest.
func TestQueuePaging(t *testing.T) {
	db := storagetest.Open(t, storagetest.Backends[0])
	srv, cat := newUI(t, db)
	for i := range 101 {
		orphanProposal(t, db, cat, fmt.Sprintf("db.t%03d", i), 1, proposal.StateOpen)
	}
	first := readBody(mustGet(t, srv.Client(), srv.URL+"/proposals?sort=files&order=asc"))
	next := regexp.MustCompile(`href="([^"]+)" id="queue-next"`).FindStringSubmatch(first)
	if next == nil || !strings.Contains(next[1], "sort=files") || !strings.Contains(next[1], "order=asc") || !strings.Contains(next[1], "state=open") {
		t.Fatalf("next page link: %v", next)
	}
	if n := strings.Count(first, `href="/proposals/0`); n != 100 {
		t.Fatalf("the first page lists %d proposals", n)
	}
	second := readBody(mustGet(t, srv.Client(), srv.URL+strings.ReplaceAll(next[1], "&amp;", "&")))
	if n := strings.Count(second, `href="/proposals/0`); n != 1 || !strings.Contains(second, `id="queue-prev"`) || strings.Contains(second, `id="queue-next"`) {
		t.Fatalf("the second page lists %d proposals", n)
	}
	if !strings.Contains(second, "101 proposals") {
		t.Fatal("the second page's totals are not the whole view's")
	}
}
