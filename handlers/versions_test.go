package handlers_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/run"
	"github.com/tidemark/tidemark/ent/runio"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// startVersionsServer is the API with the versions routes, over a fresh database on backend.
func startVersionsServer(t *testing.T, backend string) *testServer {
	t.Helper()
	db := storagetest.Open(t, backend)
	return startServer(t, db, func(cfg *handlers.Config, _ *server.Config) {
		v, err := versions.New(db, cfg.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Versions = v
	})
}

// versionStory is raw.orders (versions 11, 12 and "2026/03/01"), a job build that read 11 and
// wrote mart.daily d1, and a read of 11 after 12 was committed (time travel).
type versionStory struct {
	raw, daily, job string
}

func writeVersionStory(t *testing.T, s *testServer) versionStory {
	t.Helper()
	st := versionStory{raw: s.createAsset(t, "raw", "orders").ID, daily: s.createAsset(t, "mart", "daily").ID}
	var job asset
	s.must(t, 201, req{method: "POST", path: "/api/v1/assets", token: s.Write,
		body: map[string]any{"kind": "job", "namespace": "airflow", "name": "build"}}).decode(t, &job)
	st.job = job.ID
	ctx, c := t.Context(), s.DB.Client
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	raw, daily, jobID := uuid.MustParse(st.raw), uuid.MustParse(st.daily), uuid.MustParse(st.job)
	for _, v := range []struct {
		asset   uuid.UUID
		version string
		at      time.Time
	}{{raw, "11", base.Add(time.Hour)}, {raw, "12", base.Add(3 * time.Hour)}, {raw, "2026/03/01", time.Time{}}, {daily, "d1", base.Add(2 * time.Hour)}} {
		q := c.DatasetVersion.Create().SetAssetID(v.asset).SetVersion(v.version).SetSource(versions.SourceSync).SetSeenInTable(true).
			SetFirstSeen(base).SetSummary(`{"added-records":"5"}`)
		if !v.at.IsZero() {
			q.SetCommittedAt(v.at)
		}
		if _, err := q.Save(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start, end := base.Add(90*time.Minute), base.Add(2*time.Hour)
	if _, err := c.Run.Create().SetID("run-1").SetJobAssetID(jobID).SetState(run.StateCOMPLETE).SetStateTime(end).
		SetStartedAt(start).SetEndedAt(end).SetCreatedAt(start).SetUpdatedAt(end).Save(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		asset         uuid.UUID
		role, version string
		at            time.Time
	}{{raw, "input", "11", start}, {daily, "output", "d1", end}} {
		if _, err := c.RunIO.Create().SetRunID("run-1").SetAssetID(e.asset).SetRole(runio.Role(e.role)).SetFirstSeen(e.at).Save(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RunVersion.Create().SetRunID("run-1").SetAssetID(e.asset).SetRole(runversion.Role(e.role)).SetVersion(e.version).
			SetKind(runversion.KindStated).SetBasis("OpenLineage facet").SetAt(e.at).SetUpdatedAt(e.at).Save(ctx); err != nil {
			t.Fatal(err)
		}
	}
	readAt := base.Add(4 * time.Hour)
	if _, err := c.UsageEvent.Create().SetEventKey("v-read-1").SetAssetID(raw).SetKind(usageevent.KindRead).SetActor("auditor").
		SetAt(readAt).SetDay(readAt.Format(time.DateOnly)).SetReceivedAt(readAt).SetVersion("11").Save(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestVersionsOverHTTP(t *testing.T) {
	for _, b := range storagetest.Backends {
		t.Run(b, func(t *testing.T) {
			s := startVersionsServer(t, b)
			st := writeVersionStory(t, s)
			base := "/api/v1/assets/" + st.raw + "/versions"

			// The timeline, a version a page: 12, then 11, then the undated one.
			type runEdge struct {
				RunID string `json:"run_id"`
				Label string `json:"label"`
				Job   struct{ ID, Name string }
			}
			type page struct {
				Versions []struct {
					Version     string
					CommittedAt *time.Time `json:"committed_at"`
					Expired     *struct{}
					ReadBy      struct {
						Runs  []runEdge
						Reads int64
					} `json:"read_by"`
					TimeTravel struct {
						Since   *time.Time
						Reads   int64
						Readers []struct{ Actor string }
					} `json:"time_travel"`
				}
				NextCursor string `json:"next_cursor"`
			}
			var got []string
			cursor := ""
			var p2 page
			for i := 0; ; i++ {
				var p page
				s.must(t, 200, req{method: "GET", path: base + "?limit=1&cursor=" + url.QueryEscape(cursor)}).decode(t, &p)
				if len(p.Versions) != 1 {
					t.Fatalf("page %d: %+v", i, p)
				}
				got = append(got, p.Versions[0].Version)
				if i == 1 {
					p2 = p
				}
				if p.NextCursor == "" {
					break
				}
				cursor = p.NextCursor
			}
			if strings.Join(got, ",") != "12,11,2026/03/01" {
				t.Errorf("timeline %v, want 12, 11, then the undated version", got)
			}
			v11 := p2.Versions[0]
			if len(v11.ReadBy.Runs) != 1 || v11.ReadBy.Runs[0].RunID != "run-1" || v11.ReadBy.Runs[0].Label != "stated" ||
				v11.ReadBy.Runs[0].Job.Name != "build" || v11.ReadBy.Runs[0].Job.ID != st.job || v11.ReadBy.Reads != 1 {
				t.Errorf("11 read by %+v", v11.ReadBy)
			}
			if v11.TimeTravel.Reads != 1 || len(v11.TimeTravel.Readers) != 1 || v11.TimeTravel.Readers[0].Actor != "auditor" || v11.TimeTravel.Since == nil {
				t.Errorf("11 time travel %+v", v11.TimeTravel)
			}
			// A cursor replayed with other filters is refused.
			var first page
			s.must(t, 200, req{method: "GET", path: base + "?limit=1"}).decode(t, &first)
			s.must(t, 400, req{method: "GET", path: base + "?limit=1&from=2026-03-01T00:00:00Z&cursor=" + first.NextCursor})
			// Filters by time.
			var window page
			s.must(t, 200, req{method: "GET", path: base + "?from=2026-03-01T00:30:00Z&to=2026-03-01T02:00:00%2B00:00"}).decode(t, &window)
			if len(window.Versions) != 1 || window.Versions[0].Version != "11" {
				t.Errorf("from 0:30 to 2:00: %+v", window.Versions)
			}

			// One version, its name escaped.
			var one map[string]any
			s.must(t, 200, req{method: "GET", path: base + "/" + url.PathEscape("2026/03/01")}).decode(t, &one)
			if one["version"] != "2026/03/01" || one["committed_at"] != nil || one["expired"] != nil {
				t.Errorf("the undated version: %v", one)
			}
			for _, key := range []string{"produced_by", "read_by", "time_travel", "summary", "seen_in_table", "source"} {
				if _, ok := one[key]; !ok {
					t.Errorf("a version lacks %s: %v", key, one)
				}
			}
			var pr problem
			s.must(t, 404, req{method: "GET", path: base + "/nope"}).decode(t, &pr)
			if !strings.Contains(pr.Detail, `has no version "nope"`) || !strings.Contains(pr.Detail, "raw.orders") {
				t.Errorf("unknown version: %+v", pr)
			}

			// Downstream of 11, upstream of d1.
			var g struct {
				Nodes []struct {
					AssetID string `json:"asset_id"`
					Version string
					Depth   int
				}
				Edges []struct {
					From, To struct {
						AssetID string `json:"asset_id"`
						Version string
					}
					RunID         string `json:"run_id"`
					Input, Output struct{ Label string }
					Flagged       bool
				}
				Truncated    bool
				UnknownEdges struct{ Count int } `json:"unknown_edges"`
			}
			s.must(t, 200, req{method: "GET", path: base + "/11/lineage?direction=downstream&depth=3"}).decode(t, &g)
			if len(g.Nodes) != 2 || len(g.Edges) != 1 || g.Edges[0].To.Version != "d1" || g.Edges[0].To.AssetID != st.daily ||
				g.Edges[0].Input.Label != "stated" || g.Edges[0].Output.Label != "stated" || g.Truncated || g.UnknownEdges.Count != 0 {
				t.Errorf("downstream of 11: %+v", g)
			}
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + st.daily + "/versions/d1/lineage?direction=upstream"}).decode(t, &g)
			if len(g.Nodes) != 2 || g.Nodes[1].AssetID != st.raw || g.Nodes[1].Version != "11" || g.Nodes[1].Depth != 1 {
				t.Errorf("upstream of d1: %+v", g.Nodes)
			}

			// The blast radius of 11: daily's current version d1 derives from it.
			var im struct {
				Tables []struct {
					AssetID string `json:"asset_id"`
					State   string
					Current *struct {
						Version, From string
						Derived       bool
					}
				}
				Repeat []struct {
					RunID string `json:"run_id"`
					Job   struct{ Name string }
				}
				Readers []struct {
					Version, How string
					Reads        int64
				}
			}
			s.must(t, 200, req{method: "GET", path: base + "/11/impact"}).decode(t, &im)
			if len(im.Tables) != 1 || im.Tables[0].AssetID != st.daily || im.Tables[0].State != "affected" || im.Tables[0].Current == nil ||
				im.Tables[0].Current.Version != "d1" || im.Tables[0].Current.From != "committed" || !im.Tables[0].Current.Derived {
				t.Errorf("impact tables %+v", im.Tables)
			}
			if len(im.Repeat) != 1 || im.Repeat[0].RunID != "run-1" || im.Repeat[0].Job.Name != "build" {
				t.Errorf("runs to repeat %+v", im.Repeat)
			}
			if len(im.Readers) != 1 || im.Readers[0].Version != "11" || im.Readers[0].How != "version" || im.Readers[0].Reads != 1 {
				t.Errorf("readers %+v", im.Readers)
			}
		})
	}
}

func TestVersionsBadInput(t *testing.T) {
	for _, b := range storagetest.Backends {
		t.Run(b, func(t *testing.T) {
			s := startVersionsServer(t, b)
			st := writeVersionStory(t, s)
			base := "/api/v1/assets/" + st.raw + "/versions"
			missing := "/api/v1/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/versions"
			for _, tc := range []struct {
				path   string
				status int
				field  string
				says   string
			}{
				{base + "?limit=0", 400, "limit", "1 to 500"},
				{base + "?limit=501", 400, "limit", "1 to 500"},
				{base + "?limit=ten", 400, "limit", ""},
				{base + "?cursor=not-a-cursor", 400, "cursor", ""},
				{base + "?from=yesterday", 400, "from", "RFC 3339"},
				{base + "?to=2026-03-01", 400, "to", "RFC 3339"},
				{base + "?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", 400, "from", "before"},
				{base + "/11/lineage?direction=sideways", 400, "direction", "upstream or downstream"},
				{base + "/11/lineage?depth=0", 400, "depth", "1 to 20"},
				{base + "/11/lineage?depth=21", 400, "depth", "1 to 20"},
				{base + "/11/impact?depth=21", 400, "depth", "1 to 20"},
				{base + "/11/impact?depth=x", 400, "depth", ""},
				{"/api/v1/assets/not-a-uuid/versions", 400, "id", "not a UUID"},
				{missing, 404, "", "does not exist"},
				{missing + "/11", 404, "", "does not exist"},
				{missing + "/11/lineage", 404, "", "does not exist"},
				{missing + "/11/impact", 404, "", "does not exist"},
				{base + "/404", 404, "version", `has no version "404"`},
				{base + "/404/lineage", 404, "version", `has no version "404"`},
				{base + "/404/impact", 404, "version", `has no version "404"`},
			} {
				got := s.do(t, req{method: "GET", path: tc.path})
				var p problem
				if err := json.Unmarshal(got.body, &p); err != nil {
					t.Fatalf("%s: %v: %s", tc.path, err, got.body)
				}
				if got.status != tc.status || p.Field != tc.field || !strings.Contains(p.Detail, tc.says) ||
					got.header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s = %d %q (field %q, %s), want %d on field %q saying %q", tc.path, got.status, p.Detail, p.Field,
						got.header.Get("Content-Type"), tc.status, tc.field, tc.says)
				}
			}
		})
	}
}

func TestVersionRoutesInOpenAPI(t *testing.T) {
	s := startVersionsServer(t, "sqlite")
	b, err := json.Marshal(s.API.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name string }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for path, params := range map[string][]string{
		"/api/v1/assets/{id}/versions":             {"id", "from", "to", "limit", "cursor"},
		"/api/v1/assets/{id}/versions/{v}":         {"id", "v"},
		"/api/v1/assets/{id}/versions/{v}/lineage": {"id", "v", "direction", "depth"},
		"/api/v1/assets/{id}/versions/{v}/impact":  {"id", "v", "depth"},
	} {
		op, ok := doc.Paths[path]["get"]
		if !ok {
			t.Errorf("%s is not in the document", path)
			continue
		}
		var got []string
		for _, p := range op.Parameters {
			got = append(got, p.Name)
		}
		if strings.Join(got, ",") != strings.Join(params, ",") {
			t.Errorf("%s parameters %v, want %v", path, got, params)
		}
	}
	// OpenAPI 3.0 ignores nullable without a type beside it.
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["nullable"] == true && x["type"] == nil {
				t.Errorf("%s: nullable without type", path)
			}
			for k, c := range x {
				walk(path+"/"+k, c)
			}
		case []any:
			for _, c := range x {
				walk(path+"[]", c)
			}
		}
	}
	var all any
	_ = json.Unmarshal(b, &all)
	walk("#", all)
}
