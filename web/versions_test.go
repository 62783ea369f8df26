package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/web"
)

// vt0 is the version stories' epoch: every time in them is hours after it.
var vt0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func hours(h float64) time.Time { return vt0.Add(time.Duration(h * float64(time.Hour))) }

// storyClock is the clock of every service of a story, moved as the story goes.
type storyClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *storyClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *storyClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// versionWorld is the UI over services that share one clock, with what a story writes through.
type versionWorld struct {
	t     *testing.T
	ctx   context.Context
	db    *storage.DB
	clock *storyClock
	cat   *catalog.Catalog
	lin   *lineage.Service
	use   *usage.Service
	vers  *versions.Service
	srv   *httptest.Server
	runs  []string
}

func newVersionWorld(t *testing.T, db *storage.DB, opts ...versions.Option) *versionWorld {
	t.Helper()
	w := &versionWorld{t: t, ctx: context.Background(), db: db, clock: &storyClock{t: vt0}}
	var err error
	if w.cat, err = catalog.New(db, catalog.WithClock(w.clock.now)); err != nil {
		t.Fatal(err)
	}
	if w.use, err = usage.New(db, w.cat, usage.WithClock(w.clock.now)); err != nil {
		t.Fatal(err)
	}
	if w.lin, err = lineage.New(db, w.cat, lineage.WithClock(w.clock.now)); err != nil {
		t.Fatal(err)
	}
	if err := w.lin.Open(w.ctx); err != nil {
		t.Fatal(err)
	}
	if w.vers, err = versions.New(db, w.cat, append([]versions.Option{versions.WithClock(w.clock.now)}, opts...)...); err != nil {
		t.Fatal(err)
	}
	tbls, err := tables.New(db, w.cat)
	if err != nil {
		t.Fatal(err)
	}
	ui, err := web.New(web.Config{Catalog: w.cat, Lineage: w.lin, Usage: w.use, Tables: tbls, Versions: w.vers,
		Tokens: auth.NewStore(db.Client, nil), Now: w.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(ui)
	t.Cleanup(w.srv.Close)
	return w
}

// ds is an OpenLineage dataset of an event, with the version it states ("" for none).
func ds(ns, name, version string) string {
	if version == "" {
		return fmt.Sprintf(`{"namespace":%q,"name":%q}`, ns, name)
	}
	return fmt.Sprintf(`{"namespace":%q,"name":%q,"facets":{"version":{"_producer":"test","_schemaURL":"test","datasetVersion":%q}}}`, ns, name, version)
}

// run posts a run's START (with its inputs) and COMPLETE (with its outputs), the clock at each.
func (w *versionWorld) run(id, job string, start, end time.Time, inputs, outputs []string) {
	w.t.Helper()
	for _, ev := range []struct {
		typ string
		at  time.Time
		in  []string
		out []string
	}{{"START", start, inputs, nil}, {"COMPLETE", end, inputs, outputs}} {
		w.clock.set(ev.at)
		body := fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"producer":"test","run":{"runId":%q},"job":{"namespace":"airflow","name":%q},"inputs":[%s],"outputs":[%s]}`,
			ev.typ, ev.at.Format(time.RFC3339Nano), id, job, strings.Join(ev.in, ","), strings.Join(ev.out, ","))
		if _, err := w.lin.Ingest(w.ctx, []byte(body)); err != nil {
			w.t.Fatal(err)
		}
	}
	w.runs = append(w.runs, id)
}

// asset is the ID of a dataset (or job) by its current name.
func (w *versionWorld) asset(space catalog.Space, ns, name string) uuid.UUID {
	w.t.Helper()
	ref, ok, err := w.cat.Lookup(w.ctx, space, ns, name)
	if err != nil || !ok {
		w.t.Fatalf("%s %s.%s: %v %v", space, ns, name, ok, err)
	}
	return ref.ID
}

// snapshot records a version a table showed (as a sync does), committed at when.
func (w *versionWorld) snapshot(asset uuid.UUID, id int64, when time.Time, source string, summary map[string]string) {
	w.t.Helper()
	o := versions.Observed{AssetID: asset, SnapshotID: &id, Operation: "append", Principal: "loader", CommittedAt: when, Source: source,
		Summary: map[string]string{"added-records": "100"}}
	for k, v := range summary {
		o.Summary[k] = v
	}
	if err := w.vers.Record(w.ctx, []versions.Observed{o}); err != nil {
		w.t.Fatal(err)
	}
}

// resolve pins every run posted so far to versions, as the resolver's loop does.
func (w *versionWorld) resolve() {
	w.t.Helper()
	if err := w.vers.ResolveRuns(w.ctx, w.runs); err != nil {
		w.t.Fatal(err)
	}
}

// get fetches a page: its status and body.
func (w *versionWorld) get(path string) (int, string) {
	w.t.Helper()
	r := mustGet(w.t, w.srv.Client(), w.srv.URL+path)
	return r.StatusCode, readBody(r)
}

// badCommit is the bad-commit story: raw.orders appended three times (1001, 1002 the bad one
// at 2h, 1003 the fix at 5h); build_daily reads it and writes mart.daily_orders (2001, 2002,
// 2003), which is renamed mart.orders_daily at 3h; build_report reads that and writes
// mart.revenue (rev-1); after the fix only build_daily runs again. Edges are learned as each
// source says: stated by facets, reported by a commit naming the run, inferred from the
// versions current or committed in a run's window. audit_orders states a version of raw.orders
// the table never had (flagged). An auditor reads 1002 after the fix (time travel); 1001 is
// expired by the cleanup bot.
type badCommit struct {
	raw, daily, revenue, audit uuid.UUID
	buildDaily, buildReport    uuid.UUID
}

func (w *versionWorld) badCommit() badCommit {
	w.t.Helper()
	w.run("r1", "build_daily", hours(1.1), hours(1.3), []string{ds("warehouse", "raw.orders", "1001")}, []string{ds("warehouse", "mart.daily_orders", "2001")})
	w.run("r2", "build_daily", hours(2.1), hours(2.3), []string{ds("warehouse", "raw.orders", "")}, []string{ds("warehouse", "mart.daily_orders", "")})
	var b badCommit
	b.raw = w.asset(catalog.SpaceDataset, "warehouse", "raw.orders")
	b.daily = w.asset(catalog.SpaceDataset, "warehouse", "mart.daily_orders")
	w.clock.set(hours(3))
	if _, err := w.cat.Rename(w.ctx, b.daily, catalog.AnyVersion, "warehouse", "mart.orders_daily"); err != nil {
		w.t.Fatal(err)
	}
	w.run("r3", "build_report", hours(3.1), hours(3.3), []string{ds("warehouse", "mart.orders_daily", "2002")}, []string{ds("warehouse", "mart.revenue", "rev-1")})
	w.run("r4", "build_daily", hours(5.1), hours(5.3), []string{ds("warehouse", "raw.orders", "")}, []string{ds("warehouse", "mart.orders_daily", "")})
	w.run("r5", "audit_orders", hours(6.1), hours(6.2), []string{ds("warehouse", "raw.orders", "9999")}, []string{ds("warehouse", "mart.audit", "au-1")})
	b.revenue = w.asset(catalog.SpaceDataset, "warehouse", "mart.revenue")
	b.audit = w.asset(catalog.SpaceDataset, "warehouse", "mart.audit")
	b.buildDaily = w.asset(catalog.SpaceJob, "airflow", "build_daily")
	b.buildReport = w.asset(catalog.SpaceJob, "airflow", "build_report")
	w.clock.set(hours(7))
	if _, err := w.cat.SetOwner(w.ctx, b.revenue, catalog.AnyVersion, catalog.OwnerInput{Principal: "bob"}); err != nil {
		w.t.Fatal(err)
	}
	// raw.orders is an Iceberg table Tidemark reads: its snapshots are what it has.
	if _, err := w.db.Client.IcebergTable.Create().SetID(b.raw).SetTableUUID(uuid.NewString()).SetLocation("file:///tmp/i44-ui-raw").
		SetMetadataLocation("file:///tmp/i44-ui-raw/metadata/v3.metadata.json").SetCurrentSnapshotID(1003).SetCreatedAt(vt0).SetUpdatedAt(vt0).Save(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	w.snapshot(b.raw, 1001, hours(1), versions.SourceSync, nil)
	w.snapshot(b.raw, 1002, hours(2), versions.SourceSync, nil)
	w.snapshot(b.raw, 1003, hours(5), versions.SourceSync, nil)
	w.snapshot(b.daily, 2001, hours(1.2), versions.SourceCommit, nil)
	w.snapshot(b.daily, 2002, hours(2.2), versions.SourceCommit, map[string]string{versions.RunIDProperty: "r2"})
	w.snapshot(b.daily, 2003, hours(5.2), versions.SourceSync, nil)
	w.resolve()
	if _, err := w.use.Record(w.ctx, []usage.Record{
		{AssetID: b.revenue, Kind: "read", Actor: "dashboard", At: hours(4), QueryID: "q1", Source: "trino", Version: "rev-1"},
		{AssetID: b.raw, Kind: "read", Actor: "auditor", At: hours(6.5), QueryID: "q2", Source: "trino", Version: "1002"},
		{AssetID: b.raw, Kind: "read", Actor: "auditor", At: hours(6.6), QueryID: "q3", Source: "trino", Version: "1002"},
	}); err != nil {
		w.t.Fatal(err)
	}
	w.clock.set(hours(8))
	if err := w.vers.MarkExpired(w.ctx, b.raw, []int64{1001}, "cleanup-bot", hours(8)); err != nil {
		w.t.Fatal(err)
	}
	w.clock.set(hours(10))
	return b
}

// versionItem is the timeline's entry of a version on an asset page.
func versionItem(t *testing.T, body, version string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<li data-version="` + regexp.QuoteMeta(version) + `">(.*?)</li>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the timeline has no version %s", version)
	}
	return m[1]
}

// text strips tags and folds spaces: what a person reads.
func text(html string) string {
	s := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(html, "")
	return strings.Join(strings.Fields(strings.NewReplacer("&amp;", "&", "&#39;", "'", "&lt;", "<", "&gt;", ">", "&#34;", `"`).Replace(s)), " ")
}

// TestAssetPageVersions: the asset page lists a table's versions newest first, each with its
// time, operation and principal, the runs that produced and read it (job linked, label as a
// badge with its basis as the title), readers and time-travel reads, and expired marks; a job
// has no versions section, and a table with no versions says how versions are learned.
func TestAssetPageVersions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newVersionWorld(t, db)
		b := w.badCommit()

		status, body := w.get("/assets/" + b.raw.String())
		if status != http.StatusOK {
			t.Fatalf("raw.orders: %d", status)
		}
		order := regexp.MustCompile(`<li data-version="([^"]+)">`).FindAllStringSubmatch(body, -1)
		if len(order) != 3 || order[0][1] != "1003" || order[1][1] != "1002" || order[2][1] != "1001" {
			t.Fatalf("timeline order %v, want 1003, 1002, 1001", order)
		}
		v1002 := versionItem(t, body, "1002")
		for _, want := range []string{
			`href="/assets/` + b.raw.String() + `/versions/1002"`,
			"2026-03-02 02:00 UTC · append · by <code>loader</code>",
			`<a href="/assets/` + b.buildDaily.String() + `">build_daily</a> <span class="badge label-inferred" title="the version current at the run&#39;s start">inferred</span>`,
			"Read by 1 run:",
		} {
			if !strings.Contains(v1002, want) {
				t.Errorf("version 1002 lacks %s:\n%s", want, v1002)
			}
		}
		if got := text(v1002); !strings.Contains(got, "Usage: 2 reads by 1 reader, last 2026-03-02 06:36 UTC; top readers auditor (2).") ||
			!strings.Contains(got, "↶ 2 time-travel reads (made after 2026-03-02 05:00 UTC, when a newer version was current).") {
			t.Errorf("version 1002's reads: %s", got)
		}
		if v1001 := versionItem(t, body, "1001"); !strings.Contains(text(v1001), "expired 2026-03-02 08:00 UTC by cleanup-bot") ||
			!strings.Contains(v1001, `<span class="badge label-stated" title="the run&#39;s version facet">stated</span>`) {
			t.Errorf("version 1001 (expired, read by a stated edge):\n%s", v1001)
		}
		if v1003 := text(versionItem(t, body, "1003")); !strings.Contains(v1003, "Produced by no run Tidemark knows of.") ||
			!strings.Contains(v1003, "Usage: no reads recorded.") {
			t.Errorf("version 1003: %s", v1003)
		}
		// No Go durations, and plurals agree.
		if regexp.MustCompile(`\d+h\d+m\d+s|\b1 reads|\b1 readers|\b1 runs|\b1 records|\b1 data files`).MatchString(text(body)) {
			t.Errorf("the page has a Go duration or a wrong plural")
		}

		_, body = w.get("/assets/" + b.daily.String())
		for version, label := range map[string]string{"2001": "stated", "2002": "reported", "2003": "inferred"} {
			item := versionItem(t, body, version)
			if !strings.Contains(item, `Produced by <a href="/assets/`+b.buildDaily.String()+`">build_daily</a> <span class="badge label-`+label+`"`) {
				t.Errorf("orders_daily %s is not produced by build_daily, %s:\n%s", version, label, item)
			}
		}
		if item := versionItem(t, body, "2002"); !strings.Contains(item, `<a href="/assets/`+b.buildReport.String()+`">build_report</a> <span class="badge label-stated"`) {
			t.Errorf("orders_daily 2002 is not read by build_report (stated):\n%s", item)
		}

		_, body = w.get("/assets/" + b.buildDaily.String())
		if strings.Contains(body, `id="versions-h"`) {
			t.Errorf("a job's page has a versions section")
		}
		res, err := w.cat.Create(w.ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "empty"})
		if err != nil {
			t.Fatal(err)
		}
		_, body = w.get("/assets/" + res.Asset.ID.String())
		if !strings.Contains(body, `id="versions-none"`) || !strings.Contains(body, "Tidemark learns them from commits through its Iceberg REST catalog") ||
			strings.Contains(body, `id="versions"`) {
			t.Errorf("a table with no versions: %s", text(body[strings.Index(body, `id="versions-h"`):]))
		}
	})
}

