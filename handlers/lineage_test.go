package handlers_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// fixture is one captured OpenLineage event from testdata/openlineage.
type fixture struct {
	name string
	raw  []byte
}

func readFixtures(t testing.TB, globs ...string) []fixture {
	t.Helper()
	var out []fixture
	for _, glob := range globs {
		dir := filepath.Join("..", "testdata", "openlineage")
		if strings.HasPrefix(glob, "sequences/") {
			dir = filepath.Join("..", "demo") // the demo ingests them; the tests read them there
		}
		paths, err := filepath.Glob(filepath.Join(dir, glob))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no fixtures match %s (%v)", glob, err)
		}
		// Sequence files are numbered 1..16: order them numerically, as produced.
		num := func(p string) int {
			n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(p), ".json"))
			if err != nil {
				return -1
			}
			return n
		}
		slices.SortStableFunc(paths, func(a, b string) int {
			if na, nb := num(a), num(b); na >= 0 && nb >= 0 {
				return cmp.Compare(na, nb)
			}
			return cmp.Compare(a, b)
		})
		for _, p := range paths {
			if strings.Contains(p, "PARTIAL") {
				continue // an expected-subset template, not an event (see TestRenameEvent)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fixture{name: filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p), raw: b})
		}
	}
	return out
}

var allFixtures = []string{"events/*.json", "sequences/spark_cll/*.json", "sequences/spark_dataproc_complete/*.json"}

// snapshot renders the stored lineage by names, for comparing two ingests: every asset with its
// status, edge, column edge, run state, symlink binding and lineage lifetime.
func (s *testServer) snapshot(t testing.TB) []string {
	t.Helper()
	names := map[string]string{}
	var out []string
	s.query(t, `SELECT a.id, a.kind, a.status, n.namespace, n.name FROM assets a JOIN asset_names n ON n.asset_id = a.id
		WHERE n.id = (SELECT max(m.id) FROM asset_names m WHERE m.asset_id = a.id)`, func(c []string) {
		names[c[0]] = c[3] + ":" + c[4]
		out = append(out, fmt.Sprintf("asset %s %s %s", c[1], c[3]+":"+c[4], c[2]))
	})
	s.query(t, "SELECT from_id, to_id FROM lineage_edges", func(c []string) { out = append(out, "edge "+names[c[0]]+" -> "+names[c[1]]) })
	s.query(t, "SELECT out_asset_id, out_field, in_asset_id, in_field, transformation_type, transformation_subtype FROM column_edges", func(c []string) {
		out = append(out, fmt.Sprintf("column %s.%s <- %s.%s %s/%s", names[c[0]], c[1], names[c[2]], c[3], c[4], c[5]))
	})
	s.query(t, "SELECT id, state, job_asset_id, event_count FROM runs", func(c []string) {
		out = append(out, "run "+c[0]+" "+c[1]+" "+names[c[2]]+" events="+c[3])
	})
	s.query(t, "SELECT asset_id, system, value FROM external_ids", func(c []string) { out = append(out, "extid "+names[c[0]]+" "+c[2]) })
	s.query(t, "SELECT id, dropped_at FROM lineage_states WHERE dropped_at IS NOT NULL", func(c []string) {
		out = append(out, "dropped "+names[c[0]])
	})
	slices.Sort(out)
	return out
}

func (s *testServer) query(t testing.TB, q string, f func([]string)) {
	t.Helper()
	rows, err := s.DB.SQL.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		f(vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func (s *testServer) postEvent(t testing.TB, raw []byte) resp {
	t.Helper()
	return s.do(t, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: raw})
}

// TestOpenLineageFixturesOverHTTP posts every captured event and sequence over HTTP in order,
// shuffled twice, and each twice; the stored graph must come out the same every time.
func TestOpenLineageFixturesOverHTTP(t *testing.T) {
	fixtures := readFixtures(t, allFixtures...)
	shuffled := func(seed int64) []fixture {
		out := slices.Clone(fixtures)
		rand.New(rand.NewSource(seed)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	orders := []struct {
		name   string
		events []fixture
	}{
		{"InOrder", fixtures},
		{"Shuffled1", shuffled(1)},
		{"Shuffled2", shuffled(2)},
		{"EachTwice", append(slices.Clone(fixtures), shuffled(3)...)},
		{"Batches", shuffled(4)}, // posted as batches of 7 through /lineage/batch
		{"OneBatch", append(slices.Clone(fixtures), fixtures...)},
	}
	eachBackend(t, func(t *testing.T, _ *testServer) {
		var want []string
		for _, order := range orders {
			t.Run(order.name, func(t *testing.T) {
				s := startServer(t, storageFor2(t, t.Name()), nil)
				size := map[string]int{"Batches": 7, "OneBatch": len(order.events)}[order.name]
				if size == 0 {
					for _, f := range order.events {
						r := s.postEvent(t, f.raw)
						if r.status != 200 && r.status != 201 {
							t.Fatalf("%s: %d %s", f.name, r.status, r.body)
						}
					}
				}
				for start := 0; size > 0 && start < len(order.events); start += size {
					var raws []json.RawMessage
					for _, f := range order.events[start:min(start+size, len(order.events))] {
						raws = append(raws, f.raw)
					}
					body, _ := json.Marshal(raws)
					var br struct {
						Status  string
						Summary struct{ Received, Successful, Failed int }
					}
					s.must(t, 200, req{method: "POST", path: "/api/v1/lineage/batch", token: s.Write, body: body}).decode(t, &br)
					if br.Status != "success" || br.Summary.Successful != len(raws) {
						t.Fatalf("batch from %d: %+v", start, br)
					}
				}
				got := s.snapshot(t)
				if want == nil {
					want = got
					checkFixtureGraph(t, got)
					return
				}
				if !slices.Equal(got, want) {
					t.Fatalf("graph differs from the in-order ingest:\n%s", diffLines(want, got))
				}
			})
		}
	})
}

// checkFixtureGraph asserts specific facts the fixtures must produce.
func checkFixtureGraph(t *testing.T, lines []string) {
	t.Helper()
	const (
		cllJob = "testColumnLevelLineage:open_lineage_integration_create_table.execute_create_hive_table_as_select_command.default_tbl1"
		t1     = "hdfs://dataproc-producer-test-m:/user/hive/warehouse/t1"
		t2     = "hdfs://dataproc-producer-test-m:/user/hive/warehouse/t2"
		drop   = "default:cl_i_test_application.drop_table"
	)
	for _, want := range []string{
		// Spark column-level lineage: CTAS of tbl1 from two sources.
		"edge file:/tmp/cll_test/cll_source1 -> " + cllJob,
		"edge file:/tmp/cll_test/cll_source2 -> " + cllJob,
		"edge " + cllJob + " -> file:/tmp/cll_test/tbl1",
		"column file:/tmp/cll_test/tbl1.ident <- file:/tmp/cll_test/cll_source1.a DIRECT/IDENTITY",
		"column file:/tmp/cll_test/tbl1.trans <- file:/tmp/cll_test/cll_source1.b DIRECT/TRANSFORMATION",
		"column file:/tmp/cll_test/tbl1.agg <- file:/tmp/cll_test/cll_source2.c DIRECT/AGGREGATION",
		"column file:/tmp/cll_test/tbl1.agg <- file:/tmp/cll_test/cll_source1.b INDIRECT/GROUP_BY",
		"extid file:/tmp/cll_test/tbl1 file:/tmp/cll_test|default.tbl1",
		// Airflow's deprecated field-level transformationType.
		"column bigquery:mock-project.test.upload.a <- gs://mock-bucket:test.csv.a IDENTITY/",
		// Dataproc: DROP of t1 and t2, then both re-created (the same assets, revived), t2 from t1.
		"edge " + drop + " -> " + t1,
		"edge " + drop + " -> " + t2,
		"dropped " + t1,
		"dropped " + t2,
		"asset table " + t1 + " active",
		"asset table " + t2 + " active",
		"edge " + t1 + " -> default:cl_i_test_application.execute_insert_into_hive_table.warehouse_t2",
		"column " + t2 + ".a <- " + t1 + ".a DIRECT/IDENTITY",
		"extid " + t1 + " hive://dataproc-producer-test-m:9083|default.t1",
		// Runs merged across their events; state follows event time.
		"run 019299c5-364c-79a9-9d83-659761b84279 COMPLETE " + drop + " events=2",
		// Static lineage from a JobEvent, and a required-fields-only Marquez event.
		"edge openlineage:dataset_a -> openlineage:name",
		"asset job my-namespace:myjob active",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("graph lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("graph:\n%s", strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "asset table "+t1+" ") && l != "asset table "+t1+" active" {
			t.Errorf("a second asset for t1: %s", l)
		}
	}
}

func diffLines(want, got []string) string {
	var b strings.Builder
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// TestDropAlone: a DROP with nothing after it deletes the dataset, keeping its ID and history.
func TestDropAlone(t *testing.T) {
	s := startServer(t, storageFor(t), nil)
	drop := readFixtures(t, "events/02_*.json")[0]
	s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: drop.raw})
	var res struct {
		Asset  asset `json:"asset"`
		Former bool  `json:"former"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=" + url.QueryEscape("hdfs://dataproc-producer-test-m") + "&name=" + url.QueryEscape("/user/hive/warehouse/t1")}).decode(t, &res)
	if res.Asset.Status != "deleted" || !res.Former {
		t.Fatalf("after DROP: %+v", res)
	}
}

// TestRenameEvent: lineage recorded under the old name before a RENAME and under the new name
// after it hang off one asset, and the Marquez endpoint finds it by either name.
func TestRenameEvent(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		tmpl := readRaw(t, "events/08_spark_alter_table_RENAME_previousIdentifier_PARTIAL_expected.json")
		var rename map[string]any
		if err := json.Unmarshal(tmpl, &rename); err != nil {
			t.Fatal(err)
		}
		// Complete the template the way Spark sends it: run, time, producer.
		rename["eventTime"] = "2024-06-01T10:00:00Z"
		rename["run"] = map[string]any{"runId": "0190a000-0000-7000-8000-000000000002"}
		rename["producer"] = "https://github.com/OpenLineage/OpenLineage/tree/1.19.0/integration/spark"
		before := map[string]any{
			"eventType": "COMPLETE", "eventTime": "2024-06-01T09:00:00Z", "producer": "test",
			"run":     map[string]any{"runId": "0190a000-0000-7000-8000-000000000001"},
			"job":     map[string]any{"namespace": "testAlterTable", "name": "writer"},
			"inputs":  []any{map[string]any{"namespace": "file", "name": "/tmp/upstream"}},
			"outputs": []any{map[string]any{"namespace": "file", "name": "/tmp/alter_test/alter_table_test"}},
		}
		after := map[string]any{
			"eventType": "COMPLETE", "eventTime": "2024-06-01T11:00:00Z", "producer": "test",
			"run":     map[string]any{"runId": "0190a000-0000-7000-8000-000000000003"},
			"job":     map[string]any{"namespace": "testAlterTable", "name": "reader"},
			"inputs":  []any{map[string]any{"namespace": "file", "name": "/tmp/alter_test/alter_table_test_new"}},
			"outputs": []any{map[string]any{"namespace": "file", "name": "/tmp/downstream"}},
		}
		for _, ev := range []map[string]any{before, rename, after} {
			s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: ev})
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: rename}) // replay: nothing changes

		byName := func(name string) marquezGraph {
			var g marquezGraph
			s.must(t, 200, req{method: "GET", path: "/api/v1/lineage?depth=4&nodeId=" + url.QueryEscape("dataset:file:"+name)}).decode(t, &g)
			return g
		}
		oldG, newG := byName("/tmp/alter_test/alter_table_test"), byName("/tmp/alter_test/alter_table_test_new")
		oldNode, newNode := oldG.node("dataset:file:/tmp/alter_test/alter_table_test_new"), newG.node("dataset:file:/tmp/alter_test/alter_table_test_new")
		if oldNode == nil || newNode == nil || oldNode.Data.AssetID != newNode.Data.AssetID {
			t.Fatalf("old and new names do not find one asset: %+v / %+v", oldNode, newNode)
		}
		for _, want := range []string{"job:testAlterTable:writer", "job:testAlterTable:open_lineage_integration_alter_table.execute_alter_table_rename_command"} {
			if !slices.ContainsFunc(newNode.InEdges, func(e marquezEdgeT) bool { return e.Origin == want }) {
				t.Errorf("renamed dataset lacks in-edge from %s: %+v", want, newNode.InEdges)
			}
		}
		if !slices.ContainsFunc(newNode.OutEdges, func(e marquezEdgeT) bool { return e.Destination == "job:testAlterTable:reader" }) {
			t.Errorf("renamed dataset lacks out-edge to the reader: %+v", newNode.OutEdges)
		}
		if oldG.node("dataset:file:/tmp/upstream") == nil || oldG.node("dataset:file:/tmp/downstream") == nil {
			t.Errorf("graph through the renamed asset does not reach both ends: %v", oldG.ids())
		}
		var names struct {
			Names []struct{ Name string } `json:"names"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + newNode.Data.AssetID + "/names"}).decode(t, &names)
		if len(names.Names) != 2 || names.Names[0].Name != "/tmp/alter_test/alter_table_test" {
			t.Fatalf("name history = %+v", names.Names)
		}
		if n := s.counts(t)["assets"]; n != 6 {
			t.Fatalf("%d assets, want 6 (3 jobs, upstream, renamed, downstream)", n)
		}
	})
}

