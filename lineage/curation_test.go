package lineage_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

func TestTag(t *testing.T) {
	cases := []struct{ key, value, want string }{
		{"pii", "email", "pii.email"},
		{"PII", "Email", "pii.email"},
		{"certified", "true", "certified"},
		{"Certified", "TRUE", "certified"},
		{"owner", "", "owner"},
		{"owner", "@user1", "owner._user1"},
		{"env", "production", "env.production"},
		{"dbt.meta", "a b", "dbt_meta.a_b"},
		{" team ", " Data Eng ", "team.data_eng"},
		{"größe", "x", "gr__e.x"},
		{"", "x", ".x"}, // refused by the catalog: skipped
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			if got := lineage.Tag(tc.key, tc.value); got != tc.want {
				t.Fatalf("Tag(%q, %q) = %q, want %q", tc.key, tc.value, got, tc.want)
			}
		})
	}
}

// curationEvent reads a fixture from testdata/curation; set replaces top-level fields
// (eventTime, run) the way a producer would send a later event of the same shape.
func curationEvent(t *testing.T, name string, set map[string]any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "curation", name))
	if err != nil {
		t.Fatal(err)
	}
	if len(set) == 0 {
		return b
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		ev[k] = v
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type curationFixture struct {
	ctx context.Context
	cat *catalog.Catalog
	lin *lineage.Service
}

func newCurationFixture(t *testing.T, db *storage.DB) curationFixture {
	t.Helper()
	ctx := context.Background()
	cat := mustCatalog(t, db)
	if err := cat.EnsureClassifications(ctx); err != nil {
		t.Fatal(err)
	}
	lin := mustLineage(t, db, cat)
	if err := lin.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return curationFixture{ctx, cat, lin}
}

// ingestBatch ingests raws in one batch, failing the test on any error.
func (f curationFixture) ingestBatch(t *testing.T, raws ...[]byte) {
	t.Helper()
	items, err := f.lin.IngestBatch(f.ctx, raws)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
	}
}

func (f curationFixture) ingest(t *testing.T, ev []byte) lineage.IngestResult {
	t.Helper()
	res, err := f.lin.Ingest(f.ctx, ev)
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	return res
}

func (f curationFixture) asset(t *testing.T, ns, name string) catalog.Asset {
	t.Helper()
	r, err := f.cat.Resolve(f.ctx, ns, name)
	if err != nil {
		t.Fatalf("resolve %s %s: %v", ns, name, err)
	}
	return r.Asset
}

// columns maps current column paths to their records.
func (f curationFixture) columns(t *testing.T, id uuid.UUID) map[string]catalog.Column {
	t.Helper()
	cols, err := f.cat.Columns(f.ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]catalog.Column{}
	for _, c := range cols {
		out[c.Path] = c
	}
	return out
}

func paths(cols []catalog.Column) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Path)
	}
	return out
}

// tags lists the asset's current tags as "column:tag@source" ("" column for the asset), sorted.
func (f curationFixture) tags(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	ls, err := f.cat.Labels(f.ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		if l.Kind == catalog.LabelTag {
			out = append(out, l.Column+":"+l.Value+"@"+string(l.Source))
		}
	}
	slices.Sort(out)
	return out
}

func changeOps(ch catalog.SchemaChange) []string {
	var out []string
	for _, c := range ch.Changes {
		out = append(out, c.Op+" "+c.Path)
	}
	slices.Sort(out)
	return out
}

const customersNS, customersName = "file", "/warehouse/crm/customers"

var (
	tagsV1 = []string{":certified@openlineage", ":tier.gold@openlineage", "address.city:pii.address@openlineage", "email:pii.email@openlineage"}
	tagsV2 = []string{":certified@openlineage", ":tier.gold@openlineage", "address.city:pii.address@openlineage"}
)