// TestAssetPageVersionsPaged: the timeline shows ten versions at a time; "older versions"
// carries the cursor and keeps the page's other choices; the last page links back to the
// newest; a cursor the page cannot follow shows the newest with a note, not an error.
func TestAssetPageVersionsPaged(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newVersionWorld(t, db)
		res, err := w.cat.Create(w.ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "events"})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Asset.ID
		for i := range 12 {
			w.snapshot(id, int64(100+i), hours(float64(i)), versions.SourceSync, nil)
		}
		w.clock.set(hours(20))
		versionsOf := func(body string) []string {
			var out []string
			for _, m := range regexp.MustCompile(`<li data-version="([^"]+)">`).FindAllStringSubmatch(body, -1) {
				out = append(out, m[1])
			}
			return out
		}
		_, body := w.get("/assets/" + id.String() + "?depth=3")
		first := versionsOf(body)
		if len(first) != 10 || first[0] != "111" || first[9] != "102" {
			t.Fatalf("first page %v, want 111 down to 102", first)
		}
		older := regexp.MustCompile(`<a href="([^"]+)" id="versions-older">Older versions</a>`).FindStringSubmatch(body)
		if older == nil || strings.Contains(body, `id="versions-newest"`) {
			t.Fatalf("the first page's links are wrong")
		}
		href := strings.ReplaceAll(older[1], "&amp;", "&")
		u, err := url.Parse(href)
		if err != nil || u.Query().Get("depth") != "3" || u.Query().Get("versions_after") == "" || u.Fragment != "versions-h" {
			t.Fatalf("older link %q", href)
		}
		_, body = w.get("/assets/" + id.String() + href)
		if second := versionsOf(body); len(second) != 2 || second[0] != "101" || second[1] != "100" {
			t.Fatalf("second page %v, want 101, 100", second)
		}
		if strings.Contains(body, `id="versions-older"`) || !strings.Contains(body, `id="versions-newest"`) {
			t.Errorf("the last page's links are wrong")
		}
		for _, cursor := range []string{"nope", uuid.NewString()} {
			status, body := w.get("/assets/" + id.String() + "?versions_after=" + cursor)
			if status != http.StatusOK || len(versionsOf(body)) != 10 || !strings.Contains(body, `id="versions-note"`) {
				t.Errorf("cursor %s: %d, %d versions, note %v", cursor, status, len(versionsOf(body)), strings.Contains(body, `id="versions-note"`))
			}
		}
	})
}

