package restcatalog_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// story is the bad-commit story's cast: a loader that appends to raw.orders, and a Spark-like
// engine (one token) that runs the jobs, posts their OpenLineage events and commits their
// outputs, all through the real server.
type story struct {
	s      *testServer
	spark  string // the engine's token
	loader icecat.Catalog
	engine icecat.Catalog
}

func newStory(t *testing.T, db *storage.DB) *story {
	t.Helper()
	s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
		// The test resolves when it asks, with no lag: every event it posted is stored.
		c.Versions = append(c.Versions, versions.WithResolver(time.Hour, 0))
		c.LoadGraph = true
	})
	ctx := context.Background()
	store := auth.NewStore(db.Client, nil)
	spark, _, err := store.Create(ctx, "spark", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	loader, _, err := store.Create(ctx, "loader", []auth.Scope{auth.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	load := func(tok string) icecat.Catalog {
		c, err := icecat.Load(ctx, tok[:8], iceberg.Properties{"type": "rest", "uri": s.URL + "/iceberg", "token": tok, "warehouse": "main"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return &story{s: s, spark: spark, loader: load(loader), engine: load(spark)}
}

// tick keeps the steps of the story in order at millisecond precision (snapshot times are
// milliseconds), so a run's window holds exactly what happened inside it.
func tick() time.Time {
	time.Sleep(3 * time.Millisecond)
	t := time.Now().UTC().Truncate(time.Millisecond)
	time.Sleep(3 * time.Millisecond)
	return t
}

// dsRef is a dataset in an event, with what it states.
type dsRef struct {
	name    string // ns.table in warehouse main
	scan    int64  // icebergScanReport.snapshotId on an input
	commit  int64  // icebergCommitReport.snapshotId on an output
	version string // the version facet
}

func (d dsRef) json() string {
	var facets, io []string
	if d.version != "" {
		facets = append(facets, fmt.Sprintf(`"version":{"datasetVersion":%q}`, d.version))
	}
	if d.scan != 0 {
		io = append(io, fmt.Sprintf(`"inputFacets":{"icebergScanReport":{"snapshotId":%d,"filterDescription":"true","projectedFieldNames":["id"]}}`, d.scan))
	}
	if d.commit != 0 {
		io = append(io, fmt.Sprintf(`"outputFacets":{"icebergCommitReport":{"snapshotId":%d,"operation":"append"}}`, d.commit))
	}
	out := fmt.Sprintf(`{"namespace":"iceberg://main","name":%q,"facets":{%s}`, d.name, strings.Join(facets, ","))
	for _, x := range io {
		out += "," + x
	}
	return out + "}"
}

func (st *story) event(t *testing.T, runID, job, typ string, at time.Time, in, out []dsRef) {
	t.Helper()
	list := func(ds []dsRef) string {
		var parts []string
		for _, d := range ds {
			parts = append(parts, d.json())
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	body := fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"producer":"https://github.com/OpenLineage/OpenLineage/tree/1.26.0/integration/spark",
		"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent","run":{"runId":%q},
		"job":{"namespace":"spark","name":%q},"inputs":%s,"outputs":%s}`, typ, at.Format(time.RFC3339Nano), runID, job, list(in), list(out))
	if code, resp := st.s.do(t, "POST", "/api/v1/lineage", st.spark, body, nil); code != 200 && code != 201 {
		t.Fatalf("post %s %s: %d %s", job, typ, code, resp)
	}
}

// scanReport posts the scan report an engine sends after planning a scan.
func (st *story) scanReport(t *testing.T, ns, tbl string, snap int64) {
	t.Helper()
	body := fmt.Sprintf(`{"report-type":"scan-report","table-name":"%s.%s","snapshot-id":%d,"filter":true,"schema-id":0,
		"projected-field-ids":[1],"projected-field-names":["id"],"metrics":{}}`, ns, tbl, snap)
	if code, resp := st.s.do(t, "POST", "/iceberg/v1/main/namespaces/"+ns+"/tables/"+tbl+"/metrics", st.spark, body, nil); code != 204 {
		t.Fatalf("scan report: %d %s", code, resp)
	}
}

func snap(tbl *table.Table) int64 { return tbl.CurrentSnapshot().SnapshotID }

func (st *story) load(t *testing.T, c icecat.Catalog, ns, name string) *table.Table {
	t.Helper()
	tbl, err := c.LoadTable(context.Background(), table.Identifier{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestBadCommitStory is the story the issue tells: a bad append to raw.orders, both jobs run on
// it, mart.orders_daily is renamed in the middle, then a fix and a rerun of build_daily only.
// The impact of the bad append says orders_daily recovered and revenue still affected, names
// build_report as the run to repeat and revenue's owner, and every edge carries the label it
// was learned by.
func TestBadCommitStory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		st := newStory(t, db)
		s := st.s
		orders := create(t, st.loader, "raw", "orders")
		orders = s.append(t, orders, 0, 10)
		orders = s.append(t, orders, 10, 10)
		a1 := snap(orders)
		daily := create(t, st.engine, "mart", "orders_daily")
		revenue := create(t, st.engine, "mart", "revenue")
		ordersID, dailyID, revenueID := assetOf(t, s, orders), assetOf(t, s, daily), assetOf(t, s, revenue)

		// R1 build_daily states both versions in facets.
		r1 := uuid.NewString()
		st.event(t, r1, "build_daily", "START", tick(), []dsRef{{name: "raw.orders"}}, []dsRef{{name: "mart.orders_daily"}})
		daily = s.append(t, st.load(t, st.engine, "mart", "orders_daily"), 0, 5)
		d1 := snap(daily)
		st.event(t, r1, "build_daily", "COMPLETE", tick(), []dsRef{{name: "raw.orders", scan: a1}}, []dsRef{{name: "mart.orders_daily", commit: d1}})
		// R2 build_report only posts a scan report; its commit is found by its principal.
		r2 := uuid.NewString()
		beforeSecondJob := tick()
		st.event(t, r2, "build_report", "START", tick(), []dsRef{{name: "mart.orders_daily"}}, []dsRef{{name: "mart.revenue"}})
		st.scanReport(t, "mart", "orders_daily", d1)
		revenue = s.append(t, st.load(t, st.engine, "mart", "revenue"), 0, 3)
		r1v := snap(revenue)
		st.event(t, r2, "build_report", "COMPLETE", tick(), []dsRef{{name: "mart.orders_daily"}}, []dsRef{{name: "mart.revenue"}})

		// The bad append a2; R3 build_daily says nothing: its input is inferred.
		orders = s.append(t, st.load(t, st.loader, "raw", "orders"), 20, 10)
		a2 := snap(orders)
		r3 := uuid.NewString()
		st.event(t, r3, "build_daily", "START", tick(), []dsRef{{name: "raw.orders"}}, []dsRef{{name: "mart.orders_daily"}})
		daily = s.append(t, st.load(t, st.engine, "mart", "orders_daily"), 5, 5)
		d2 := snap(daily)
		st.event(t, r3, "build_daily", "COMPLETE", tick(), []dsRef{{name: "raw.orders"}}, []dsRef{{name: "mart.orders_daily"}})

		// orders_daily is renamed in the middle of the story.
		beforeRename := tick()
		if _, err := st.engine.RenameTable(ctx, table.Identifier{"mart", "orders_daily"}, table.Identifier{"mart", "daily_orders"}); err != nil {
			t.Fatal(err)
		}
		// R4 build_report reads the renamed table and states its version with the version facet.
		r4 := uuid.NewString()
		st.event(t, r4, "build_report", "START", tick(), []dsRef{{name: "mart.daily_orders"}}, []dsRef{{name: "mart.revenue"}})
		revenue = s.append(t, st.load(t, st.engine, "mart", "revenue"), 3, 3)
		r2v := snap(revenue)
		st.event(t, r4, "build_report", "COMPLETE", tick(), []dsRef{{name: "mart.daily_orders", version: strconv.FormatInt(d2, 10)}}, []dsRef{{name: "mart.revenue"}})

		// The fix a3, and a rerun of build_daily only (its input from a scan report).
		orders = s.append(t, st.load(t, st.loader, "raw", "orders"), 30, 10)
		a3 := snap(orders)
		r5 := uuid.NewString()
		st.event(t, r5, "build_daily", "START", tick(), []dsRef{{name: "raw.orders"}}, []dsRef{{name: "mart.daily_orders"}})
		st.scanReport(t, "raw", "orders", a3)
		daily = s.append(t, st.load(t, st.engine, "mart", "daily_orders"), 10, 5)
		d3 := snap(daily)
		st.event(t, r5, "build_daily", "COMPLETE", tick(), []dsRef{{name: "raw.orders"}}, []dsRef{{name: "mart.daily_orders", commit: d3}})

		// revenue has an owner to tell.
		if code, body := s.do(t, "PUT", "/api/v1/assets/"+revenueID.String()+"/owners/finance-team", s.Token, `{"kind":"group"}`, nil); code != 200 {
			t.Fatalf("set owner: %d %s", code, body)
		}
		if _, err := s.App.Versions.Resolve(ctx); err != nil {
			t.Fatal(err)
		}

		// Every edge carries the label it was learned by.
		id := func(n int64) string { return strconv.FormatInt(n, 10) }
		for _, c := range []struct {
			run   string
			asset uuid.UUID
			role  string
			ver   string
			label string
		}{
			{r1, ordersID, "input", id(a1), versions.Stated}, {r1, dailyID, "output", id(d1), versions.Stated},
			{r2, dailyID, "input", id(d1), versions.Reported}, {r2, revenueID, "output", id(r1v), versions.Reported},
			{r3, ordersID, "input", id(a2), versions.Inferred}, {r3, dailyID, "output", id(d2), versions.Reported},
			{r4, dailyID, "input", id(d2), versions.Stated}, {r4, revenueID, "output", id(r2v), versions.Reported},
			{r5, ordersID, "input", id(a3), versions.Reported}, {r5, dailyID, "output", id(d3), versions.Stated},
		} {
			rv, err := db.Client.RunVersion.Query().Where(runversion.RunID(c.run), runversion.AssetID(c.asset),
				runversion.RoleEQ(runversion.Role(c.role))).Only(ctx)
			if err != nil {
				t.Fatalf("run %s %s: %v", c.run, c.role, err)
			}
			if rv.Version != c.ver || string(rv.Kind) != c.label || rv.Flagged {
				t.Errorf("run %s %s: got %s %s (%s) flagged=%v, want %s %s", c.run, c.role, rv.Version, rv.Kind, rv.Basis, rv.Flagged, c.ver, c.label)
			}
		}

		// The impact of a2.
		var imp impactAnswer
		path := fmt.Sprintf("/api/v1/assets/%s/versions/%d/impact", ordersID, a2)
		if code, body := s.do(t, "GET", path, s.Token, "", &imp); code != 200 {
			t.Fatalf("impact: %d %s", code, body)
		}
		states := map[uuid.UUID]string{}
		for _, tb := range imp.Tables {
			states[tb.AssetID] = tb.State
		}
		if states[dailyID] != "recovered" || states[revenueID] != "affected" {
			t.Fatalf("impact states %v, want orders_daily recovered and revenue affected: %+v", states, imp)
		}
		if len(imp.Repeat) != 1 || imp.Repeat[0].RunID != r4 || imp.Repeat[0].Job.Name != "build_report" {
			t.Fatalf("runs to repeat %+v, want build_report's run %s only", imp.Repeat, r4)
		}
		if !slices.ContainsFunc(imp.Owners, func(o impactOwner) bool { return o.Principal == "finance-team" }) {
			t.Fatalf("owners to tell %+v, want finance-team", imp.Owners)
		}

		// The provenance of revenue's current version, over the API: back to a2 through the
		// renamed table, each end labelled as it was learned.
		var prov struct {
			Nodes []struct {
				AssetID  uuid.UUID `json:"asset_id"`
				Version  string    `json:"version"`
				NameThen *struct {
					Name string `json:"name"`
				} `json:"name_then"`
			} `json:"nodes"`
			Edges []struct {
				RunID string `json:"run_id"`
				Input struct {
					Label string `json:"label"`
				} `json:"input"`
				Output struct {
					Label string `json:"label"`
				} `json:"output"`
			} `json:"edges"`
		}
		path = fmt.Sprintf("/api/v1/assets/%s/versions/%d/lineage?direction=upstream&depth=5", revenueID, r2v)
		if code, body := s.do(t, "GET", path, s.Token, "", &prov); code != 200 {
			t.Fatalf("provenance: %d %s", code, body)
		}
		labels := map[string]string{}
		for _, e := range prov.Edges {
			labels[e.RunID] = e.Input.Label + "/" + e.Output.Label
		}
		if labels[r4] != "stated/reported" || labels[r3] != "inferred/reported" || len(labels) != 2 {
			t.Fatalf("provenance edges %v, want r4 stated/reported and r3 inferred/reported", labels)
		}
		reachedA2 := false
		for _, n := range prov.Nodes {
			reachedA2 = reachedA2 || (n.AssetID == ordersID && n.Version == id(a2))
		}
		if !reachedA2 {
			t.Fatalf("provenance of revenue's version does not reach a2: %+v", prov.Nodes)
		}

		// Lineage now reaches revenue under the new name; before the rename it shows the
		// former name; before the second job, no revenue.
		var now lineageAnswer
		if code, body := s.do(t, "GET", "/api/v1/assets/"+ordersID.String()+"/lineage?direction=downstream&depth=5", s.Token, "", &now); code != 200 {
			t.Fatalf("lineage: %d %s", code, body)
		}
		if !now.hasID(revenueID) || !now.hasName("mart", "daily_orders") {
			t.Fatalf("lineage now: %+v, want revenue and mart.daily_orders", now)
		}
		// Lineage before the rename shows the former name; before the second job, no revenue.
		var g lineageAnswer
		q := url.Values{"direction": {"downstream"}, "depth": {"5"}, "at": {beforeRename.Format(time.RFC3339Nano)}}
		if code, body := s.do(t, "GET", "/api/v1/assets/"+ordersID.String()+"/lineage?"+q.Encode(), s.Token, "", &g); code != 200 {
			t.Fatalf("lineage at: %d %s", code, body)
		}
		if !g.hasName("mart", "orders_daily") || g.hasName("mart", "daily_orders") {
			t.Fatalf("lineage before the rename: %+v, want the former name mart.orders_daily", g)
		}
		q.Set("at", beforeSecondJob.Format(time.RFC3339Nano))
		g = lineageAnswer{}
		if code, body := s.do(t, "GET", "/api/v1/assets/"+ordersID.String()+"/lineage?"+q.Encode(), s.Token, "", &g); code != 200 {
			t.Fatalf("lineage at: %d %s", code, body)
		}
		if g.hasID(revenueID) {
			t.Fatalf("lineage before the second job ran reaches revenue: %+v", g)
		}

		// Bad input.
		for _, c := range []struct {
			path string
			code int
			says string
		}{
			{fmt.Sprintf("/api/v1/assets/%s/versions/12345/impact", ordersID), 404, "12345"},
			{fmt.Sprintf("/api/v1/assets/%s/versions/%d/lineage?direction=downstream&depth=99", ordersID, a2), 400, "depth"},
			{fmt.Sprintf("/api/v1/assets/%s/versions?limit=100000", ordersID), 400, "limit"},
			{"/api/v1/assets/" + ordersID.String() + "/lineage?at=2999-01-01T00:00:00Z", 400, "at"},
			{"/api/v1/assets/" + ordersID.String() + "/lineage?at=1850-01-01T00:00:00Z", 400, "at"},
		} {
			code, body := s.do(t, "GET", c.path, s.Token, "", nil)
			if code != c.code || !strings.Contains(body, c.says) {
				t.Errorf("GET %s: %d %s, want %d naming %q", c.path, code, body, c.code, c.says)
			}
		}
	})
}

type impactOwner struct {
	Principal string `json:"principal"`
}

type impactAnswer struct {
	Tables []struct {
		AssetID uuid.UUID `json:"asset_id"`
		Name    string    `json:"name"`
		State   string    `json:"state"`
		Reason  string    `json:"reason"`
	} `json:"tables"`
	Repeat []struct {
		RunID string `json:"run_id"`
		Job   struct {
			Name string `json:"name"`
		} `json:"job"`
	} `json:"repeat"`
	Owners []impactOwner `json:"owners"`
}

type lineageAnswer struct {
	Nodes []struct {
		ID        uuid.UUID `json:"id"`
		Namespace string    `json:"namespace"`
		Name      string    `json:"name"`
	} `json:"nodes"`
}

func (g lineageAnswer) hasName(ns, name string) bool {
	return slices.ContainsFunc(g.Nodes, func(n struct {
		ID        uuid.UUID `json:"id"`
		Namespace string    `json:"namespace"`
		Name      string    `json:"name"`
	}) bool {
		return n.Namespace == "iceberg://main" && n.Name == ns+"."+name
	})
}

func (g lineageAnswer) hasID(id uuid.UUID) bool {
	for _, n := range g.Nodes {
		if n.ID == id {
			return true
		}
	}
	return false
}
