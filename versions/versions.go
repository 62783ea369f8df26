// Package versions owns dataset versions and runs pinned to them: every version of an asset
// (an Iceberg snapshot, or an OpenLineage datasetVersion) keyed on the asset ID, which version
// of each input a run read and of each output it produced (each edge labelled with how Tidemark
// knows it), and the questions asked of them: an asset's timeline, a version's provenance and
// descendants, and the blast radius of a bad version.
package versions

import (
	"errors"
	"log/slog"
	"time"

	"entgo.io/ent/dialect"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
)

// Where a version was learned (DatasetVersion.source).
const (
	SourceCommit      = "commit"      // a commit through Tidemark's Iceberg REST catalog
	SourceSync        = "sync"        // a catalog sync read the table's snapshots
	SourceInspection  = "inspection"  // an inspection of a registered or synced table
	SourceOpenLineage = "openlineage" // only a run stated it
)

// Labels of a run's edge to a version: how Tidemark knows which version the run read or wrote.
const (
	Stated   = "stated"   // an OpenLineage facet of the run's events named it
	Reported = "reported" // a scan report or a commit through the REST catalog named it
	Inferred = "inferred" // no source named it; the rule picked the only candidate
	Unknown  = "unknown"  // no source named it and the rule found none or several candidates
)

// Roles of a run's edge.
const (
	Input  = "input"
	Output = "output"
)

// RunIDProperty is the snapshot summary property through which a commit names the OpenLineage
// run that made it; such a commit is joined to that run exactly.
const RunIDProperty = "openlineage.run-id"

// Service records and answers versions.
type Service struct {
	db     *ent.Client
	sqlite bool
	cat    *catalog.Catalog
	now    func() time.Time
	log    *slog.Logger
	// the resolver (resolve.go)
	dirty        dirtySet
	resolveEvery time.Duration
	resolveLag   time.Duration
	// maxNodes bounds the versions one walk collects (WithMaxNodes; 0 means DefaultMaxNodes).
	maxNodes int
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithResolver sets how often the resolver runs and how recent an event it leaves to the next
// step (see resolve.go).
func WithResolver(every, lag time.Duration) Option {
	return func(s *Service) { s.resolveEvery, s.resolveLag = every, lag }
}

// New returns the service over the store.
func New(store *storage.DB, cat *catalog.Catalog, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("versions: no database")
	}
	if cat == nil {
		return nil, errors.New("versions: no catalog")
	}
	s := &Service{db: store.Client, sqlite: store.Dialect == dialect.SQLite, cat: cat, now: time.Now, log: slog.Default(),
		resolveEvery: DefaultResolveInterval, resolveLag: DefaultResolveLag}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}
