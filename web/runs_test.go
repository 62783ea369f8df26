package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/web"
)

// runsWorld is the UI over lineage whose completed runs count as usage (as app wires it), with
// versions.
type runsWorld struct {
	t    *testing.T
	ctx  context.Context
	cat  *catalog.Catalog
	lin  *lineage.Service
	use  *usage.Service
	vers *versions.Service
	srv  *httptest.Server
}

func newRunsWorld(t *testing.T, db *storage.DB) *runsWorld {
	t.Helper()
	w := &runsWorld{t: t, ctx: context.Background()}
	var err error
	if w.cat, err = catalog.New(db); err != nil {
		t.Fatal(err)
	}
	if w.use, err = usage.New(db, w.cat); err != nil {
		t.Fatal(err)
	}
	// app.UsageOfRuns, which the web tests cannot import (app imports web).
	seen := func(refs []lineage.DatasetRef) []usage.Seen {
		out := make([]usage.Seen, len(refs))
		for i, r := range refs {
			out[i] = usage.Seen{ID: r.ID, Namespace: r.Namespace, Name: r.Name, Version: r.Version}
		}
		return out
	}
	toUsage := func(ctx context.Context, runs []lineage.CompletedRun) error {
		out := make([]usage.RunUsage, len(runs))
		for i, r := range runs {
			out[i] = usage.RunUsage{RunID: r.RunID, JobID: r.JobID, At: r.At, Actor: r.Actor, Inputs: seen(r.Inputs), Outputs: seen(r.Outputs)}
		}
		return w.use.FromRuns(ctx, out)
	}
	if w.lin, err = lineage.New(db, w.cat, lineage.WithCompletedRuns(toUsage)); err != nil {
		t.Fatal(err)
	}
	if err := w.lin.Open(w.ctx); err != nil {
		t.Fatal(err)
	}
	if w.vers, err = versions.New(db, w.cat); err != nil {
		t.Fatal(err)
	}
	ui, err := web.New(web.Config{Catalog: w.cat, Lineage: w.lin, Usage: w.use, Versions: w.vers, Tokens: auth.NewStore(db.Client, nil)})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(ui)
	t.Cleanup(w.srv.Close)
	return w
}

