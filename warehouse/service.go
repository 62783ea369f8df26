package warehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/versions"
)

// Service serves the configured warehouses over the Iceberg REST catalog protocol: their
// namespaces, their tables' pointers and every commit to them.
type Service struct {
	db      *ent.Client
	dialect string // the store's SQL dialect (statements built by hand: inventory.go)
	cat     *catalog.Catalog
	tables  *tables.Service
	now     func() time.Time
	log     *slog.Logger
	limit   int64 // the largest metadata file read (the tables service's file limit)

	warehouses []tables.Warehouse
	// metaCache keeps parsed metadata files of served tables by location: a metadata file is
	// never rewritten, so a location names the same metadata forever.
	metaCache *metaCache
	lists     *listCache // manifests of committed manifest lists (listcache.go)
	faults    Faults     // injected failures (tests)
	stale     stale      // served tables to inspect again
	versions  *versions.Service
	// viewIngest takes the OpenLineage event of a view's stated inputs (views_lineage.go).
	viewIngest func(ctx context.Context, event []byte) error
	sts        func(w tables.Warehouse) AssumeRoler // makes a warehouse's STS client (signing_vend.go)
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// Faults are failures injected by tests.
type Faults struct {
	// BeforeSwap runs after the new metadata files are written and before the pointers are
	// swapped; an error stands for the process stopping there.
	BeforeSwap func(ctx context.Context, newLocations []string) error
}

// WithFaults injects failures (tests).
func WithFaults(f Faults) Option { return func(s *Service) { s.faults = f } }

// New returns a Service serving the warehouses tbl is configured with (tables.WithWarehouses),
// and registers it with tbl: tables' own changes of a served table (Drop, RemoveSnapshots)
// commit through it.
func New(store *storage.DB, cat *catalog.Catalog, tbl *tables.Service, opts ...Option) (*Service, error) {
	if store == nil || cat == nil || tbl == nil {
		return nil, errors.New("warehouse: a store, a catalog and a tables service are needed")
	}
	s := &Service{db: store.Client, dialect: store.Dialect, cat: cat, tables: tbl, now: time.Now, log: slog.New(slog.DiscardHandler), limit: tbl.FileLimit(),
		warehouses: tbl.Warehouses(), metaCache: newMetaCache(DefaultMetadataCacheBytes), lists: newListCache(DefaultListCacheBytes)}
	for _, o := range opts {
		o(s)
	}
	tbl.SetServed(served{s})
	return s, nil
}

// Warehouses returns the served warehouses.
func (s *Service) Warehouses() []tables.Warehouse { return slices.Clone(s.warehouses) }

// Warehouse returns a served warehouse by name.
func (s *Service) Warehouse(name string) (tables.Warehouse, bool) {
	for _, w := range s.warehouses {
		if w.Name == name {
			return w, true
		}
	}
	return tables.Warehouse{}, false
}

func (s *Service) warehouse(name string) (tables.Warehouse, error) {
	w, ok := s.Warehouse(name)
	if !ok {
		return w, serveErr(ErrNoSuchWarehouse, "no warehouse is named %q", name)
	}
	return w, nil
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// tx runs fn in a transaction.
func (s *Service) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the cause is what matters
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("warehouse: commit: %w", err)
	}
	return nil
}

// The errors of the served catalog: each wraps the catalog kind the API maps to a status.
var (
	ErrNoSuchWarehouse   = fmt.Errorf("warehouse: no such warehouse: %w", catalog.ErrNotFound)
	ErrNoSuchNamespace   = fmt.Errorf("warehouse: no such namespace: %w", catalog.ErrNotFound)
	ErrNoSuchTable       = fmt.Errorf("warehouse: no such table: %w", catalog.ErrNotFound)
	ErrAlreadyExists     = fmt.Errorf("warehouse: already exists: %w", catalog.ErrConflict)
	ErrNamespaceNotEmpty = fmt.Errorf("warehouse: namespace not empty: %w", catalog.ErrConflict)
	// ErrCommitFailed is a commit whose requirements no longer hold (another writer got there
	// first): nothing changed, the writer refreshes and retries.
	ErrCommitFailed = fmt.Errorf("warehouse: commit failed: %w", catalog.ErrConflict)
	// ErrCommitUnknown is a commit whose outcome is not known (the store failed while swapping):
	// the writer must not clean up what it wrote.
	ErrCommitUnknown = errors.New("commit state unknown")
	// ErrNotCommitted is a commit known not to have happened for a reason other than a conflict
	// (the metadata file could not be written, the snapshot's files could not be read).
	ErrNotCommitted = errors.New("not committed")
)

// ServeError is an error of the served catalog with a message a client can act on.
type ServeError struct {
	Kind    error
	Message string
}

func (e *ServeError) Error() string { return e.Message }
func (e *ServeError) Unwrap() error { return e.Kind }

func serveErr(kind error, format string, args ...any) error {
	return &ServeError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func invalid(field, format string, args ...any) error {
	return &catalog.Error{Kind: catalog.ErrInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

func clipPath(p string) string {
	if len(p) > 200 {
		return p[:200] + "..."
	}
	return p
}