// TestVersionPage: the page of the bad version says orders_daily is recovered and revenue
// affected, each with its state in words and the reason, names build_report as the run to
// repeat and bob as the owner to tell, lists the auditor's time-travel reads of the bad version;
// the graph data carries each table's state. A flagged version's page shows the warning; an
// unknown version is the UI's 404 page; a bad depth its 400.
func TestVersionPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newVersionWorld(t, db)
		b := w.badCommit()
		status, body := w.get("/assets/" + b.raw.String() + "/versions/1002")
		if status != http.StatusOK {
			t.Fatalf("version page: %d\n%s", status, text(body))
		}
		row := func(id uuid.UUID) string {
			t.Helper()
			m := regexp.MustCompile(`(?s)<tr data-asset="` + id.String() + `" data-state="([a-z]+)">(.*?)</tr>`).FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("no row for %s", id)
			}
			return m[1] + ": " + text(m[2])
		}
		if got := row(b.daily); !strings.HasPrefix(got, "recovered: mart.orders_daily") || !strings.Contains(got, "✓ recovered") ||
			!strings.Contains(got, "its current version 2003 was rebuilt from versions not derived from 1002") {
			t.Errorf("orders_daily: %s", got)
		}
		if got := row(b.revenue); !strings.HasPrefix(got, "affected: mart.revenue") ||
			!strings.Contains(got, "⚠ affected") || !strings.Contains(got, "its current version rev-1 derives from 1002") || !strings.Contains(got, "bob") {
			t.Errorf("revenue: %s", got)
		}
		repeat := regexp.MustCompile(`(?s)<ol id="impact-repeat">(.*?)</ol>`).FindStringSubmatch(body)
		if repeat == nil || !strings.Contains(repeat[1], `<a href="/assets/`+b.buildReport.String()+`">build_report</a>`) ||
			!strings.Contains(repeat[1], "run <code>r3</code>") || strings.Contains(repeat[1], "build_daily") {
			t.Errorf("runs to repeat: %v", repeat)
		}
		if owners := regexp.MustCompile(`(?s)<ul id="impact-owners">(.*?)</ul>`).FindStringSubmatch(body); owners == nil || text(owners[1]) != "bob user, owns 1 affected table" {
			t.Errorf("owners to tell: %v", owners)
		}
		if got := text(body); !strings.Contains(got, "2 downstream tables were built from this version: 1 affected") ||
			!strings.Contains(got, "1 recovered") || !strings.Contains(got, "1 run to repeat; 1 owner to tell.") {
			t.Errorf("summary: %s", got)
		}
		readers := regexp.MustCompile(`(?s)<table class="list" id="impact-readers">(.*?)</table>`).FindStringSubmatch(body)
		if readers == nil || !strings.Contains(text(readers[1]), "raw.orders 1002 the read named this version 2 reads by 1 reader") ||
			!strings.Contains(text(readers[1]), "dashboard (1)") {
			t.Errorf("readers of affected data: %v", readers)
		}
		graph := lineageData(t, body)
		states := map[string]string{}
		for _, n := range graph.Nodes {
			states[n.Data.Label] = n.Data.State + "|" + n.Data.Note
		}
		if states["mart.orders_daily"] != "recovered|recovered · derived 2002" || states["mart.revenue"] != "affected|affected · derived rev-1" ||
			states["build_report"] != "repeat|repeat: step 1" {
			t.Errorf("graph states %v", states)
		}
		if !strings.Contains(body, `<a href="/assets/`+b.raw.String()+`?at=2026-03-02T02%3A00%3A00Z#lineage-h" id="lineage-then">`) {
			t.Errorf("no link to the lineage as it stood at the version's time")
		}

		// The audit's input is a version raw.orders never had: flagged, on its provenance.
		_, body = w.get("/assets/" + b.audit.String() + "/versions/au-1")
		prov := regexp.MustCompile(`(?s)<ul id="provenance">(.*?)</ul>`).FindStringSubmatch(body)
		if prov == nil || !strings.Contains(prov[1], "⚠ flagged") || !strings.Contains(text(prov[1]), "9999 of warehouse.raw.orders") {
			t.Errorf("the flagged provenance: %v", prov)
		}
		status, body = w.get("/assets/" + b.raw.String() + "/versions/9999")
		if status != http.StatusOK || !strings.Contains(body, `id="version-unrecorded"`) {
			t.Errorf("a version only a run names: %d %s", status, text(body))
		}

		for _, tc := range []struct {
			path string
			want int
			has  string
		}{
			{"/assets/" + b.raw.String() + "/versions/4242", 404, "has no version &#34;4242&#34;"},
			{"/assets/" + b.raw.String() + "/versions/1002?depth=0", 400, "depth must be a number from 1 to 20"},
			{"/assets/" + uuid.NewString() + "/versions/1", 404, "does not exist"},
			{"/assets/nope/versions/1", 400, "not an asset ID"},
		} {
			status, body := w.get(tc.path)
			if status != tc.want || !strings.Contains(body, tc.has) || !strings.Contains(body, `<p class="error" role="alert">`) {
				t.Errorf("GET %s = %d, want the %d page saying %q:\n%s", tc.path, status, tc.want, tc.has, text(body))
			}
		}
	})
}