// event posts one run event; runFacets is the run's facets object ("" for none).
func (w *runsWorld) event(typ string, at time.Time, runID, job string, inputs, outputs []string, runFacets string) {
	w.t.Helper()
	if runFacets == "" {
		runFacets = "{}"
	}
	body := fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"producer":"test","run":{"runId":%q,"facets":%s},"job":{"namespace":"airflow","name":%q},"inputs":[%s],"outputs":[%s]}`,
		typ, at.UTC().Format(time.RFC3339Nano), runID, runFacets, job, strings.Join(inputs, ","), strings.Join(outputs, ","))
	if _, err := w.lin.Ingest(w.ctx, []byte(body)); err != nil {
		w.t.Fatal(err)
	}
}

// run posts a run's START and COMPLETE.
func (w *runsWorld) run(runID, job string, start, end time.Time, inputs, outputs []string) {
	w.t.Helper()
	w.event("START", start, runID, job, inputs, nil, "")
	w.event("COMPLETE", end, runID, job, inputs, outputs, "")
}

func (w *runsWorld) asset(space catalog.Space, ns, name string) uuid.UUID {
	w.t.Helper()
	ref, ok, err := w.cat.Lookup(w.ctx, space, ns, name)
	if err != nil || !ok {
		w.t.Fatalf("%s %s.%s: %v %v", space, ns, name, ok, err)
	}
	return ref.ID
}

func (w *runsWorld) page(path string) (int, string) {
	w.t.Helper()
	r := mustGet(w.t, http.DefaultClient, w.srv.URL+path)
	return r.StatusCode, readBody(r)
}

// TestRunsBrowser: the Dataproc sequence from a real Spark producer; a person opens the table
// it wrote, follows a run to its page (job, state, its four events, inputs, outputs, duration),
// then the job's page.
func TestRunsBrowser(t *testing.T) {
	bin := chromium(t)
	w := newRunsWorld(t, storagetest.Open(t, storagetest.Backends[0]))
	dir := "/work/shared/testdata/openlineage/sequences/spark_dataproc_complete"
	for i := 1; i <= 16; i++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.json", i)))
		if err != nil {
			t.Skip("the OpenLineage test data is not here: ", err)
		}
		if _, err := w.lin.Ingest(w.ctx, b); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	const ns, insert = "hdfs://dataproc-producer-test-m", "019299c5-73cf-7069-a70f-74eb8070b577"
	t2 := w.asset(catalog.SpaceDataset, ns, "/user/hive/warehouse/t2")
	bctx := chromiumContext(t, bin)
	must, text, click := browserOps(t, bctx)
	must(chromedp.Do(bctx, chromedp.Navigate(w.srv.URL+"/assets/"+t2.String()), chromedp.WaitVisible(chromedp.CSS("#runs-table"))))
	if got := text("#runs-table"); !strings.Contains(got, "cl_i_test_application.execute_insert_into_hive_table.warehouse_t2") || !strings.Contains(got, "COMPLETE") {
		t.Errorf("the asset's runs do not name the job and its state: %q", got)
	}
	// The drop_table run sent only its COMPLETE event: its duration is not known, not 0 seconds.
	if got := text(`#runs-table tr:has(a[href="/runs/019299c5-4630-75cc-a27a-33e6e55ec50d"]) .run-duration`); got != "not known (one event)" {
		t.Errorf("a one-event run's duration reads %q", got)
	}
	shot(t, bctx, "asset-runs")
	click(`a.run-link[href="/runs/` + insert + `"]`)
	for _, c := range []struct{ sel, want string }{
		{"#run-job", "cl_i_test_application.execute_insert_into_hive_table.warehouse_t2"},
		{"#run-state", "COMPLETE"},
		{"#run-id", insert},
		{"#run-duration", "2 seconds"},
		{"#run-inputs", "/user/hive/warehouse/t1"},
		{"#run-outputs", "/user/hive/warehouse/t2"},
		{"#run-parent", "019299c5-12f5-7946-b5b2-c6abab662e20"},
		{"#run-facets", "spark_properties"},
	} {
		if got := text(c.sel); !strings.Contains(got, c.want) {
			t.Errorf("run page %s reads %q, want %q", c.sel, got, c.want)
		}
	}
	states := regexp.MustCompile(`START|RUNNING|COMPLETE`).FindAllString(text("#run-states"), -1)
	if want := []string{"START", "RUNNING", "RUNNING", "COMPLETE"}; !slices.Equal(states, want) {
		t.Errorf("state changes %v, want %v", states, want)
	}
	shot(t, bctx, "run")
	click("#run-job-link")
	if got := text("#job-name"); got != "cl_i_test_application.execute_insert_into_hive_table.warehouse_t2" {
		t.Errorf("job page is of %q", got)
	}
	if got := text("#runs-table"); !strings.Contains(got, insert) || !strings.Contains(got, "2 seconds") {
		t.Errorf("job's runs read %q", got)
	}
	for sel, want := range map[string]string{"#job-inputs": "/user/hive/warehouse/t1", "#job-outputs": "/user/hive/warehouse/t2", "#job-failures": "No run of this job has failed"} {
		if got := text(sel); !strings.Contains(got, want) {
			t.Errorf("job page %s reads %q, want %q", sel, got, want)
		}
	}
	shot(t, bctx, "job")
}

// TestUnknownRun: a run nobody sent is an HTML 404 page, whatever text names it, escaped.
func TestUnknownRun(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newRunsWorld(t, db)
		for _, tc := range []struct{ name, id string }{
			{"UUID", "0190a000-0000-7000-8000-000000000000"},
			{"Markup", "%3Cscript%3Ealert(1)%3C%2Fscript%3E"},
			{"Long", strings.Repeat("x", 5000)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := w.page("/runs/" + tc.id)
				if code != http.StatusNotFound || !strings.Contains(body, "is not known") || !strings.Contains(body, "<html") {
					t.Fatalf("got %d: %.300s", code, body)
				}
				if strings.Contains(body, "<script>alert") || strings.Contains(body, strings.Repeat("x", 200)) {
					t.Errorf("the run ID is sent back raw or whole")
				}
			})
		}
		if code, _ := w.page("/jobs/not-an-id"); code != http.StatusBadRequest {
			t.Errorf("a job page of a bad ID: %d", code)
		}
	})
}