// TestSchemaFacetColumns: a schema facet becomes the dataset's columns (nested fields as dotted
// paths, in the facet's order); a later changed schema is recorded as a schema change; an older
// event does not take the columns back; an unchanged schema costs the asset nothing.
func TestSchemaFacetColumns(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		f.ingest(t, curationEvent(t, "customers_v1.json", nil))
		a := f.asset(t, customersNS, customersName)
		cols, err := f.cat.Columns(f.ctx, a.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := paths(cols), []string{"id", "email", "address", "address.city", "address.zip"}; !slices.Equal(got, want) {
			t.Fatalf("columns %v, want %v", got, want)
		}
		for i, c := range cols {
			if c.Ordinal != i || c.FieldID != nil {
				t.Errorf("column %s: ordinal %d, field ID %v; want %d and none", c.Path, c.Ordinal, c.FieldID, i)
			}
		}
		if cols[0].Type != "long" || cols[0].SourceDoc != "Customer key" || cols[2].Type != "struct" {
			t.Errorf("types and docs: %+v", cols)
		}
		// The input has no schema facet: no columns.
		if in := f.columns(t, f.asset(t, "file", "/tmp/raw/customers").ID); len(in) != 0 {
			t.Errorf("input without a schema facet has columns %v", in)
		}

		f.ingest(t, curationEvent(t, "customers_v2.json", nil))
		now := f.columns(t, a.ID)
		if _, ok := now["address.zip"]; ok || now["phone"].Path == "" {
			t.Fatalf("after v2: %v", now)
		}
		if now["email"].ID != cols[1].ID {
			t.Fatalf("email is a new column record after v2")
		}
		hist, err := f.cat.SchemaHistory(f.ctx, a.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 2 || hist[0].Source != string(catalog.SourceOpenLineage) {
			t.Fatalf("schema history: %+v", hist)
		}
		if got, want := changeOps(hist[0]), []string{"added phone", "removed address.zip"}; !slices.Equal(got, want) {
			t.Fatalf("newest schema change %v, want %v", got, want)
		}

		// An event older than v2 (a late delivery of another run) does not bring zip back.
		late := curationEvent(t, "customers_v1.json", map[string]any{"eventTime": "2024-08-06T20:00:00Z",
			"run": map[string]any{"runId": "0191287a-1b4e-7d2c-9a51-3f3c2f1e00ff"}})
		f.ingest(t, late)
		if _, ok := f.columns(t, a.ID)["address.zip"]; ok {
			t.Fatal("an older event's schema replaced a newer one")
		}

		// The same schema and tags again (a new run): nothing to record, no new asset version.
		before := f.asset(t, customersNS, customersName)
		again := curationEvent(t, "customers_v2.json", map[string]any{"eventTime": "2024-08-09T00:00:00Z",
			"run": map[string]any{"runId": "0191287a-1b4e-7d2c-9a51-3f3c2f1e0010"}})
		f.ingest(t, again)
		if after := f.asset(t, customersNS, customersName); after.Version != before.Version {
			t.Fatalf("an unchanged schema and tags moved the asset from version %d to %d", before.Version, after.Version)
		}
	})
}

// TestTagsFacet: the tags facet's entries become OpenLineage tags on the dataset and its columns;
// a later facet without one takes it off; a person's tag stays; tags the catalog refuses are
// skipped without failing the event.
func TestTagsFacet(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		res := f.ingest(t, curationEvent(t, "customers_v1.json", nil))
		if len(res.Warnings) != 0 {
			t.Errorf("warnings: %v", res.Warnings)
		}
		a := f.asset(t, customersNS, customersName)
		if got := f.tags(t, a.ID); !slices.Equal(got, tagsV1) {
			t.Fatalf("tags after v1:\n%v\nwant\n%v", got, tagsV1)
		}
		email := f.columns(t, a.ID)["email"]
		if _, err := f.cat.AddLabel(f.ctx, a.ID, catalog.AnyVersion, catalog.LabelInput{ColumnID: email.ID, Kind: catalog.LabelTag, Value: "reviewed"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.cat.AddLabel(f.ctx, a.ID, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: "finance"}); err != nil {
			t.Fatal(err)
		}

		// v2 drops email's pii.email and carries refused tags: pii.ssn (not a pii value), an
		// empty key, a column the dataset does not have.
		res, err := f.lin.Ingest(f.ctx, curationEvent(t, "customers_v2.json", nil))
		if err != nil || res.Duplicate {
			t.Fatalf("v2 with refused tags: %+v %v", res, err)
		}
		want := append([]string{":finance@person", "email:reviewed@person"}, tagsV2...)
		slices.Sort(want)
		if got := f.tags(t, a.ID); !slices.Equal(got, want) {
			t.Fatalf("tags after v2:\n%v\nwant\n%v", got, want)
		}
		hist, err := f.cat.Labels(f.ctx, a.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(hist, func(l catalog.Label) bool {
			return l.Value == "pii.email" && l.ColumnID == email.ID && l.RemovedAt != nil
		}) {
			t.Fatalf("pii.email on email is not in the history as removed: %+v", hist)
		}
	})
}

