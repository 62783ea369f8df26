package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// orphanProposal writes an open orphan_files proposal of n files (sizes 1000+i) on a new asset,
// as the bot leaves it, and returns its ID.
func orphanProposal(t *testing.T, db *storage.DB, cat *catalog.Catalog, name string, n int, state proposal.State) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	a, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "iceberg://lake", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var bytes int64
	for i := range n {
		bytes += int64(1000 + i)
	}
	ev := fmt.Sprintf(`{"summary":"%d files confirmed unreferenced by two scans","files":%d,"bytes":%d,"age_threshold":"72h0m0s","location":"file:///lake/%s"}`, n, n, bytes, name)
	p, err := db.Client.Proposal.Create().SetKind(proposal.KindOrphanFiles).SetAssetID(a.Asset.ID).SetState(state).SetEvidence(ev).
		SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c := db.Client.ProposalFile.Create().SetProposalID(p.ID).SetPath(fmt.Sprintf("file:///lake/%s/data/orphan-%03d.parquet", name, i)).
			SetSize(int64(1000 + i)).SetModifiedAt(now.Add(-100 * time.Hour))
		if state == proposal.StateExecuted {
			c.SetState(proposalfile.StateDeleted).SetDetail("deleted").SetDoneAt(now.Add(-time.Minute))
		}
		if err := c.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return p.ID
}

// TestProposalFiles: the proposal page lists the exact files 100 at a time, downloads them all,
// and an executed proposal shows what happened to each file and when.
func TestProposalFiles(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		srv, cat := newUI(t, db)
		id := orphanProposal(t, db, cat, "db.events", 150, proposal.StateOpen)
		first := readBody(mustGet(t, srv.Client(), srv.URL+"/proposals/"+id.String()))
		for _, want := range []string{"150 files, 157.4 KiB", "orphan-000.parquet", "orphan-099.parquet", `id="files-next"`, "with an admin token to decide"} {
			if !strings.Contains(first, want) {
				t.Fatalf("first page lacks %q", want)
			}
		}
		if strings.Contains(first, "orphan-100.parquet") {
			t.Fatal("the first page lists more than 100 files")
		}
		next := regexp.MustCompile(`href="(/proposals/[^"]+\?after=[^"#]+)`).FindStringSubmatch(first)
		if next == nil {
			t.Fatal("no link to the next page")
		}
		second := readBody(mustGet(t, srv.Client(), srv.URL+next[1]))
		if !strings.Contains(second, "orphan-100.parquet") || !strings.Contains(second, "orphan-149.parquet") || strings.Contains(second, "orphan-099.parquet") || strings.Contains(second, `id="files-next"`) {
			t.Fatal("the second page is not the other 50 files")
		}
		for format, want := range map[string]string{"csv": "file:///lake/db.events/data/orphan-149.parquet,1149,", "json": `"path":"file:///lake/db.events/data/orphan-149.parquet","size":1149`} {
			r := mustGet(t, srv.Client(), srv.URL+"/proposals/"+id.String()+"/files?format="+format)
			body := readBody(r)
			if r.StatusCode != 200 || !strings.Contains(body, want) || strings.Count(body, "orphan-") != 150 || !strings.Contains(r.Header.Get("Content-Disposition"), "attachment") {
				t.Fatalf("%s download (%d): %.300s", format, r.StatusCode, body)
			}
		}
		if r := mustGet(t, srv.Client(), srv.URL+"/proposals/"+id.String()+"/files?format=xml"); r.StatusCode != 400 {
			t.Fatalf("format=xml: %d", r.StatusCode)
		}
		done := orphanProposal(t, db, cat, "db.old", 3, proposal.StateExecuted)
		journal := readBody(mustGet(t, srv.Client(), srv.URL+"/proposals/"+done.String()))
		if !strings.Contains(journal, "Files and what happened to each") || strings.Count(journal, `class="status deleted"`) != 3 || strings.Contains(journal, "Review and approve") {
			t.Fatalf("executed proposal page:\n%s", journal)
		}
		// The confirm step is for admins only.
		if r := mustGet(t, srv.Client(), srv.URL+"/proposals/"+id.String()+"/approve"); r.StatusCode != http.StatusForbidden {
			t.Fatalf("anonymous confirm step: %d", r.StatusCode)
		}
	})
}

