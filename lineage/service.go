// Package lineage owns OpenLineage ingest and the lineage graph: parsing events (run, dataset
// and job events, leniently, as real producers send them), resolving every dataset and job to an
// asset ID through catalog, storing runs, edges, column lineage and facets keyed on those IDs,
// and answering traversals from an in-memory adjacency index kept current across replicas.
package lineage

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/storage"
)

// Service ingests OpenLineage events and answers lineage queries.
type Service struct {
	db    *ent.Client
	cat   *catalog.Catalog
	graph *Graph
	now   func() time.Time
	log   *slog.Logger
	slots chan struct{}
	wait  time.Duration
	// sqlite is true on SQLite, where bulk statements buy nothing (no round trips) and some of
	// PostgreSQL's syntax is missing.
	sqlite     bool
	onComplete func(ctx context.Context, runs []CompletedRun) error
	maxNodes   int
	relations  func(ctx context.Context, id uuid.UUID) ([]Relation, error)
	seen       seenNames
	// budget bounds the nodes of the answers in flight (WithBudget); the zero figures are
	// derived from maxNodes in New.
	budget                    *Budget
	budgetTotal, budgetClient int
	budgetWait                time.Duration
	budgetHook                func(ctx context.Context, nodes int)
}

// CompletedRun is a run whose COMPLETE event a batch stored: what it read and wrote.
type CompletedRun struct {
	RunID string
	JobID uuid.UUID
	At    time.Time
	Actor string // the first owner of the job (ownership facet), if the event names one
	// Version is the job's version as the event states it: its sourceCodeLocation facet's
	// version, else its processing_engine run facet's name and version ("" when neither).
	Version string
	Inputs  []DatasetRef
	Outputs []DatasetRef
}

// DatasetRef is a dataset as an event named it, with its asset ID.
type DatasetRef struct {
	ID              uuid.UUID
	Namespace, Name string
	// Version is the version the event states the run read (an input) or produced (an output):
	// InputVersion or OutputVersion; "" when it states none.
	Version string
}

// WithCompletedRuns calls fn, inside the batch's transaction (ctx carries it), with the runs
// that completed in each batch: usage accounting counts their inputs as reads and outputs as
// writes, stored with the events or not at all.
func WithCompletedRuns(fn func(ctx context.Context, runs []CompletedRun) error) Option {
	return func(s *Service) { s.onComplete = fn }
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces time.Now.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithConcurrency bounds concurrent ingests and how long an ingest waits for a slot before it is
// refused with ErrUnavailable (HTTP 503, which OpenLineage clients retry).
func WithConcurrency(n int, wait time.Duration) Option {
	return func(s *Service) { s.slots, s.wait = make(chan struct{}, n), wait }
}

// WithRelations adds, to each lineage answer, the start's relations that are not data flow
// (dataset migrations: the reconcile package records them).
func WithRelations(fn func(ctx context.Context, id uuid.UUID) ([]Relation, error)) Option {
	return func(s *Service) { s.relations = fn }
}

// WithMaxNodes caps the nodes of one lineage answer (DefaultMaxNodes unless set).
func WithMaxNodes(n int) Option { return func(s *Service) { s.maxNodes = n } }

// WithBudget bounds the nodes of the lineage answers in flight: total for the process,
// perClient for one client (see Budget). Zero for either derives it from WithMaxNodes: one
// largest answer per client, four in all (DefaultBudgetClients).
func WithBudget(total, perClient int) Option {
	return func(s *Service) { s.budgetTotal, s.budgetClient = total, perClient }
}

// WithBudgetWait sets how long an answer waits for room in the budget (DefaultBudgetWait).
func WithBudgetWait(d time.Duration) Option { return func(s *Service) { s.budgetWait = d } }

// WithBudgetHook calls fn with each reservation granted, while it is held: a test holds one
// there to see what the next request meets.
func WithBudgetHook(fn func(ctx context.Context, nodes int)) Option {
	return func(s *Service) { s.budgetHook = fn }
}

// DefaultBudgetClients is how many of the largest answers the derived total budget holds at
// once: 4 × 100,000 nodes is about 160 MiB of answers in flight (issue 47 measured about 400
// bytes a node: 32 answers of 99,000 nodes took 1.3 GB), well inside a 1 GiB server.
const DefaultBudgetClients = 4

// New returns a Service; call Open before use.
// The store says which database it is: the SQL differs, and is never guessed.
func New(store *storage.DB, cat *catalog.Catalog, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("lineage: no database")
	}
	if cat == nil {
		return nil, errors.New("lineage: no catalog")
	}
	s := &Service{db: store.Client, sqlite: store.Dialect == dialect.SQLite, cat: cat, now: time.Now, log: slog.Default(),
		slots: make(chan struct{}, 8), wait: 2 * time.Second, maxNodes: DefaultMaxNodes, budgetWait: DefaultBudgetWait}
	for _, o := range opts {
		o(s)
	}
	if s.budgetClient == 0 {
		s.budgetClient = s.maxNodes
		if s.budgetTotal > 0 {
			s.budgetClient = min(s.maxNodes, s.budgetTotal)
		}
	}
	if s.budgetTotal == 0 {
		s.budgetTotal = DefaultBudgetClients * s.budgetClient
	}
	var err error
	if s.budget, err = NewBudget(s.budgetTotal, s.budgetClient, s.budgetWait); err != nil {
		return nil, err
	}
	s.budget.held = s.budgetHook
	s.graph = newGraph(s.db, cat, s.now, s.log)
	return s, nil
}

// Open loads the lineage graph into memory, logs its size, and hands the load's garbage back to
// the system: reading a million nodes leaves several times the graph's size in freed pages,
// which the runtime would otherwise return only slowly, so the process would look (and be
// billed) twice its size.
func (s *Service) Open(ctx context.Context) error {
	start := time.Now()
	if err := s.graph.Sync(ctx); err != nil {
		return err
	}
	f := s.graph.Freshness()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.log.Info("lineage graph loaded", "nodes", f.Nodes, "edges", f.Edges, "took", time.Since(start).String(), "heap_mib", ms.HeapAlloc>>20)
	return nil
}

// Job keeps the in-memory graph current: it loads the graph first if Open has not (retried
// until it is in; lineage answers 503 "loading" meanwhile), then picks up the edges other
// replicas write, polling every interval.
func (s *Service) Job(interval time.Duration) *loop.Job {
	return &loop.Job{Name: "lineage: graph sync", Interval: interval, AtStart: true, Log: s.log, Step: func(ctx context.Context) error {
		if !s.graph.Freshness().Ready {
			return s.Open(ctx)
		}
		return s.graph.Sync(ctx)
	}}
}

// Budget is the node budget of the answers in flight.
func (s *Service) Budget() *Budget { return s.budget }

// Reserve holds nodes of the budget for an answer to client (see Budget.Reserve).
func (s *Service) Reserve(ctx context.Context, client string, nodes int) (*Reservation, error) {
	return s.budget.Reserve(ctx, client, nodes)
}

// Graph exposes the in-memory graph (for freshness figures and benchmarks).
func (s *Service) Graph() *Graph { return s.graph }