type marquezEdgeT struct{ Origin, Destination string }

type marquezGraph struct {
	Graph []struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			AssetID string `json:"assetId"`
			Name    string `json:"name"`
			Fields  []struct{ Name string }
		} `json:"data"`
		InEdges  []marquezEdgeT `json:"inEdges"`
		OutEdges []marquezEdgeT `json:"outEdges"`
	} `json:"graph"`
}

func (g marquezGraph) node(id string) *struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		AssetID string `json:"assetId"`
		Name    string `json:"name"`
		Fields  []struct{ Name string }
	} `json:"data"`
	InEdges  []marquezEdgeT `json:"inEdges"`
	OutEdges []marquezEdgeT `json:"outEdges"`
} {
	for i := range g.Graph {
		if g.Graph[i].ID == id {
			return &g.Graph[i]
		}
	}
	return nil
}

func (g marquezGraph) ids() []string {
	var out []string
	for _, n := range g.Graph {
		out = append(out, n.ID)
	}
	return out
}

func readRaw(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "openlineage", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestBadLineageEvents: each bad event gets a clear 4xx and stores nothing.
func TestBadLineageEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		good := readRaw(t, "events/11_marquez_required_only_no_timezone.json")
		bomb := gz(t, bytes.Repeat([]byte(" "), 64<<20)) // 64 MiB of spaces, about 64 KiB compressed
		huge := append([]byte(`{"eventType":"START","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"x"},"job":{"namespace":"n","name":"j"},"producer":"`),
			bytes.Repeat([]byte("a"), 5<<20)...)
		huge = append(huge, `"}`...)
		deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
		cases := []struct {
			name    string
			body    []byte
			headers map[string]string
			status  int
			detail  string
		}{
			{"InvalidJSON", []byte(`{"eventType": "START",`), nil, 400, "not valid JSON"},
			{"NotAnObject", []byte(`"hello"`), nil, 400, "not valid JSON"},
			{"MissingRunID", []byte(`{"eventTime":"2024-01-01T00:00:00Z","run":{},"job":{"namespace":"n","name":"j"}}`), nil, 400, "without run.runId"},
			{"JobWithoutName", []byte(`{"eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n"}}`), nil, 400, "job: name is empty"},
			{"BadEventTime", []byte(`{"eventTime":"yesterday","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`), nil, 400, "eventTime"},
			{"BadEventType", []byte(`{"eventType":"EXPLODE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`), nil, 400, "eventType"},
			{"NoRunJobOrDataset", []byte(`{"eventTime":"2024-01-01T00:00:00Z"}`), nil, 400, "no run, job or dataset"},
			{"DropDatedYear2999", []byte(`{"eventType":"COMPLETE","eventTime":"2999-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"outputs":[{"namespace":"n","name":"t","facets":{"lifecycleStateChange":{"lifecycleStateChange":"DROP"}}}]}`), nil, 400, "ahead of the server's clock"},
			{"Year9999", []byte(`{"eventTime":"9999-12-31T23:59:59Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`), nil, 400, "ahead of the server's clock"},
			{"Year0001", []byte(`{"eventTime":"0001-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`), nil, 400, "before 1970"},
			{"DatasetWithoutNamespace", []byte(`{"eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"inputs":[{"name":"t"}]}`), nil, 400, "inputs[0]: namespace is empty"},
			{"TooDeep", []byte(`{"eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1","facets":` + deep + `},"job":{"namespace":"n","name":"j"}}`), nil, 400, "nests deeper"},
			{"FiveMegabytes", huge, nil, 413, "exceeds the limit"},
			{"GzipBomb", bomb, map[string]string{"Content-Encoding": "gzip"}, 413, "decompressed body exceeds"},
			{"BrokenGzip", []byte("not gzip at all"), map[string]string{"Content-Encoding": "gzip"}, 400, "not valid gzip"},
			{"UnknownEncoding", good, map[string]string{"Content-Encoding": "br"}, 415, "not supported"},
			{"Empty", []byte(" "), nil, 400, "empty"},
		}
		before := s.counts(t)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := s.do(t, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: tc.body, headers: tc.headers})
				if r.status != tc.status {
					t.Fatalf("status %d, want %d: %.300s", r.status, tc.status, r.body)
				}
				var p problem
				r.decode(t, &p)
				if !strings.Contains(p.Detail, tc.detail) {
					t.Fatalf("detail %q lacks %q", p.Detail, tc.detail)
				}
			})
		}
		s.must(t, 401, req{method: "POST", path: "/api/v1/lineage", body: good})
		s.must(t, 403, req{method: "POST", path: "/api/v1/lineage", token: s.Read, body: good})
		if after := s.counts(t); !maps.Equal(before, after) {
			t.Fatalf("bad events changed the database: %v -> %v", before, after)
		}

		// A gzip body is accepted like a plain one.
		s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: gz(t, good), headers: map[string]string{"Content-Encoding": "gzip"}})

		// One bad event in a batch does not stop the others.
		batch := `[` + string(readRaw(t, "events/09_static_DatasetEvent.json")) + `, {"eventTime":"x"}, ` + string(readRaw(t, "events/10_static_JobEvent.json")) + `]`
		var br struct {
			Status  string `json:"status"`
			Summary struct{ Received, Successful, Failed int }
			Failed  []struct {
				Index     int
				Reason    string
				Retriable bool
			} `json:"failed_events"`
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/lineage/batch", token: s.Write, body: batch}).decode(t, &br)
		if br.Status != "partial_success" || br.Summary.Received != 3 || br.Summary.Successful != 2 || br.Summary.Failed != 1 ||
			len(br.Failed) != 1 || br.Failed[0].Index != 1 || br.Failed[0].Retriable || !strings.Contains(br.Failed[0].Reason, "eventTime") {
			t.Fatalf("batch = %+v", br)
		}
		if n := s.counts(t)["lineage_events"]; n != 3 {
			t.Fatalf("%d events stored, want 3 (gzip one + two good in the batch)", n)
		}
		s.must(t, 400, req{method: "POST", path: "/api/v1/lineage/batch", token: s.Write, body: `[{"eventTime":"x"}]`})
		s.must(t, 400, req{method: "POST", path: "/api/v1/lineage/batch", token: s.Write, body: `{"not":"an array"}`})
	})
}

