// Package catalog owns assets: their immutable IDs, their names and the history of those names,
// name resolution (current and former), external IDs, owners, and the audit trail of every
// change. Everything else in Tidemark refers to assets by the IDs this package hands out.
package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/ent"
)

// Catalog is the asset registry over an ent client.
type Catalog struct {
	db  *ent.Client
	now func() time.Time
	log *slog.Logger
}

// Option configures a Catalog.
type Option func(*Catalog)

// WithClock replaces time.Now, so tests can judge history and intervals without sleeping.
func WithClock(now func() time.Time) Option { return func(c *Catalog) { c.now = now } }

// WithLogger sets the logger for retried conflicts and similar events.
func WithLogger(l *slog.Logger) Option { return func(c *Catalog) { c.log = l } }

// New returns a Catalog over db.
func New(db *ent.Client, opts ...Option) *Catalog {
	c := &Catalog{db: db, now: time.Now, log: slog.Default()}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Now is the catalog's clock in UTC, truncated to microseconds: the precision both SQLite and
// PostgreSQL keep, so a time read back equals the time written.
func (c *Catalog) Now() time.Time { return c.now().UTC().Truncate(time.Microsecond) }

// maxAttempts bounds retries of a transaction that lost a race on a unique index (two creates
// of the same name or key at once); the retry re-reads and answers from what the winner wrote.
const maxAttempts = 3

// tx runs fn in a transaction, rolling back on error or panic.
func (c *Catalog) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
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