// TestVersionPageTruncated: a blast radius past the walk's bound says it is not whole and
// where the walk stopped, and a walk stopped by the depth says more lies beyond it.
func TestVersionPageTruncated(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newVersionWorld(t, db, versions.WithMaxNodes(5))
		raw := w.wideRadius(12)
		status, body := w.get("/assets/" + raw.String() + "/versions/v1")
		m := regexp.MustCompile(`(?s)<p class="notice" role="alert" id="version-truncated">(.*?)</p>`).FindStringSubmatch(body)
		if status != http.StatusOK || m == nil || !strings.Contains(text(m[1]), "This answer is not whole: the walk stopped at 5 versions (the bound)") {
			t.Errorf("truncated: %d %q", status, m)
		}
		w2 := newVersionWorld(t, db)
		b := w2.badCommit()
		_, body = w2.get("/assets/" + b.raw.String() + "/versions/1002?depth=1")
		if m := regexp.MustCompile(`<p class="notice" id="version-beyond">(.*?)</p>`).FindStringSubmatch(body); m == nil ||
			text(m[1]) != "More lies beyond depth 1 downstream: raise the depth to follow it." || strings.Contains(body, `id="version-truncated"`) {
			t.Errorf("beyond the depth: %v", m)
		}
	})
}

// TestLineageAt: the asset page's lineage as of a time before the rename draws the former name,
// marked, says "as of", and keeps the time on the direction switch and on the nodes' links; a
// time in the future, before 1900 or not a time is the UI's 400 page, not problem+json.
func TestLineageAt(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newVersionWorld(t, db)
		b := w.badCommit()
		status, body := w.get("/assets/" + b.raw.String() + "?direction=downstream&at=2026-03-02T02:30")
		if status != http.StatusOK {
			t.Fatalf("lineage at: %d %s", status, text(body))
		}
		if !strings.Contains(body, `<strong id="lineage-asof">As of 2026-03-02 02:30 UTC</strong>`) ||
			!strings.Contains(body, `value="2026-03-02T02:30:00"`) {
			t.Errorf("the page does not say as of when")
		}
		list := regexp.MustCompile(`(?s)<ul id="lineage-list">(.*?)</ul>`).FindStringSubmatch(body)
		if list == nil || !strings.Contains(text(list[1]), "mart.daily_orders warehouse table downstream, depth 2 former name") {
			t.Fatalf("the node list at 02:30: %v", list)
		}
		if strings.Contains(list[1], "build_report") || strings.Contains(list[1], "mart.orders_daily") {
			t.Errorf("the graph at 02:30 has what came later: %s", text(list[1]))
		}
		g := lineageData(t, body)
		var former bool
		for _, n := range g.Nodes {
			if n.Data.Label == "mart.daily_orders" {
				former = n.Data.Former && n.Data.Note == "former name" && strings.HasSuffix(n.Data.Href, "?at=2026-03-02T02%3A30%3A00Z#lineage-h")
			}
		}
		if !former {
			t.Errorf("the graph data does not mark the former name: %+v", g.Nodes)
		}
		if !strings.Contains(body, `data-direction="upstream"`) || !regexp.MustCompile(`href="\?at=2026-03-02T02%3A30%3A00Z&amp;depth=2&amp;direction=upstream#lineage-h"`).MatchString(body) {
			t.Errorf("the direction switch drops at")
		}
		// An asset deleted since is drawn, marked, in the graph of a time it existed.
		w.clock.set(hours(9))
		if _, err := w.cat.Delete(w.ctx, b.revenue, catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
		w.clock.set(hours(10))
		_, body = w.get("/assets/" + b.raw.String() + "?direction=downstream&depth=4&at=" + url.QueryEscape("2026-03-02T03:30:00Z"))
		list = regexp.MustCompile(`(?s)<ul id="lineage-list">(.*?)</ul>`).FindStringSubmatch(body)
		if list == nil {
			t.Fatal("no node list at 03:30")
		}
		if items := text(strings.ReplaceAll(list[1], "</li>", "; ")); !strings.Contains(items, "; mart.revenue warehouse table downstream, depth 4 deleted 2026-03-02 09:00 UTC;") ||
			!strings.Contains(items, "; mart.orders_daily warehouse table downstream, depth 2; build_report") {
			t.Errorf("the node list at 03:30: %s", items)
		}
		// Now: the current name, no "as of".
		_, body = w.get("/assets/" + b.raw.String() + "?direction=downstream")
		if strings.Contains(body, "lineage-asof") || !strings.Contains(body, ">mart.orders_daily</a>") {
			t.Errorf("the graph now is not the current one")
		}
		for _, at := range []string{"2027-01-01T00:00", "1800-01-01T00:00", "yesterday"} {
			r := mustGet(t, w.srv.Client(), w.srv.URL+"/assets/"+b.raw.String()+"?at="+url.QueryEscape(at))
			body := readBody(r)
			if r.StatusCode != http.StatusBadRequest || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
				!strings.Contains(body, `<p class="error" role="alert">`) || !strings.Contains(body, "at") {
				t.Errorf("at=%s: %d %s %s", at, r.StatusCode, r.Header.Get("Content-Type"), text(body))
			}
		}
	})
}

