package lineage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestRunIOAcrossBatches: a run's inputs and outputs are stored whether the run is new in the
// batch (PostgreSQL inserts those without a conflict check) or stored by an earlier one (a later
// event adding an input, and repeating the known ones), and a replayed batch adds nothing.
func TestRunIOAcrossBatches(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lin := mustLineage(t, db, mustCatalog(t, db))
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		ev := func(typ, at string, inputs ...string) []byte {
			ins := ""
			for i, in := range inputs {
				if i > 0 {
					ins += ","
				}
				ins += fmt.Sprintf(`{"namespace":"n","name":%q}`, in)
			}
			return fmt.Appendf(nil, `{"eventType":%q,"eventTime":%q,"run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"inputs":[%s],"outputs":[{"namespace":"n","name":"out"}]}`,
				typ, at, ins)
		}
		first := [][]byte{ev("START", "2024-01-01T00:00:00Z", "a"), ev("RUNNING", "2024-01-01T00:01:00Z", "a", "b")}
		second := [][]byte{ev("COMPLETE", "2024-01-01T00:02:00Z", "a", "b", "c")}
		for _, batch := range [][][]byte{first, second, first, second} {
			items, err := lin.IngestBatch(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.Err != nil {
					t.Fatal(it.Err)
				}
			}
		}
		v, err := lin.Run(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var ins, outs []string
		for _, d := range v.Inputs {
			ins = append(ins, d.Asset.Name)
		}
		for _, d := range v.Outputs {
			outs = append(outs, d.Asset.Name)
		}
		slices.Sort(ins)
		if !slices.Equal(ins, []string{"a", "b", "c"}) || v.MoreInputs != 0 || !slices.Equal(outs, []string{"out"}) {
			t.Errorf("inputs %v (and %d more), outputs %v; want [a b c] and [out]", ins, v.MoreInputs, outs)
		}
		if len(v.States) != 3 {
			t.Errorf("%d states, want 3 (the replays are duplicates)", len(v.States))
		}
	})
}
