package lineage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestRunView: a run's view has its job named, its events in event time order whatever order
// they arrived in, its inputs and outputs bounded with the rest counted, and its parent marked
// known only when the parent run is recorded.
func TestRunView(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lin := mustLineage(t, db, mustCatalog(t, db))
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var ins []string
		for i := range lineage.MaxRunDatasets + 3 {
			ins = append(ins, fmt.Sprintf(`{"namespace":"n","name":"in%03d"}`, i))
		}
		ev := func(typ, at, run, parent string) string {
			facets := "{}"
			if parent != "" {
				facets = fmt.Sprintf(`{"parent":{"run":{"runId":%q},"job":{"namespace":"n","name":"parent"}}}`, parent)
			}
			return fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"run":{"runId":%q,"facets":%s},"job":{"namespace":"n","name":"j"},"inputs":[%s],"outputs":[{"namespace":"n","name":"out"}]}`,
				typ, at, run, facets, strings.Join(ins, ","))
		}
		// COMPLETE arrives first: the view lists events by their time, not their arrival.
		for _, e := range []string{ev("COMPLETE", "2024-01-01T00:10:00Z", "r1", "gone"), ev("START", "2024-01-01T00:00:00Z", "r1", "gone"),
			ev("RUNNING", "2024-01-01T00:05:00Z", "r1", "gone"), ev("COMPLETE", "2024-01-01T01:00:00Z", "r2", "r1")} {
			if _, err := lin.Ingest(ctx, []byte(e)); err != nil {
				t.Fatal(err)
			}
		}
		v, err := lin.Run(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var states []string
		for _, s := range v.States {
			states = append(states, s.State)
		}
		if !slices.Equal(states, []string{"START", "RUNNING", "COMPLETE"}) {
			t.Errorf("states %v", states)
		}
		if v.Job.Name != "j" || len(v.Inputs) != lineage.MaxRunDatasets || v.MoreInputs != 3 || len(v.Outputs) != 1 || v.Outputs[0].Asset.Name != "out" {
			t.Errorf("job %q, %d inputs and %d more, outputs %+v", v.Job.Name, len(v.Inputs), v.MoreInputs, v.Outputs)
		}
		if !slices.IsSortedFunc(v.Inputs, func(a, b lineage.RunDataset) int { return strings.Compare(a.Asset.Name, b.Asset.Name) }) {
			t.Errorf("inputs are not in name order")
		}
		if v.ParentRunID != "gone" || v.ParentKnown {
			t.Errorf("parent %q known %v", v.ParentRunID, v.ParentKnown)
		}
		if v2, err := lin.Run(ctx, "r2"); err != nil || !v2.ParentKnown {
			t.Errorf("r2's parent r1 is recorded: %v %v", v2.ParentKnown, err)
		}
		for _, id := range []string{"nope", "", strings.Repeat("r", lineage.MaxRunIDBytes+1)} {
			if _, err := lin.Run(ctx, id); !errors.Is(err, catalog.ErrNotFound) {
				t.Errorf("run %.20q: %v, want not found", id, err)
			}
		}
	})
}

// TestRunsOfPage: a run that reads and writes the same dataset is counted once; a cursor that is
// not one is refused; a job page of an asset that is not a job is not found.
func TestRunsOfPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		lin := mustLineage(t, db, cat)
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		ev := `{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"self"},"job":{"namespace":"n","name":"dedupe"},
			"inputs":[{"namespace":"n","name":"t"}],"outputs":[{"namespace":"n","name":"t"}]}`
		if _, err := lin.Ingest(ctx, []byte(ev)); err != nil {
			t.Fatal(err)
		}
		ref, ok, err := cat.Lookup(ctx, catalog.SpaceDataset, "n", "t")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		p, err := lin.RunsOfPage(ctx, ref.ID, "", 20)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != 1 || len(p.Runs) != 1 || p.Runs[0].Job.Name != "dedupe" || p.Next != "" {
			t.Errorf("page %+v", p)
		}
		for _, c := range []string{"garbage", "12~", "x~1"} {
			if _, err := lin.RunsOfPage(ctx, ref.ID, c, 20); !errors.Is(err, catalog.ErrInvalid) {
				t.Errorf("cursor %q: %v", c, err)
			}
		}
		if _, err := lin.JobDetail(ctx, ref.ID); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("a table's job view: %v", err)
		}
	})
}