// graphJSON is the graph data a page gives the script.
type graphJSON struct {
	Nodes []struct {
		Data struct {
			ID, Label, Namespace, Kind, Href, Side, State, Note, Detail string
			From                                                        string `json:"from"`
			Depth                                                       int
			Root, Former                                                bool
		} `json:"data"`
	} `json:"nodes"`
	Edges []struct {
		Data struct{ Source, Target string } `json:"data"`
	} `json:"edges"`
}

func lineageData(t *testing.T, body string) graphJSON {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="lineage-data">(.*?)</script>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no graph data")
	}
	var g graphJSON
	if err := json.Unmarshal([]byte(m[1]), &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// wideRadius is a bad version v1 of raw.events read by n jobs, each writing a table of its own
// in namespace lake; every other table was rebuilt since from v2 by its job (recovered), the
// rest still hold what v1 built (affected). It returns raw.events's ID.
func (w *versionWorld) wideRadius(n int) uuid.UUID {
	w.t.Helper()
	var batch [][]byte
	event := func(run, job string, at time.Time, in, out string) []byte {
		return fmt.Appendf(nil, `{"eventType":"COMPLETE","eventTime":%q,"producer":"test","run":{"runId":%q},"job":{"namespace":"etl","name":%q},"inputs":[%s],"outputs":[%s]}`,
			at.Format(time.RFC3339Nano), run, job, in, out)
	}
	for i := range n {
		job, out := fmt.Sprintf("job_%03d", i), fmt.Sprintf("lake.out_%03d", i)
		run := fmt.Sprintf("wide-%03d", i)
		batch = append(batch, event(run, job, hours(1), ds("raw", "raw.events", "v1"), ds("lake", out, "o1")))
		w.runs = append(w.runs, run)
		if i%2 == 1 {
			run := fmt.Sprintf("rebuild-%03d", i)
			batch = append(batch, event(run, job, hours(3), ds("raw", "raw.events", "v2"), ds("lake", out, "o2")))
			w.runs = append(w.runs, run)
		}
	}
	w.clock.set(hours(4))
	if _, err := w.lin.IngestBatch(w.ctx, batch); err != nil {
		w.t.Fatal(err)
	}
	w.resolve()
	return w.asset(catalog.SpaceDataset, "raw", "raw.events")
}

// TestBlastRadiusGrouped: in a real browser, the blast radius of a version that 150 jobs read
// (301 nodes) is drawn grouped: the jobs to repeat, the other jobs, the affected tables and the
// recovered tables each as one group node saying its state, a handful of nodes in all; a click
// on the affected group expands it in place, each table drawn with its state; the tables' list
// names every table with its state in words.
func TestBlastRadiusGrouped(t *testing.T) {
	bin := chromium(t)
	w := newVersionWorld(t, storagetest.Open(t, storagetest.Backends[0]))
	raw := w.wideRadius(150)
	bctx := chromiumContext(t, bin)
	must, text, _ := browserOps(t, bctx)
	must(chromedp.Do(bctx, chromedp.Navigate(w.srv.URL+"/assets/"+raw.String()+"/versions/v1"), chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
	graph := func() drawn {
		t.Helper()
		d, err := chromedp.Run(bctx, chromedp.Evaluate[drawn](`(() => { const ns = window.tidemarkGraph.nodes();
			return {ids: ns.map(n => n.id()), kinds: ns.map(n => n.data("kind")), labels: ns.map(n => n.data("label")),
				height: document.getElementById("lineage-graph").getBoundingClientRect().height}; })()`))
		must(err)
		return d
	}
	g := graph()
	slices.Sort(g.Labels)
	want := []string{"75 jobs in etl", "75 jobs in etl · to repeat", "75 tables in lake · affected", "75 tables in lake · recovered", "raw.events"}
	if len(g.IDs) > 10 || g.count("group") != 4 || !slices.Equal(g.Labels, want) {
		t.Fatalf("the blast radius draws %d nodes: %q; want %q", len(g.IDs), g.Labels, want)
	}
	shot(t, bctx, "version-radius-collapsed")
	section := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS("div.lineage")))
		must(err)
		must(os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), png, 0o644))
	}
	section("version-radius-graph")
	if rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#impact-tables tbody tr")].map(r => r.dataset.state + " " + r.querySelector(".state").textContent)`)); err != nil ||
		len(rows) != 150 || !slices.Contains(rows, "affected ⚠ affected") || !slices.Contains(rows, "recovered ✓ recovered") {
		t.Fatalf("the tables' list: %d rows (%v)", len(rows), err)
	}
	if summary := text("#radius-summary"); !strings.Contains(summary, "150 downstream tables were built from this version: 75 affected") ||
		!strings.Contains(summary, "75 recovered") || !strings.Contains(summary, "75 runs to repeat") {
		t.Fatalf("summary: %q", summary)
	}
	_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { window.tidemarkGraph.nodes().filter(n => n.data("label") === "75 tables in lake · affected")[0].emit("tap"); return true })()`))
	must(err)
	open := graph()
	affected, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.tidemarkGraph.nodes("[state = 'affected']").map(n => n.data("text"))`))
	must(err)
	if len(open.IDs) != 79 || len(affected) != 75 || !strings.HasSuffix(affected[0], "\naffected · derived o1") || open.Height <= g.Height {
		t.Fatalf("expanded: %d nodes, %d affected (%q), height %v (was %v)", len(open.IDs), len(affected), affected, open.Height, g.Height)
	}
	shot(t, bctx, "version-radius-expanded")
	section("version-radius-graph-expanded")
}