// TestReadersAreJobs: three jobs read one table through OpenLineage runs (3, 2 and 1 runs); the
// table's page says it was read by 3 jobs and names each with its reads, linked to its page.
func TestReadersAreJobs(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newRunsWorld(t, db)
		t0 := time.Now().Add(-2 * time.Hour)
		n := 0
		for _, j := range []struct {
			job  string
			runs int
		}{{"load_daily", 3}, {"report_weekly", 2}, {"audit_once", 1}} {
			for range j.runs {
				n++
				start := t0.Add(time.Duration(n) * time.Minute)
				w.run(fmt.Sprintf("0190a000-0000-7000-8000-%012d", n), j.job, start, start.Add(30*time.Second), []string{ds("warehouse", "orders", "")}, nil)
			}
		}
		orders := w.asset(catalog.SpaceDataset, "warehouse", "orders")
		code, body := w.page("/assets/" + orders.String())
		if code != http.StatusOK {
			t.Fatalf("asset page: %d", code)
		}
		summary := regexp.MustCompile(`(?s)<p id="usage-summary">(.*?)</p>`).FindStringSubmatch(body)
		if summary == nil || !strings.Contains(summary[1], "6 reads and 0 writes by 3 jobs") {
			t.Errorf("usage summary: %v", summary)
		}
		readers := regexp.MustCompile(`(?s)<ul id="top-readers">(.*?)</ul>`).FindStringSubmatch(body)
		if readers == nil {
			t.Fatal("no top readers")
		}
		for _, want := range []struct {
			job   string
			reads string
		}{{"load_daily", "3 reads"}, {"report_weekly", "2 reads"}, {"audit_once", "1 read"}} {
			id := w.asset(catalog.SpaceJob, "airflow", want.job)
			if !strings.Contains(readers[1], `<a href="/jobs/`+id.String()+`">`+want.job+`</a>`) || !regexp.MustCompile(want.job+`</a>.*?: `+want.reads+`</li>`).MatchString(readers[1]) {
				t.Errorf("top readers lack %s with %s: %s", want.job, want.reads, readers[1])
			}
		}
		if strings.Contains(readers[1], "Nobody read it") {
			t.Errorf("top readers say nobody read it")
		}
		// Past the jobs the page names, it counts the rest.
		for i := range 12 {
			start := t0.Add(time.Duration(100+i) * time.Minute)
			w.run(fmt.Sprintf("0190a000-0000-7000-8000-1%011d", i), fmt.Sprintf("wide_%02d", i), start, start.Add(time.Second), []string{ds("warehouse", "wide", "")}, nil)
		}
		_, body = w.page("/assets/" + w.asset(catalog.SpaceDataset, "warehouse", "wide").String())
		if !strings.Contains(body, "12 reads and 0 writes by 12 jobs") || !strings.Contains(body, "and 2 more jobs that read it") ||
			strings.Count(body, `class="job-reader"`) != 10 {
			t.Errorf("a table read by 12 jobs: %d named", strings.Count(body, `class="job-reader"`))
		}
		// A table nobody used says so, rather than "0 reads by 0 actors".
		if _, err := w.cat.Create(w.ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "unread"}); err != nil {
			t.Fatal(err)
		}
		_, body = w.page("/assets/" + w.asset(catalog.SpaceDataset, "warehouse", "unread").String())
		if !strings.Contains(body, "No reads or writes recorded in the last 90 days.") || !strings.Contains(body, "Nobody read it in the last 90 days.") {
			t.Errorf("an unread table's usage has no empty state")
		}
		// ... and no empty chart box under it.
		if strings.Contains(body, `id="usage-chart"`) {
			t.Errorf("an unread table's page draws an empty usage chart")
		}
	})
}

