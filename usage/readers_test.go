package usage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/usage"
)

// TestJobReaders: the jobs whose runs read and wrote a table are counted and named, most reads
// first, past the limit too; a run retried counts once; days outside the range do not count.
func TestJobReaders(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tbl := e.create(t, "w", "t")
		e.clock.Set(t0.Add(10 * 24 * time.Hour))
		var jobs []catalog.Asset
		for i := range 4 {
			res, err := e.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindJob, Namespace: "etl", Name: fmt.Sprintf("job%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, res.Asset)
		}
		seen := []usage.Seen{{ID: tbl.ID, Namespace: "w", Name: "t"}}
		var runs []usage.RunUsage
		// job0 reads 3 times, job1 twice, job2 once and writes once; job3 only writes.
		for i, n := range []int{3, 2, 1} {
			for k := range n {
				runs = append(runs, usage.RunUsage{RunID: fmt.Sprintf("r%d-%d", i, k), JobID: jobs[i].ID, At: t0.Add(9 * 24 * time.Hour), Inputs: seen})
			}
		}
		runs = append(runs, usage.RunUsage{RunID: "w2", JobID: jobs[2].ID, At: t0.Add(9 * 24 * time.Hour), Outputs: seen},
			usage.RunUsage{RunID: "w3", JobID: jobs[3].ID, At: t0.Add(9 * 24 * time.Hour), Outputs: seen},
			usage.RunUsage{RunID: "old", JobID: jobs[3].ID, At: t0.Add(2 * 24 * time.Hour), Inputs: seen})
		for range 2 { // a retried batch counts once
			if err := e.use.FromRuns(ctx, runs); err != nil {
				t.Fatal(err)
			}
		}
		got, err := e.use.JobReaders(ctx, tbl.ID, t0.Add(5*24*time.Hour), t0.Add(10*24*time.Hour), 2)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != 4 || got.Readers != 3 || got.Writers != 2 || len(got.Jobs) != 2 {
			t.Fatalf("total %d readers %d writers %d listed %d; want 4, 3, 2, 2", got.Total, got.Readers, got.Writers, len(got.Jobs))
		}
		if j := got.Jobs[0]; j.Job.Name != "job0" || j.Reads != 3 || j.Writes != 0 {
			t.Errorf("first %+v, want job0 with 3 reads", j)
		}
		if j := got.Jobs[1]; j.Job.Name != "job1" || j.Reads != 2 {
			t.Errorf("second %+v, want job1 with 2 reads", j)
		}
		if _, err := e.use.JobReaders(ctx, tbl.ID, t0, t0, usage.MaxJobReaders+1); !errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("a limit past the bound: %v", err)
		}
	})
}
