package main

// Where the time of Tidemark's commit goes, step by step, as the server reported it for each
// commit request (warehouse.WithPhaseTimer).

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tidemark/tidemark/bench/internal/benchdb"
)

type phaseTime struct {
	name string
	d    time.Duration
}

// phaseLog keeps the steps of each commit request while a label is set.
type phaseLog struct {
	mu    sync.Mutex
	label string
	by    map[string][][]phaseTime
}

func (l *phaseLog) setLabel(label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.label = label
}

func (l *phaseLog) add(steps []phaseTime) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.label == "" {
		return
	}
	if l.by == nil {
		l.by = map[string][][]phaseTime{}
	}
	l.by[l.label] = append(l.by[l.label], steps)
}

// phaseOrder is the order a commit's steps run in; indented ones are inside the one above.
var phaseOrder = []string{"request", "decode", "commit", "claim", "stage", "prepare", "read-manifests", "record-pending", "write-metadata", "swap", "inventory-rows", "versions", "record-use", "after-commit"}

var phaseInside = map[string]string{"decode": "request", "record-use": "swap", "commit": "request", "claim": "commit", "stage": "commit", "prepare": "commit", "read-manifests": "prepare",
	"record-pending": "commit", "write-metadata": "commit", "swap": "commit", "inventory-rows": "swap", "versions": "swap", "after-commit": "commit"}

// print shows each step's median and mean for every label, and what the request spent in none of
// them ("other": HTTP, middleware and authentication, encoding the answer).
func (l *phaseLog) print(labels ...string) {
	fmt.Printf("\nTidemark's commit request by step (server side, median and mean of each step over the requests (the means add up); steps nest)\n")
	fmt.Printf("%-22s", "step")
	for _, lb := range labels {
		fmt.Printf(" %21s", lb+" p50 / mean")
	}
	fmt.Println()
	med := map[string]map[string]time.Duration{}
	mean := map[string]map[string]time.Duration{}
	for _, lb := range labels {
		med[lb], mean[lb] = map[string]time.Duration{}, map[string]time.Duration{}
		var outside []time.Duration
		for _, name := range phaseOrder {
			var ds []time.Duration
			for _, steps := range l.by[lb] {
				var sum time.Duration
				for _, st := range steps {
					if st.name == name {
						sum += st.d
					}
				}
				ds = append(ds, sum)
			}
			if len(ds) > 0 {
				st := benchdb.Stats(ds)
				med[lb][name], mean[lb][name] = st.P50, st.Mean
			}
		}
		for _, steps := range l.by[lb] {
			var req, commit time.Duration
			for _, st := range steps {
				switch st.name {
				case "request":
					req += st.d
				case "commit", "decode":
					commit += st.d
				}
			}
			outside = append(outside, req-commit)
		}
		if len(outside) > 0 {
			st := benchdb.Stats(outside)
			med[lb]["outside"], mean[lb]["outside"] = st.P50, st.Mean
		}
	}
	for _, name := range slices.Concat(phaseOrder, []string{"outside"}) {
		indent := ""
		for p := phaseInside[name]; p != ""; p = phaseInside[p] {
			indent += "  "
		}
		if name == "outside" {
			indent, name = "  ", "other"
		}
		fmt.Printf("%-22s", indent+name)
		for _, lb := range labels {
			key := name
			if key == "other" {
				key = "outside"
			}
			fmt.Printf(" %21s", fmtDur(med[lb][key])+" / "+fmtDur(mean[lb][key]))
		}
		fmt.Println()
	}
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
