package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

// Service keeps migrations and runs their reconciliations.
type Service struct {
	db     *ent.Client
	cat    *catalog.Catalog
	tables *tables.Service
	usage  *usage.Service
	conns  map[string]*sql.DB // read-only PostgreSQL connections by name
	now    func() time.Time
	log    *slog.Logger
	pairs  pairs
	slots  chan struct{} // the process's run slots (WithMaxRuns)
	// writers finds the runs that wrote an asset during a window (WithWriters).
	writers func(ctx context.Context, asset uuid.UUID, from, to time.Time, limit int) ([]Writer, error)
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces time.Now.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithConnection names a PostgreSQL database a migration's side may be read from. Give it a
// role that can only read: runs open read-only transactions, but the role is the real guard.
func WithConnection(name string, db *sql.DB) Option {
	return func(s *Service) { s.conns[name] = db }
}

// Connections names the PostgreSQL databases a side may be read from, sorted (a form offers them).
func (s *Service) Connections() []string {
	return slices.Sorted(maps.Keys(s.conns))
}

// New returns a Service. tbls reads Iceberg sides; use gives the new asset's busiest write day.
// Either may be nil: without tbls no Iceberg side can be read, without use the busiest day is
// not known.
func New(store *storage.DB, cat *catalog.Catalog, tbls *tables.Service, use *usage.Service, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("reconcile: no database")
	}
	if cat == nil {
		return nil, errors.New("reconcile: no catalog")
	}
	s := &Service{db: store.Client, cat: cat, tables: tbls, usage: use, conns: map[string]*sql.DB{}, now: time.Now, log: slog.New(slog.DiscardHandler),
		slots: make(chan struct{}, DefaultMaxRuns)}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }
