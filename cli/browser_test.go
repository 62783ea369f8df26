package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// screenshotDir is where the browser tests save screenshots; git ignores it.
const screenshotDir = "../web/testdata/screenshots"

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

// chromiumAllocator starts headless Chromium for one test. Its temporary files (the singleton
// socket Chromium leaves behind when it is killed) go to the test's own directory too.
func chromiumAllocator(ctx context.Context, t *testing.T, bin string) (context.Context, context.CancelFunc) {
	return chromedp.NewExecAllocator(ctx, chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR="+t.TempDir()), chromedp.WindowSize(1280, 900))
}

// openBrowser starts headless Chromium and opens a tab with 3 minutes to do its work; the
// function it returns cancels the tab, then the browser.
func openBrowser(ctx context.Context, t *testing.T, bin string) (context.Context, func()) {
	actx, cancelA := chromiumAllocator(ctx, t, bin)
	bctx, cancelB := chromedp.NewContext(actx)
	bctx, cancelT := context.WithTimeout(bctx, 3*time.Minute)
	return bctx, func() { cancelT(); cancelB(); cancelA() }
}

// browserSession is a browser test's server, its token, and the Chromium tab it drives.
type browserSession struct {
	t     *testing.T
	bctx  context.Context
	base  string
	token string
}

// must fails the test on an error.
func (s *browserSession) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

// text is the text of the element sel selects.
func (s *browserSession) text(sel string) string {
	s.t.Helper()
	str, err := chromedp.Run(s.bctx, chromedp.Text(chromedp.CSS(sel)))
	s.must(err)
	return str
}

// shot saves a screenshot of the whole page under screenshotDir.
func (s *browserSession) shot(name string) {
	s.t.Helper()
	png, err := chromedp.Run(s.bctx, chromedp.FullScreenshot(100)) // 100: PNG
	s.must(err)
	s.must(os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644))
}

// TestBrowser drives the real server, filled by --demo, in headless Chromium.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	base, token := startDemoServer(t, ctx, stop, dir)
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}

	bctx, closeBrowser := openBrowser(ctx, t, bin)
	defer closeBrowser()
	s := &browserSession{t: t, bctx: bctx, base: base, token: token}

	s.searchFormerName()
	assetURL := s.checkRenamedAsset()
	s.followLineageNode(assetURL)
	href := s.anonymousProposal()
	s.refuseForgedApprovals(href)
	s.approveProposal(href)
	s.assetFitsPhone(assetURL)
}

// startDemoServer makes an admin token for alice in dir and starts `serve --demo` on it until
// ctx ends (stop ends it at cleanup); it returns the server's base URL and the token.
func startDemoServer(t *testing.T, ctx context.Context, stop context.CancelFunc, dir string) (base, token string) {
	t.Helper()
	var tokOut strings.Builder
	if err := Run(ctx, []string{"token", "create", "--data-dir", dir, "--name", "alice", "--scopes", "admin"}, &tokOut, &strings.Builder{}, nil); err != nil {
		t.Fatal(err)
	}
	token = strings.TrimSpace(tokOut.String())
	ready := make(chan string, 1)
	logs := newSignalWriter("serving")
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--demo", "--data-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "text",
			"--scan-interval", "0", "--cleanup-interval", "0", "--tables-sync-interval", "0"}, &strings.Builder{}, logs, ready)
	}()
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not start\n%s", logs.String())
	}
	t.Cleanup(func() {
		stop()
		<-done
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return base, token
}

// searchFormerName opens the home page, then a search for the former name finds the renamed table.
func (s *browserSession) searchFormerName() {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.ID("q"))))
	s.shot("home")
	s.must(chromedp.Do(s.bctx, chromedp.SendKeys(chromedp.ID("q"), "db.orders")))
	_, err := chromedp.Run(s.bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS("form.search button"))))
	s.must(err)
	results := s.text("#results")
	if !strings.Contains(results, "db.sales_orders") || !strings.Contains(results, "matched former name db.orders") {
		s.t.Fatalf("searching the former name: %q", results)
	}
}

