// Package catalog owns assets: their immutable IDs, their names and the history of those names,
// name resolution (current and former), external IDs, owners, and the audit trail of every
// change. Everything else in Tidemark refers to assets by the IDs this package hands out.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
)

// Catalog is the asset registry over an ent client.
type Catalog struct {
	db       *ent.Client
	now      func() time.Time
	log      *slog.Logger
	onChange []func(ctx context.Context, ids []uuid.UUID, written map[uuid.UUID]Summary)
	dialect  atomic.Pointer[string] // the database's SQL dialect, once search has asked
	// searchWindow is how many matches a search examines at most (see SearchResult).
	searchWindow int
	// indexStatus is what IndexStatus says of the background indexing.
	indexStatus atomic.Value
}

// Option configures a Catalog.
type Option func(*Catalog)

// WithClock replaces time.Now, so tests can judge history and intervals without sleeping.
func WithClock(now func() time.Time) Option { return func(c *Catalog) { c.now = now } }

// WithChangeHook calls fn after a change to an asset commits (create, rename, update, delete,
// restore, owners, external IDs), so in-memory views such as the lineage graph's node names stay
// current. Changes made inside a caller's transaction (InTx) are the caller's to announce.
// written holds the summaries, as written, of those of ids that CreateMany has just created on
// PostgreSQL (nil otherwise): a hook that needs summaries reads only the others.
func WithChangeHook(fn func(ctx context.Context, ids []uuid.UUID, written map[uuid.UUID]Summary)) Option {
	return func(c *Catalog) { c.onChange = append(c.onChange, fn) }
}

// changed announces committed changes of ids, unless ctx carries a caller's transaction.
func (c *Catalog) changed(ctx context.Context, written map[uuid.UUID]Summary, ids ...uuid.UUID) {
	if ent.TxFromContext(ctx) != nil || len(ids) == 0 {
		return
	}
	for _, fn := range c.onChange {
		fn(ctx, ids, written)
	}
}

// WithLogger sets the logger for retried conflicts and similar events.
func WithLogger(l *slog.Logger) Option { return func(c *Catalog) { c.log = l } }

// New returns a Catalog over store.
func New(store *storage.DB, opts ...Option) (*Catalog, error) {
	if store == nil {
		return nil, errors.New("catalog: no database")
	}
	c := &Catalog{db: store.Client, now: time.Now, log: slog.Default()}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Now is the catalog's clock in UTC, truncated to microseconds: the precision both SQLite and
// PostgreSQL keep, so a time read back equals the time written.
func (c *Catalog) Now() time.Time { return c.now().UTC().Truncate(time.Microsecond) }

// maxAttempts bounds retries of a transaction that lost a race on a unique index (two creates
// of the same name or key at once); the retry re-reads and answers from what the winner wrote.
const maxAttempts = 3

// client returns the transaction carried by ctx (see InTx) or the catalog's own client.
func (c *Catalog) client(ctx context.Context) *ent.Client {
	if tx := ent.TxFromContext(ctx); tx != nil {
		return tx.Client()
	}
	return c.db
}

// InTx runs fn in one transaction whose context makes every catalog call inside it part of that
// transaction: lineage ingest stores an event, the assets it creates or renames, and its own rows
// all-or-nothing. Inside, catalog errors abort the whole transaction (PostgreSQL cannot continue a
// failed one), so callers retry the whole of fn on a lost race (see IsRace).
func (c *Catalog) InTx(ctx context.Context, fn func(ctx context.Context, tx *ent.Tx) error) error {
	return c.tx(ctx, func(tx *ent.Tx) error { return fn(ent.NewTxContext(ctx, tx), tx) })
}

// IsRace reports whether err is a lost race worth retrying from the start: a unique index taken
// by a concurrent transaction, or (PostgreSQL) a deadlock or serialization failure.
func IsRace(err error) bool {
	if ent.IsConstraintError(err) {
		return true
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		switch st.SQLState() {
		case "40P01", "40001": // deadlock_detected, serialization_failure
			return true
		}
	}
	return false
}

// tx runs fn in a transaction, rolling back on error or panic. When ctx already carries a
// transaction (InTx), fn joins it and the outer caller commits.
func (c *Catalog) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	if tx := ent.TxFromContext(ctx); tx != nil {
		return fn(tx)
	}
	tx, err := c.db.Tx(ctx)
	if err != nil {
		return fmt.Errorf("catalog: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("catalog: commit: %w", err)
	}
	return nil
}

type ctxKey int

const (
	actorKey ctxKey = iota
	requestIDKey
)

// WithActor returns ctx carrying the principal that audit events attribute changes to.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey, actor)
}

// ActorFrom returns the actor carried by ctx, or "system".
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey).(string); ok && a != "" {
		return a
	}
	return "system"
}

// WithRequestID returns ctx carrying a request ID recorded on audit events.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

func requestIDFrom(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey).(string)
	return s
}