// TestLineageReadAPI checks the ID-keyed traversal (direction, depth, truncation), column
// lineage and runs over the Spark column-lineage sequence.
func TestLineageReadAPI(t *testing.T) {
	s := startServer(t, storageFor(t), nil)
	tbl1 := postSparkColumnLineage(t, s)
	checkLineageTraversal(t, s, tbl1)
	checkCompactLineage(t, s, tbl1)
	checkColumnLineage(t, s)
	checkAssetRuns(t, s, tbl1)
	checkMarquezLineage(t, s)
}

// lineageAnswer is GET /api/v1/assets/{id}/lineage's answer, the parts these tests read.
type lineageAnswer struct {
	Nodes []struct {
		ID, Kind, Name string
		Depth          int
	} `json:"nodes"`
	Edges           []struct{ From, To string } `json:"edges"`
	Truncated       bool                        `json:"truncated"`
	ReachedPerDepth []int                       `json:"reached_per_depth"`
	Graph           struct{ Edges int }         `json:"graph"`
}

// postSparkColumnLineage posts the Spark column-lineage sequence and returns tbl1's asset id.
func postSparkColumnLineage(t *testing.T, s *testServer) string {
	t.Helper()
	for _, f := range readFixtures(t, "sequences/spark_cll/*.json") {
		if r := s.postEvent(t, f.raw); r.status != 201 && r.status != 200 {
			t.Fatalf("%s: %d %s", f.name, r.status, r.body)
		}
	}
	var res struct {
		Asset asset `json:"asset"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=file&name=" + url.QueryEscape("/tmp/cll_test/tbl1")}).decode(t, &res)
	return res.Asset.ID
}

// checkLineageTraversal checks tbl1's upstream and downstream lineage, truncation and refused parameters.
func checkLineageTraversal(t *testing.T, s *testServer, tbl1 string) {
	t.Helper()
	var up lineageAnswer
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage?direction=upstream&depth=4"}).decode(t, &up)
	// tbl1 <- CTAS job <- cll_source1, cll_source2 <- their create jobs.
	if len(up.Nodes) != 6 || up.Truncated || !slices.Equal(up.ReachedPerDepth, []int{1, 1, 2, 2}) || len(up.Edges) != 5 {
		t.Fatalf("upstream = %+v", up)
	}
	var cut lineageAnswer
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage?direction=upstream&depth=4&limit=3"}).decode(t, &cut)
	if !cut.Truncated || len(cut.Nodes) != 2 || !slices.Equal(cut.ReachedPerDepth, []int{1, 1, 2}) {
		t.Fatalf("limit 3 = %+v; want the first two levels and truncated, with level 2's count", cut)
	}
	var down lineageAnswer
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage?direction=downstream"}).decode(t, &down)
	if len(down.Nodes) != 1 || down.Truncated {
		t.Fatalf("downstream of a sink = %+v", down)
	}
	s.must(t, 400, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage?direction=sideways"})
	s.must(t, 400, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage?depth=99"})
}

// checkCompactLineage checks the compact lineage form says the same as the full one for a few queries.
func checkCompactLineage(t *testing.T, s *testServer, tbl1 string) {
	t.Helper()
	// The compact form says the same as the full one: nodes in the same order, edges by index.
	for _, q := range []string{"direction=upstream&depth=4", "direction=upstream&depth=4&limit=3", "depth=2"} {
		var full lineageAnswer
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage?" + q}).decode(t, &full)
		var compact struct {
			Root            string   `json:"root"`
			NodeFields      []string `json:"node_fields"`
			Nodes           [][]any  `json:"nodes"`
			Edges           [][2]int `json:"edges"`
			Truncated       bool     `json:"truncated"`
			ReachedPerDepth []int    `json:"reached_per_depth"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage/compact?" + q}).decode(t, &compact)
		if compact.Root != tbl1 || compact.Truncated != full.Truncated || !slices.Equal(compact.ReachedPerDepth, full.ReachedPerDepth) ||
			len(compact.Nodes) != len(full.Nodes) || len(compact.Edges) != len(full.Edges) || len(compact.NodeFields) != 6 {
			t.Fatalf("%s: compact %+v; full %+v", q, compact, full)
		}
		for i, n := range compact.Nodes {
			f := full.Nodes[i]
			if n[0] != f.ID || n[1] != f.Kind || n[4] != f.Name || n[5] != float64(f.Depth) {
				t.Fatalf("%s: compact node %d = %v; full %+v", q, i, n, f)
			}
		}
		for i, e := range compact.Edges {
			if got := compact.Nodes[e[0]][0].(string) + ">" + compact.Nodes[e[1]][0].(string); got != full.Edges[i].From+">"+full.Edges[i].To {
				t.Fatalf("%s: compact edge %d = %s; full %+v", q, i, got, full.Edges[i])
			}
		}
	}
	s.must(t, 400, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/lineage/compact?limit=100001"})
	s.must(t, 404, req{method: "GET", path: "/api/v1/assets/" + uuid.NewString() + "/lineage/compact"})
}

// checkColumnLineage checks the column lineage of tbl1.agg upstream and of cll_source1.b downstream.
func checkColumnLineage(t *testing.T, s *testServer) {
	t.Helper()
	var cl struct {
		Graph []struct {
			ID   string `json:"id"`
			Data struct {
				InputFields []struct {
					Dataset, Field, TransformationType, TransformationSubtype string
				} `json:"inputFields"`
			} `json:"data"`
			OutEdges []marquezEdgeT `json:"outEdges"`
		} `json:"graph"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/column-lineage?nodeId=" + url.QueryEscape("datasetField:file:/tmp/cll_test/tbl1:agg")}).decode(t, &cl)
	var ids []string
	for _, n := range cl.Graph {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	want := []string{"datasetField:file:/tmp/cll_test/cll_source1:a", "datasetField:file:/tmp/cll_test/cll_source1:b",
		"datasetField:file:/tmp/cll_test/cll_source2:a", "datasetField:file:/tmp/cll_test/cll_source2:c", "datasetField:file:/tmp/cll_test/tbl1:agg"}
	if !slices.Equal(ids, want) {
		t.Fatalf("column lineage of tbl1.agg = %v, want %v", ids, want)
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/column-lineage?withDownstream=true&nodeId=" + url.QueryEscape("datasetField:file:/tmp/cll_test/cll_source1:b")}).decode(t, &cl)
	if len(cl.Graph) != 4 { // source1.b -> tbl1.agg, tbl1.ident, tbl1.trans
		t.Fatalf("downstream of source1.b: %d nodes: %+v", len(cl.Graph), cl.Graph)
	}
	s.must(t, 404, req{method: "GET", path: "/api/v1/column-lineage?nodeId=" + url.QueryEscape("datasetField:file:/nope:x")})
	s.must(t, 400, req{method: "GET", path: "/api/v1/column-lineage?nodeId=table:x"})
}

// checkAssetRuns checks tbl1's runs and the first one's detail.
func checkAssetRuns(t *testing.T, s *testServer, tbl1 string) {
	t.Helper()
	var runs struct {
		Runs []struct {
			ID, State string
			Inputs    []string
			Outputs   []string
		} `json:"runs"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + tbl1 + "/runs"}).decode(t, &runs)
	if len(runs.Runs) == 0 || runs.Runs[0].State != "COMPLETE" || len(runs.Runs[0].Inputs) != 2 || runs.Runs[0].Outputs[0] != tbl1 {
		t.Fatalf("runs of tbl1 = %+v", runs.Runs)
	}
	var run struct {
		ID, State  string
		EventCount int `json:"event_count"`
		Facets     map[string]json.RawMessage
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/runs/" + runs.Runs[0].ID}).decode(t, &run)
	if run.State != "COMPLETE" || run.EventCount < 2 || len(run.Facets) == 0 {
		t.Fatalf("run = %+v", run)
	}
	s.must(t, 404, req{method: "GET", path: "/api/v1/runs/no-such-run"})
}

// checkMarquezLineage checks the Marquez lineage endpoint finds tbl1 and refuses unknown or malformed node ids.
func checkMarquezLineage(t *testing.T, s *testServer) {
	t.Helper()
	// The Marquez endpoint parses namespaces that hold colons.
	var g marquezGraph
	s.must(t, 200, req{method: "GET", path: "/api/v1/lineage?nodeId=" + url.QueryEscape("dataset:file:/tmp/cll_test/tbl1")}).decode(t, &g)
	if n := g.node("dataset:file:/tmp/cll_test/tbl1"); n == nil || len(n.Data.Fields) == 0 || len(n.InEdges) != 1 {
		t.Fatalf("marquez node = %+v", n)
	}
	s.must(t, 404, req{method: "GET", path: "/api/v1/lineage?nodeId=dataset:nope:nothing"})
	s.must(t, 400, req{method: "GET", path: "/api/v1/lineage?nodeId=garbage"})
}

// TestLineageNamesFollowRenames: a rename through the REST API shows in lineage answers at once
// (the in-memory graph keeps node names, refreshed on every catalog change).
func TestLineageNamesFollowRenames(t *testing.T) {
	s := startServer(t, storageFor(t), nil)
	ev := `{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},
		"inputs":[{"namespace":"n","name":"src"}],"outputs":[{"namespace":"n","name":"dst"}]}`
	s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: ev})
	var res struct {
		Asset asset `json:"asset"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=n&name=dst"}).decode(t, &res)
	s.must(t, 200, req{method: "POST", path: "/api/v1/assets/" + res.Asset.ID + "/rename", token: s.Write,
		headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, res.Asset.Version)}, body: map[string]string{"name": "dst_v2"}})
	var src struct {
		Asset asset `json:"asset"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=n&name=src"}).decode(t, &src)
	var lin struct {
		Nodes []struct{ Name string } `json:"nodes"`
	}
	s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + src.Asset.ID + "/lineage?direction=downstream"}).decode(t, &lin)
	var names []string
	for _, n := range lin.Nodes {
		names = append(names, n.Name)
	}
	if !slices.Contains(names, "dst_v2") || slices.Contains(names, "dst") {
		t.Fatalf("lineage names after rename = %v", names)
	}
}