// TestRunsPaging: 25 runs of one job write one table; the table's page and the job's page show
// 20, newest first, and an "Older runs" link to the other 5, with none shown twice.
func TestRunsPaging(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newRunsWorld(t, db)
		t0 := time.Now().Add(-3 * time.Hour)
		var ids []string
		for i := range 25 {
			id := fmt.Sprintf("0190a000-0000-7000-8000-%012d", i+1)
			ids = append(ids, id)
			start := t0.Add(time.Duration(i) * time.Minute)
			w.run(id, "nightly_load", start, start.Add(90*time.Second), nil, []string{ds("warehouse", "facts", "")})
		}
		slices.Reverse(ids) // newest first
		runLink := regexp.MustCompile(`<a href="/runs/([^"]+)" class="run-link">`)
		older := regexp.MustCompile(`<a href="([^"]+)" id="runs-older">`)
		for _, tc := range []struct{ name, path string }{
			{"Table", "/assets/" + w.asset(catalog.SpaceDataset, "warehouse", "facts").String()},
			{"Job", "/jobs/" + w.asset(catalog.SpaceJob, "airflow", "nightly_load").String()},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := w.page(tc.path)
				if code != http.StatusOK {
					t.Fatalf("%d", code)
				}
				var got []string
				for _, m := range runLink.FindAllStringSubmatch(body, -1) {
					got = append(got, m[1])
				}
				if !slices.Equal(got, ids[:20]) {
					t.Fatalf("first page: %v", got)
				}
				if !strings.Contains(body, "25 runs") || !strings.Contains(body, "1 minute 30 seconds") {
					t.Errorf("first page lacks the count or the duration")
				}
				next := older.FindStringSubmatch(body)
				if next == nil {
					t.Fatal("no link to older runs")
				}
				code, body = w.page(strings.ReplaceAll(next[1], "&amp;", "&"))
				if code != http.StatusOK {
					t.Fatalf("second page: %d", code)
				}
				got = got[:0]
				for _, m := range runLink.FindAllStringSubmatch(body, -1) {
					got = append(got, m[1])
				}
				if !slices.Equal(got, ids[20:]) {
					t.Errorf("second page: %v, want %v", got, ids[20:])
				}
				if older.MatchString(body) || !strings.Contains(body, `id="runs-newest"`) {
					t.Errorf("the last page links further, or not back")
				}
			})
		}
		if code, _ := w.page("/jobs/" + w.asset(catalog.SpaceJob, "airflow", "nightly_load").String() + "?runs=garbage"); code != http.StatusBadRequest {
			t.Errorf("a mangled cursor: %d", code)
		}
	})
}

// TestFailedRunPage: a failed run's page shows its error message and stack trace, the version
// of its input it read (stated by the event, linked, labelled), and its facets; the job's page
// counts the failure and shows the message.
func TestFailedRunPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newRunsWorld(t, db)
		const id = "0190a000-0000-7000-8000-00000000f001"
		start := time.Now().Add(-time.Hour)
		in := []string{ds("warehouse", "orders", "v7")}
		w.event("START", start, id, "revenue", in, nil, "")
		w.event("FAIL", start.Add(5*time.Minute), id, "revenue", in, nil,
			`{"errorMessage":{"_producer":"t","_schemaURL":"t","message":"division by zero","programmingLanguage":"python","stackTrace":"Traceback:\n  File \"job.py\", line 3"}}`)
		if err := w.vers.ResolveRuns(w.ctx, []string{id}); err != nil {
			t.Fatal(err)
		}
		orders := w.asset(catalog.SpaceDataset, "warehouse", "orders")
		code, body := w.page("/runs/" + id)
		if code != http.StatusOK {
			t.Fatalf("run page: %d", code)
		}
		for _, want := range []string{
			`<span id="run-error-message">division by zero</span>`, "File &#34;job.py&#34;, line 3",
			`<a href="/assets/` + orders.String() + `/versions/v7"><code>v7</code></a>`, `label-stated`,
			`<summary><code>errorMessage</code></summary>`, `<dd id="run-duration">5 minutes</dd>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("run page lacks %s", want)
			}
		}
		_, body = w.page("/jobs/" + w.asset(catalog.SpaceJob, "airflow", "revenue").String())
		if !strings.Contains(body, "1 run failed") || !strings.Contains(body, "division by zero") {
			t.Errorf("job page does not show the failure")
		}
	})
}
