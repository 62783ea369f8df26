package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestLineageBudgetRefusesWithRetryAfter: with a tiny node budget, a large answer held in
// flight leaves no room for the same client's next one, which gets 503 with Retry-After and a
// detail saying to retry; another client (a token) still fits in the whole; once the first is
// written, the retry succeeds whole. A limit over one client's budget is a 400 naming the
// largest allowed.
func TestLineageBudgetRefusesWithRetryAfter(t *testing.T) {
	for _, backend := range storagetest.Backends {
		t.Run(backend, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var first sync.Once
			hold := func(ctx context.Context, nodes int) {
				held := false
				first.Do(func() { held = true })
				if held { // the first answer keeps its reservation until the test lets it go
					close(entered)
					<-release
				}
			}
			db := storagetest.Open(t, backend)
			s := startServer(t, db, func(cfg *handlers.Config, _ *server.Config) {
				lin, err := lineage.New(db, cfg.Catalog, lineage.WithBudget(15, 10), lineage.WithBudgetWait(50*time.Millisecond), lineage.WithBudgetHook(hold))
				if err != nil {
					t.Fatal(err)
				}
				if err := lin.Open(context.Background()); err != nil {
					t.Fatal(err)
				}
				cfg.Lineage = lin
			})
			s.must(t, 201, req{method: "POST", path: "/api/v1/lineage", token: s.Write, body: budgetEvent("budget", "in", "out")})
			path := "/api/v1/lineage?nodeId=dataset:budget:in&limit=10"

			s.must(t, 400, req{method: "GET", path: "/api/v1/lineage?nodeId=dataset:budget:in&limit=11"})
			firstStatus := make(chan int, 1)
			go func() {
				res, err := http.Get(s.URL + path)
				if err != nil {
					firstStatus <- 0
					return
				}
				res.Body.Close()
				firstStatus <- res.StatusCode
			}()
			<-entered

			busy := s.must(t, http.StatusServiceUnavailable, req{method: "GET", path: path})
			if busy.header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if ct := busy.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
				t.Errorf("503 Content-Type = %q, want application/problem+json", ct)
			}
			var p handlers.Problem
			busy.decode(t, &p)
			if !strings.Contains(p.Detail, "retry") {
				t.Errorf("503 detail %q does not say to retry", p.Detail)
			}
			// Another client has a share of its own, and 5 more nodes fit in the whole.
			var other marquezGraph
			s.must(t, 200, req{method: "GET", path: "/api/v1/lineage?nodeId=dataset:budget:in&limit=5", token: s.Read}).decode(t, &other)
			if len(other.Graph) != 3 {
				t.Errorf("another client's answer has %d nodes, want 3: %v", len(other.Graph), other.ids())
			}
			metrics := string(s.must(t, 200, req{method: "GET", path: "/metrics"}).body)
			if !strings.Contains(metrics, "tidemark_lineage_budget_refusals_total 1") ||
				!strings.Contains(metrics, "tidemark_lineage_budget_reserved_nodes 10") {
				t.Errorf("metrics do not show one refusal and the 10 nodes held:\n%s", grepLines(metrics, "tidemark_lineage_budget"))
			}

			close(release)
			if got := <-firstStatus; got != 200 {
				t.Fatalf("the first answer: %d, want 200", got)
			}
			var g struct {
				marquezGraph
				Truncated bool `json:"truncated"`
			}
			s.must(t, 200, req{method: "GET", path: path}).decode(t, &g)
			if len(g.Graph) != 3 || g.Truncated {
				t.Errorf("the retry: %d nodes (truncated %v), want the whole 3: %v", len(g.Graph), g.Truncated, g.ids())
			}
		})
	}
}

// budgetEvent is a completed run of a job reading namespace:in and writing namespace:out.
func budgetEvent(namespace, in, out string) string {
	return fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":"%s","producer":"https://example.com/test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
"run":{"runId":"%s"},"job":{"namespace":"%s","name":"job"},
"inputs":[{"namespace":"%s","name":"%s"}],"outputs":[{"namespace":"%s","name":"%s"}]}`,
		time.Now().UTC().Format(time.RFC3339), uuid.New(), namespace, namespace, in, namespace, out)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
