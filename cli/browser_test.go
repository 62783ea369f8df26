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

// TestBrowser drives the real server, filled by --demo, in headless Chromium.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	var tokOut strings.Builder
	if err := Run(ctx, []string{"token", "create", "--data-dir", dir, "--name", "alice", "--scopes", "admin"}, &tokOut, &strings.Builder{}, nil); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(tokOut.String())
	ready := make(chan string, 1)
	logs := newSignalWriter("serving")
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--demo", "--data-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "text",
			"--scan-interval", "0", "--cleanup-interval", "0", "--tables-sync-interval", "0"}, &strings.Builder{}, logs, ready)
	}()
	var base string
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
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}

	actx, cancelA := chromiumAllocator(ctx, t, bin)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	bctx, cancelT := context.WithTimeout(bctx, 3*time.Minute)
	defer cancelT()

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
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

	// Home, then a search for the former name finds the renamed table.
	must(chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("q"))))
	shot("home")
	must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("q"), "db.orders")))
	_, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS("form.search button"))))
	must(err)
	results := text("#results")
	if !strings.Contains(results, "db.sales_orders") || !strings.Contains(results, "matched former name db.orders") {
		t.Fatalf("searching the former name: %q", results)
	}

	// The asset page: both names, owners, usage from before the rename, the lineage graph.
	_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS("#results a"))))
	must(err)
	must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
	assetURL, err := chromedp.Run(bctx, chromedp.Location())
	must(err)
	if names := text("#names"); !strings.Contains(names, "db.sales_orders") || !strings.Contains(names, "db.orders") {
		t.Fatalf("names: %q", names)
	}
	if owners := text("#owners"); !strings.Contains(owners, "team-sales") {
		t.Fatalf("owners: %q", owners)
	}
	if seen := text("#names-seen"); !strings.Contains(seen, "db.orders") || !strings.Contains(seen, "not its current name") {
		t.Fatalf("usage under former names: %q", seen)
	}
	// The read under the new name, made before the sync found the rename, is on the page.
	if seen := text("#names-seen"); !strings.Contains(seen, "db.sales_orders") {
		t.Fatalf("the read under the new name is missing: %q", seen)
	}
	if late := text("#usage-summary"); !strings.Contains(late, "1 attributed after the fact") {
		t.Fatalf("usage summary does not say a read was attributed late: %q", late)
	}
	reads, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`JSON.parse(document.getElementById("usage-data").textContent).reads.reduce((a, b) => a + b, 0)`))
	must(err)
	drawn, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`!!window.tidemarkChart && document.querySelectorAll("#usage-chart canvas").length > 0`))
	must(err)
	if reads < 20 || !drawn {
		t.Fatalf("usage chart: %v reads, drawn %v", reads, drawn)
	}
	labels, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.tidemarkGraph ? window.tidemarkGraph.nodes().map(n => n.data("label")) : []`))
	must(err)
	for _, want := range []string{"db.sales_orders", "load_orders", "daily_revenue"} {
		if !slices.Contains(labels, want) {
			t.Fatalf("lineage graph nodes %v: no %s", labels, want)
		}
	}
	shot("asset")
	// The graph alone; a click on a node selects it and shows its details, whose link goes to
	// its page.
	must(chromedp.Do(bctx, chromedp.Navigate(assetURL)))
	shot("lineage")
	_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const n = window.tidemarkGraph.nodes().filter(n => n.data("label") === "load_orders")[0]; n.emit("tap"); return true })()`))
	must(err)
	if d := text("#lineage-details"); !strings.Contains(d, "load_orders") {
		t.Fatalf("clicking a graph node showed %q", d)
	}
	_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("lineage-open"))))
	must(err)
	if h := text("h1"); !strings.Contains(h, "load_orders") {
		t.Fatalf("the details' link led to %q", h)
	}

	// Anonymous visitors see proposals but no approve button.
	must(chromedp.Do(bctx, chromedp.Navigate(base+"/proposals?kind=orphan_files"), chromedp.WaitVisible(chromedp.ID("proposals"))))
	shot("proposals")
	href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#proposals a").getAttribute("href")`))
	must(err)
	must(chromedp.Do(bctx, chromedp.Navigate(base+href), chromedp.WaitVisible(chromedp.ID("proposal-state"))))
	noButton, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("approve") === null`))
	must(err)
	if !noButton {
		t.Fatal("an anonymous visitor got an approve button")
	}

	// A forged POST, without the form's CSRF token, is refused, signed in or not.
	forged := func(c *http.Client) int {
		res, err := c.PostForm(base+href+"/approve", url.Values{"reason": {"forged"}})
		must(err)
		res.Body.Close()
		return res.StatusCode
	}
	if code := forged(http.DefaultClient); code != http.StatusForbidden {
		t.Fatalf("anonymous forged POST: %d", code)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(base + "/signin")
	must(err)
	body := readAll(t, res)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatal("no CSRF token on the sign-in form")
	}
	res, err = c.PostForm(base+"/signin", url.Values{"csrf": {csrf[1]}, "token": {token}})
	must(err)
	res.Body.Close()
	if code := forged(c); code != http.StatusForbidden {
		t.Fatalf("signed-in forged POST without CSRF: %d", code)
	}

	// Signing in and approving changes the state and writes an audit entry.
	must(chromedp.Do(bctx, chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("signin-submit"))))
	must(err)
	if who := text("#who"); !strings.Contains(who, "alice") {
		t.Fatalf("signed in as %q", who)
	}
	must(chromedp.Do(bctx, chromedp.Navigate(base+href), chromedp.WaitVisible(chromedp.ID("approve"))))
	_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("approve"))))
	must(err)
	// The confirm step names the count; typing it approves.
	count, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("label[for=confirm-files] strong").textContent`))
	must(err)
	must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("confirm-files"), count)))
	_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("confirm-approve"))))
	must(err)
	if state := text("#proposal-state"); state != "approved" {
		t.Fatalf("after approving: %q", state)
	}
	must(chromedp.Do(bctx, chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(chromedp.ID("audit"))))
	if audit := text("#audit"); !strings.Contains(audit, "proposal.approve") || !strings.Contains(audit, "web:alice") {
		t.Fatalf("audit log: %q", audit)
	}
	// Phone width: the asset page still fits.
	must(chromedp.Do(bctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(assetURL), chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
	wide, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth + 1`))
	must(err)
	shot("asset-phone")
	if !wide {
		culprits, _ := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body, body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 || e.scrollWidth > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).concat(["scrollWidth " + document.documentElement.scrollWidth + " innerWidth " + window.innerWidth])`))
		t.Fatalf("the asset page scrolls sideways at phone width: %v", culprits)
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