// TestTagsFollowColumns: a tag on a column the schema drops goes with it, and comes back on the
// column when a later schema has it again, though the tags facet never changed.
func TestTagsFollowColumns(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		v1 := curationEvent(t, "customers_v1.json", nil)
		f.ingest(t, v1)
		a := f.asset(t, customersNS, customersName)
		var ev map[string]any
		if err := json.Unmarshal(v1, &ev); err != nil {
			t.Fatal(err)
		}
		out := ev["outputs"].([]any)[0].(map[string]any)
		schema := out["facets"].(map[string]any)["schema"].(map[string]any)
		fields := schema["fields"].([]any)
		schema["fields"] = slices.Concat(fields[:1], fields[2:]) // without email
		ev["eventTime"], ev["run"] = "2024-08-06T14:00:00Z", map[string]any{"runId": "0191287a-1b4e-7d2c-9a51-3f3c2f1e0020"}
		without, _ := json.Marshal(ev)
		f.ingest(t, without)
		if got := f.tags(t, a.ID); slices.Contains(got, "email:pii.email@openlineage") {
			t.Fatalf("the dropped column keeps its tag: %v", got)
		}
		schema["fields"] = fields
		ev["eventTime"], ev["run"] = "2024-08-06T15:00:00Z", map[string]any{"runId": "0191287a-1b4e-7d2c-9a51-3f3c2f1e0021"}
		with, _ := json.Marshal(ev)
		f.ingest(t, with)
		if got := f.tags(t, a.ID); !slices.Equal(got, tagsV1) {
			t.Fatalf("tags after email came back:\n%v\nwant\n%v", got, tagsV1)
		}
	})
}

// TestCurationBatch: the batch path records schemas and tags as single events do; events of one
// dataset in one batch are recorded once, from the newest.
func TestCurationBatch(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		v1 := curationEvent(t, "customers_v1.json", nil)
		// Another dataset written by another run (one run's events are recognised by run, type
		// and time).
		other := rename(curationEvent(t, "customers_v1.json", map[string]any{"run": map[string]any{"runId": "0191287a-1b4e-7d2c-9a51-3f3c2f1e0040"}}),
			"/warehouse/crm/prospects")
		items, err := f.lin.IngestBatch(f.ctx, [][]byte{v1, other})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
		for _, name := range []string{customersName, "/warehouse/crm/prospects"} {
			a := f.asset(t, customersNS, name)
			if got := len(f.columns(t, a.ID)); got != 5 {
				t.Errorf("%s: %d columns, want 5", name, got)
			}
			if got := f.tags(t, a.ID); !slices.Equal(got, tagsV1) {
				t.Errorf("%s: tags %v, want %v", name, got, tagsV1)
			}
		}
		if _, err := f.lin.IngestBatch(f.ctx, [][]byte{curationEvent(t, "customers_v2.json", nil)}); err != nil {
			t.Fatal(err)
		}
		a := f.asset(t, customersNS, customersName)
		if got := f.tags(t, a.ID); !slices.Equal(got, tagsV2) {
			t.Fatalf("tags after a batch with v2: %v, want %v", got, tagsV2)
		}
		hist, err := f.cat.SchemaHistory(f.ctx, a.ID, 10)
		if err != nil || len(hist) != 2 {
			t.Fatalf("schema history after the batches: %+v %v", hist, err)
		}

		// Both versions of a third dataset in one batch, newest first: recorded once, as v2.
		run := func(id string) map[string]any { return map[string]any{"run": map[string]any{"runId": id}} }
		leadsV2 := rename(curationEvent(t, "customers_v2.json", run("0191287a-1b4e-7d2c-9a51-3f3c2f1e0042")), "/warehouse/crm/leads")
		leadsV1 := rename(curationEvent(t, "customers_v1.json", run("0191287a-1b4e-7d2c-9a51-3f3c2f1e0041")), "/warehouse/crm/leads")
		if _, err := f.lin.IngestBatch(f.ctx, [][]byte{leadsV2, leadsV1}); err != nil {
			t.Fatal(err)
		}
		leads := f.asset(t, customersNS, "/warehouse/crm/leads")
		if got := f.tags(t, leads.ID); !slices.Equal(got, tagsV2) {
			t.Fatalf("leads tags %v, want %v", got, tagsV2)
		}
		cols, _ := f.cat.Columns(f.ctx, leads.ID, true)
		if got, want := paths(cols), []string{"id", "email", "phone", "address", "address.city"}; !slices.Equal(got, want) {
			t.Fatalf("leads columns (with history) %v, want %v", got, want)
		}
		if hist, _ := f.cat.SchemaHistory(f.ctx, leads.ID, 10); len(hist) != 1 {
			t.Fatalf("leads schema history: %+v; want one change", hist)
		}
	})
}