// TestFormerNameReuseWarns is issue 35's case: db.orders was renamed db.sales_orders. A run that
// read db.orders before the rename (a late event) counts for db.sales_orders; a run reading it
// after the rename gets a new asset (names resolve by time: after the rename an engine can only
// read a table created under the old name), and the answer warns, naming the name, the asset
// that held it and until when.
func TestFormerNameReuseWarns(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		sales := s.createAsset(t, "iceberg://lake", "db.orders")
		s.must(t, 200, req{method: "POST", path: "/api/v1/assets/" + sales.ID + "/rename", token: s.Write,
			headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, sales.Version)}, body: map[string]string{"name": "db.sales_orders"}})
		var names struct {
			Names []struct {
				Name    string     `json:"name"`
				ValidTo *time.Time `json:"valid_to"`
			} `json:"names"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + sales.ID + "/names"}).decode(t, &names)
		until := names.Names[0].ValidTo
		if until == nil {
			t.Fatalf("names %+v", names)
		}
		run := func(runID string, at time.Time) map[string]any {
			return map[string]any{"eventType": "COMPLETE", "eventTime": at.UTC().Format(time.RFC3339Nano), "producer": "test",
				"run": map[string]any{"runId": runID}, "job": map[string]any{"namespace": "spark", "name": "daily_revenue"},
				"inputs":  []any{map[string]any{"namespace": "iceberg://lake", "name": "db.orders"}},
				"outputs": []any{map[string]any{"namespace": "iceberg://lake", "name": "db.revenue"}}}
		}
		type answer struct {
			Warnings []string `json:"warnings"`
		}
		inputOf := func(runID string) string {
			var r struct {
				Inputs []string `json:"inputs"`
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/runs/" + runID}).decode(t, &r)
			if len(r.Inputs) != 1 {
				t.Fatalf("run %s inputs %+v", runID, r.Inputs)
			}
			return r.Inputs[0]
		}

		var late answer
		s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: run("0190a000-0000-7000-8000-0000000000a1", until.Add(-time.Minute))}).decode(t, &late)
		if got := inputOf("0190a000-0000-7000-8000-0000000000a1"); got != sales.ID || len(late.Warnings) != 0 {
			t.Errorf("a run from before the rename read %s (warnings %q), want db.sales_orders %s and no warning", got, late.Warnings, sales.ID)
		}

		var after answer
		s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: run("0190a000-0000-7000-8000-0000000000a2", until.Add(time.Second))}).decode(t, &after)
		created := inputOf("0190a000-0000-7000-8000-0000000000a2")
		if created == sales.ID {
			t.Fatalf("a run after the rename read db.sales_orders itself; want a new asset for the reused name")
		}
		want := []string{"iceberg://lake db.orders was the name of iceberg://lake db.sales_orders (asset " + sales.ID + ") until " + until.UTC().Format(time.RFC3339), created}
		if len(after.Warnings) != 1 || !strings.Contains(after.Warnings[0], want[0]) || !strings.Contains(after.Warnings[0], want[1]) {
			t.Errorf("warnings %q, want one holding %q", after.Warnings, want)
		}
		var res struct {
			Asset  asset `json:"asset"`
			Former bool  `json:"former"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/resolve?namespace=" + url.QueryEscape("iceberg://lake") + "&name=db.orders"}).decode(t, &res)
		if res.Asset.ID != created || res.Former {
			t.Errorf("db.orders resolves to %+v, want the new asset %s, current", res, created)
		}
	})
}
