package main

// The timed part: one-file appends, one at a time, sides alternating; then concurrent writers.

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/bench/internal/benchdb"
)

// appends times runs one-file appends per table and side. Each run commits to the small table
// then the large one, and the side that goes first alternates from run to run.
func appends(ctx context.Context, sides []*side, tabs map[string]map[string]*table.Table, sizes map[string]int, runs int, phases *phaseLog) {
	type key struct{ side, table, what string }
	lat := map[key][]time.Duration{}
	fmt.Printf("\none-file append, end to end as the writer sees it (AddDataFiles + Commit), %d runs per table and side, sides alternating\n", runs)
	fmt.Printf("%-4s %-6s %-9s %9s %12s %12s %12s\n", "run", "table", "side", "files", "append", "CommitTable", "POST")
	for i := range runs {
		for _, name := range []string{"small", "large"} {
			order := slices.Clone(sides)
			if i%2 == 1 {
				slices.Reverse(order)
			}
			for _, sd := range order {
				if sd.post != nil {
					phases.setLabel(name)
				}
				start := time.Now()
				pprof.Do(ctx, pprof.Labels("writer", sd.name), func(ctx context.Context) {
					tabs[sd.name][name] = addFiles(ctx, tabs[sd.name][name], name, sizes[name]+i, 1)
				})
				e2e := time.Since(start)
				phases.setLabel("")
				call := sd.cat.lastCommit()
				lat[key{sd.name, name, "append"}] = append(lat[key{sd.name, name, "append"}], e2e)
				lat[key{sd.name, name, "call"}] = append(lat[key{sd.name, name, "call"}], call)
				post := "-"
				if sd.post != nil {
					d := sd.post.lastPost()
					lat[key{sd.name, name, "post"}] = append(lat[key{sd.name, name, "post"}], d)
					post = fmtDur(d)
				}
				fmt.Printf("%-4d %-6s %-9s %9d %12s %12s %12s\n", i+1, name, sd.name, sizes[name]+i, fmtDur(e2e), fmtDur(call), post)
			}
		}
	}
	fmt.Printf("\nmedians (ratio: Tidemark's time over the SQL catalog's; the goal is at most 2x)\n")
	fmt.Printf("%-6s %9s %-12s %12s %12s %8s\n", "table", "files", "what", "tidemark", "sqlcat", "ratio")
	for _, name := range []string{"small", "large"} {
		for _, what := range []string{"append", "call"} {
			t := benchdb.Stats(lat[key{"tidemark", name, what}]).P50
			s := benchdb.Stats(lat[key{"sqlcat", name, what}]).P50
			label := map[string]string{"append": "append", "call": "CommitTable"}[what]
			fmt.Printf("%-6s %9d %-12s %12s %12s %7.2fx\n", name, sizes[name], label, fmtDur(t), fmtDur(s), float64(t)/float64(s))
		}
		fmt.Printf("%-6s %9d %-12s %12s %12s\n", name, sizes[name], "POST", fmtDur(benchdb.Stats(lat[key{"tidemark", name, "post"}]).P50), "-")
	}
}

// concurrent runs rounds of writers (one a table, appending one file a commit in a loop for d)
// on each side, sides alternating, and prints commits a second.
func concurrent(ctx context.Context, sides []*side, wt map[string][]*table.Table, from, rounds int, d time.Duration, phases *phaseLog) {
	fmt.Printf("\n%d concurrent writers, each appending one file a commit to its own table for %s a round, sides alternating\n", len(wt[sides[0].name]), d)
	fmt.Printf("%-6s %-9s %8s %10s %12s\n", "round", "side", "commits", "commits/s", "median")
	next := map[string]int{}
	cps := map[string][]float64{}
	for r := range rounds {
		order := slices.Clone(sides)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, sd := range order {
			if sd.post != nil {
				phases.setLabel("concurrent")
			}
			var (
				n       int
				elapsed time.Duration
				lat     []time.Duration
			)
			pprof.Do(ctx, pprof.Labels("writer", sd.name), func(ctx context.Context) {
				n, elapsed, lat = writeFor(ctx, wt[sd.name], from+next[sd.name], d)
			})
			phases.setLabel("")
			next[sd.name] += n // file names stay new: every writer's counter starts past the last round's
			c := float64(n) / elapsed.Seconds()
			cps[sd.name] = append(cps[sd.name], c)
			fmt.Printf("%-6d %-9s %8d %10.1f %12s\n", r+1, sd.name, n, c, fmtDur(benchdb.Stats(lat).P50))
		}
	}
	t, s := medianF(cps["tidemark"]), medianF(cps["sqlcat"])
	fmt.Printf("median commits/s: tidemark %.1f, sqlcat %.1f; Tidemark's time a commit over the SQL catalog's: %.2fx (goal: at most 2x)\n", t, s, s/t)
}

// writeFor runs one writer per table for d and returns the commits made, the time until the
// last writer stopped, and each commit's latency.
func writeFor(ctx context.Context, tbls []*table.Table, from int, d time.Duration) (int, time.Duration, []time.Duration) {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		n   int
		lat []time.Duration
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := range tbls {
		wg.Go(func() {
			k := 0
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				tbls[i] = addFiles(ctx, tbls[i], fmt.Sprintf("w%d", i), from+k, 1)
				mine = append(mine, time.Since(t0))
				k++
			}
			mu.Lock()
			n += k
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return n, time.Since(start), lat
}

func medianF(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