// checkRenamedAsset follows the search result to the asset page and checks it shows both names,
// owners, usage from before the rename and the lineage graph; it returns the page's URL.
func (s *browserSession) checkRenamedAsset() string {
	s.t.Helper()
	_, err := chromedp.Run(s.bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS("#results a"))))
	s.must(err)
	s.must(chromedp.Do(s.bctx, chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
	assetURL, err := chromedp.Run(s.bctx, chromedp.Location())
	s.must(err)
	if names := s.text("#names"); !strings.Contains(names, "db.sales_orders") || !strings.Contains(names, "db.orders") {
		s.t.Fatalf("names: %q", names)
	}
	if owners := s.text("#owners"); !strings.Contains(owners, "team-sales") {
		s.t.Fatalf("owners: %q", owners)
	}
	if seen := s.text("#names-seen"); !strings.Contains(seen, "db.orders") || !strings.Contains(seen, "not its current name") {
		s.t.Fatalf("usage under former names: %q", seen)
	}
	// The read under the new name, made before the sync found the rename, is on the page.
	if seen := s.text("#names-seen"); !strings.Contains(seen, "db.sales_orders") {
		s.t.Fatalf("the read under the new name is missing: %q", seen)
	}
	if late := s.text("#usage-summary"); !strings.Contains(late, "1 attributed after the fact") {
		s.t.Fatalf("usage summary does not say a read was attributed late: %q", late)
	}
	reads, err := chromedp.Run(s.bctx, chromedp.Evaluate[float64](`JSON.parse(document.getElementById("usage-data").textContent).reads.reduce((a, b) => a + b, 0)`))
	s.must(err)
	drawn, err := chromedp.Run(s.bctx, chromedp.Evaluate[bool](`!!window.tidemarkChart && document.querySelectorAll("#usage-chart canvas").length > 0`))
	s.must(err)
	if reads < 20 || !drawn {
		s.t.Fatalf("usage chart: %v reads, drawn %v", reads, drawn)
	}
	labels, err := chromedp.Run(s.bctx, chromedp.Evaluate[[]string](`window.tidemarkGraph ? window.tidemarkGraph.nodes().map(n => n.data("label")) : []`))
	s.must(err)
	for _, want := range []string{"db.sales_orders", "load_orders", "daily_revenue"} {
		if !slices.Contains(labels, want) {
			s.t.Fatalf("lineage graph nodes %v: no %s", labels, want)
		}
	}
	s.shot("asset")
	return assetURL
}

// followLineageNode shows the graph alone; a click on a node selects it and shows its details,
// whose link goes to its page.
func (s *browserSession) followLineageNode(assetURL string) {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(assetURL)))
	s.shot("lineage")
	_, err := chromedp.Run(s.bctx, chromedp.Evaluate[bool](`(() => { const n = window.tidemarkGraph.nodes().filter(n => n.data("label") === "load_orders")[0]; n.emit("tap"); return true })()`))
	s.must(err)
	if d := s.text("#lineage-details"); !strings.Contains(d, "load_orders") {
		s.t.Fatalf("clicking a graph node showed %q", d)
	}
	_, err = chromedp.Run(s.bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("lineage-open"))))
	s.must(err)
	if h := s.text("h1"); !strings.Contains(h, "load_orders") {
		s.t.Fatalf("the details' link led to %q", h)
	}
}

// anonymousProposal checks an anonymous visitor sees proposals but no approve button; it returns
// the first orphan-files proposal's path.
func (s *browserSession) anonymousProposal() string {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/proposals?kind=orphan_files"), chromedp.WaitVisible(chromedp.ID("proposals"))))
	s.shot("proposals")
	href, err := chromedp.Run(s.bctx, chromedp.Evaluate[string](`document.querySelector("#proposals tbody a[href^=\"/proposals/\"]").getAttribute("href")`))
	s.must(err)
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+href), chromedp.WaitVisible(chromedp.ID("proposal-state"))))
	noButton, err := chromedp.Run(s.bctx, chromedp.Evaluate[bool](`document.getElementById("approve") === null`))
	s.must(err)
	if !noButton {
		s.t.Fatal("an anonymous visitor got an approve button")
	}
	return href
}

// refuseForgedApprovals checks a forged POST, without the form's CSRF token, is refused, signed
// in or not.
func (s *browserSession) refuseForgedApprovals(href string) {
	s.t.Helper()
	forged := func(c *http.Client) int {
		res, err := c.PostForm(s.base+href+"/approve", url.Values{"reason": {"forged"}})
		s.must(err)
		res.Body.Close()
		return res.StatusCode
	}
	if code := forged(http.DefaultClient); code != http.StatusForbidden {
		s.t.Fatalf("anonymous forged POST: %d", code)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(s.base + "/signin")
	s.must(err)
	body := readAll(s.t, res)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		s.t.Fatal("no CSRF token on the sign-in form")
	}
	res, err = c.PostForm(s.base+"/signin", url.Values{"csrf": {csrf[1]}, "token": {s.token}})
	s.must(err)
	res.Body.Close()
	if code := forged(c); code != http.StatusForbidden {
		s.t.Fatalf("signed-in forged POST without CSRF: %d", code)
	}
}

// approveProposal signs in and approves the proposal at href, which changes its state and
// writes an audit entry.
func (s *browserSession) approveProposal(href string) {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), s.token)))
	_, err := chromedp.Run(s.bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("signin-submit"))))
	s.must(err)
	if who := s.text("#who"); !strings.Contains(who, "alice") {
		s.t.Fatalf("signed in as %q", who)
	}
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+href), chromedp.WaitVisible(chromedp.ID("approve"))))
	_, err = chromedp.Run(s.bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("approve"))))
	s.must(err)
	// The confirm step names the count; typing it approves.
	count, err := chromedp.Run(s.bctx, chromedp.Evaluate[string](`document.querySelector("label[for=confirm-files] strong").textContent`))
	s.must(err)
	s.must(chromedp.Do(s.bctx, chromedp.SendKeys(chromedp.ID("confirm-files"), count)))
	_, err = chromedp.Run(s.bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("confirm-approve"))))
	s.must(err)
	if state := s.text("#proposal-state"); state != "approved" {
		s.t.Fatalf("after approving: %q", state)
	}
	s.must(chromedp.Do(s.bctx, chromedp.Navigate(s.base+"/audit"), chromedp.WaitVisible(chromedp.ID("audit"))))
	if audit := s.text("#audit"); !strings.Contains(audit, "proposal.approve") || !strings.Contains(audit, "web:alice") {
		s.t.Fatalf("audit log: %q", audit)
	}
}

// assetFitsPhone checks the asset page still fits at phone width.
func (s *browserSession) assetFitsPhone(assetURL string) {
	s.t.Helper()
	s.must(chromedp.Do(s.bctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(assetURL), chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
	wide, err := chromedp.Run(s.bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth + 1`))
	s.must(err)
	s.shot("asset-phone")
	if !wide {
		culprits, _ := chromedp.Run(s.bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body, body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 || e.scrollWidth > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).concat(["scrollWidth " + document.documentElement.scrollWidth + " innerWidth " + window.innerWidth])`))
		s.t.Fatalf("the asset page scrolls sideways at phone width: %v", culprits)
	}
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