// rename names the output customers name instead.
func rename(ev []byte, name string) []byte {
	return []byte(strings.ReplaceAll(string(ev), customersName, name))
}

// TestRenameKeepsColumnsAndTags: a RENAME (lifecycleStateChange with previousIdentifier) keeps
// the asset, so its column records, their descriptions and tags stay.
func TestRenameKeepsColumnsAndTags(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		f.ingest(t, curationEvent(t, "customers_v1.json", nil))
		a := f.asset(t, customersNS, customersName)
		before := f.columns(t, a.ID)
		if _, err := f.cat.SetColumnDescription(f.ctx, a.ID, catalog.AnyVersion, before["email"].ID, "Where receipts go."); err != nil {
			t.Fatal(err)
		}
		res := f.ingest(t, curationEvent(t, "customers_rename.json", nil))
		if len(res.Warnings) != 0 {
			t.Fatalf("rename warnings: %v", res.Warnings)
		}
		renamed := f.asset(t, customersNS, "/warehouse/crm/clients")
		if renamed.ID != a.ID {
			t.Fatalf("the rename made asset %s; want %s kept", renamed.ID, a.ID)
		}
		after := f.columns(t, a.ID)
		if len(after) != len(before) {
			t.Fatalf("columns after the rename: %v", after)
		}
		for p, c := range before {
			if after[p].ID != c.ID {
				t.Errorf("column %s is a new record after the rename", p)
			}
		}
		if after["email"].Description != "Where receipts go." {
			t.Errorf("email's description after the rename: %q", after["email"].Description)
		}
		if got := f.tags(t, a.ID); !slices.Equal(got, tagsV1) {
			t.Fatalf("tags after the rename: %v, want %v", got, tagsV1)
		}
	})
}

// TestUnusableSchema: a schema the catalog refuses (a field name with a control character) is
// a warning; the event and its lineage are stored, and the columns recorded before stay.
func TestUnusableSchema(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		f.ingest(t, curationEvent(t, "customers_v1.json", nil))
		a := f.asset(t, customersNS, customersName)
		ev := []byte(`{"eventType":"COMPLETE","eventTime":"2024-08-07T00:00:00Z","producer":"p","run":{"runId":"0191287a-1b4e-7d2c-9a51-3f3c2f1e0030"},
			"job":{"namespace":"crm","name":"bad"},"inputs":[],"outputs":[{"namespace":"file","name":"/warehouse/crm/customers",
			"facets":{"schema":{"fields":[{"name":"id","type":"long"},{"name":"bad\u0001name","type":"string"}]},"tags":{"tags":[{"key":"pii","value":"email","field":"id"}]}}}]}`)
		res, err := f.lin.Ingest(f.ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "not recorded as columns") {
			t.Fatalf("warnings %v; want one about the schema", res.Warnings)
		}
		if got := len(f.columns(t, a.ID)); got != 5 {
			t.Fatalf("%d columns after a refused schema; want the 5 recorded before", got)
		}
		if got := f.tags(t, a.ID); !slices.Equal(got, []string{"id:pii.email@openlineage"}) {
			t.Fatalf("tags after a refused schema: %v", got)
		}
	})
}