// TestApproveWithConfirmation: in a real browser, approving takes a confirm step that names the
// count and bytes and needs the count typed; the approved proposal shows its stop window and a
// cancel button that takes the approval back.
func TestApproveWithConfirmation(t *testing.T) {
	bin := chromium(t)
	db := storagetest.Open(t, storagetest.Backends[0])
	srv, cat := newUIWith(t, db, func(c *web.Config) {
		c.Cleanup = mustCleanup(t, db, c.Catalog, c.Tables, cleanup.WithStopWindow(5*time.Minute))
	})
	id := orphanProposal(t, db, cat, "db.events", 3, proposal.StateOpen)
	token, _, err := auth.NewStore(db.Client, nil).Create(context.Background(), "alice", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	must, text, click := browserOps(t, bctx)
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	click("#signin-submit")
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/proposals/"+id.String()), chromedp.WaitVisible(chromedp.ID("files"))))
	shot(t, bctx, "proposal-open")
	if files := text("#files"); !strings.Contains(files, "orphan-002.parquet") || !strings.Contains(files, "1000 B") {
		t.Fatalf("file list: %q", files)
	}
	click("#approve")
	if what := text("#confirm-summary"); !strings.Contains(what, "3 files, 2.9 KiB") || !strings.Contains(what, "3003 bytes") {
		t.Fatalf("confirm step: %q", what)
	}
	shot(t, bctx, "proposal-confirm")
	must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("confirm-files"), "2")))
	click("#confirm-approve")
	if msg := text("#confirm-error"); !strings.Contains(msg, "3 files") {
		t.Fatalf("a wrong count: %q", msg)
	}
	if p, _ := db.Client.Proposal.Get(context.Background(), id); p.State != proposal.StateOpen {
		t.Fatalf("a wrong count approved it: %s", p.State)
	}
	must(chromedp.Do(bctx, chromedp.Clear(chromedp.ID("confirm-files")), chromedp.SendKeys(chromedp.ID("confirm-files"), "3")))
	click("#confirm-approve")
	if state := text("#proposal-state"); state != "approved" {
		t.Fatalf("after confirming: %q", state)
	}
	if stop := text("#stop-window"); !strings.Contains(stop, "runs no earlier than") || !strings.Contains(stop, "cancel") {
		t.Fatalf("stop window: %q", stop)
	}
	shot(t, bctx, "proposal-approved")
	click("#cancel")
	if state := text("#proposal-state"); state != "cancelled" {
		t.Fatalf("after cancelling: %q", state)
	}
	if reason := text(".reason"); !strings.Contains(reason, "cancelled by web:alice") {
		t.Fatalf("cancel reason: %q", reason)
	}
	// A forged approval (no CSRF token) is refused even with a session.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	r, err := c.PostForm(srv.URL+"/proposals/"+id.String()+"/approve", url.Values{"confirm_files": {"3"}, "confirm_bytes": {"3003"}})
	must(err)
	if r.StatusCode != http.StatusForbidden {
		t.Fatalf("forged approval: %d", r.StatusCode)
	}
}

// chromium finds the browser: skipped without one unless CI is set, where it must run.
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("TIDEMARK_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found: apt-get install -y chromium (or set TIDEMARK_CHROMIUM)")
	}
	t.Skip("no Chromium installed (apt-get install -y chromium); the browser tests need one")
	return ""
}

// browserOps are the steps the browser tests repeat: fail on an error, read an element's text,
// click and wait for the next page to load.
func browserOps(t *testing.T, bctx context.Context) (must func(error), text func(string) string, click func(string)) {
	must = func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	text = func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		must(err)
		return s
	}
	click = func(sel string) {
		t.Helper()
		_, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel))))
		must(err)
	}
	return must, text, click
}

// chromiumContext gives one test a tab of its own in a fresh browser context (its own cookies,
// storage and cache, as a new profile would have) of the package's one headless Chromium.
// Starting a Chromium per test took 1.7 to 3.7 s on a loaded 2-core machine, a tab in a new
// browser context 0.4 to 0.9 s; the browser context holds nothing of the tests before it.
func chromiumContext(t *testing.T, bin string) context.Context {
	t.Helper()
	root, err := sharedChromium(bin)
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	tctx, cancelTab := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	bctx, cancelT := context.WithTimeout(tctx, 2*time.Minute)
	t.Cleanup(func() { cancelT(); cancelTab() })
	return bctx
}

// chromiumProc is the package's Chromium, started by the first browser test and stopped by
// TestMain. Its temporary files (the singleton socket Chromium leaves behind when it is killed)
// go to its profile directory too.
var chromiumProc struct {
	sync.Mutex
	dir    string
	ctx    context.Context
	cancel func()
}

func sharedChromium(bin string) (context.Context, error) {
	chromiumProc.Lock()
	defer chromiumProc.Unlock()
	if chromiumProc.ctx != nil {
		if chromiumProc.ctx.Err() == nil {
			return chromiumProc.ctx, nil
		}
		// The browser is gone (a test crashed it): the next test gets a new one.
		chromiumProc.cancel()
		os.RemoveAll(chromiumProc.dir)
	}
	dir, err := os.MkdirTemp("", "tidemark-web-chromium-")
	if err != nil {
		return nil, err
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Env("TMPDIR="+dir), chromedp.WindowSize(1280, 900))
	root, cancelB := chromedp.NewContext(actx)
	if err := chromedp.Do(root); err != nil { // starts the browser
		cancelB()
		cancelA()
		os.RemoveAll(dir)
		return nil, err
	}
	chromiumProc.dir, chromiumProc.ctx = dir, root
	chromiumProc.cancel = func() { cancelB(); cancelA() }
	return root, nil
}

// stopChromium stops the package's Chromium, if a test started it, and removes its files.
func stopChromium() {
	chromiumProc.Lock()
	defer chromiumProc.Unlock()
	if chromiumProc.ctx == nil {
		return
	}
	chromiumProc.cancel()
	os.RemoveAll(chromiumProc.dir)
	chromiumProc.ctx = nil
}

// TestMain stops the package's Chromium once the tests have run.
func TestMain(m *testing.M) {
	code := m.Run()
	stopChromium()
	os.Exit(code)
}

// shot saves a screenshot under testdata/screenshots (ignored by git) for a person to look at.
func shot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
