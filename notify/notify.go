// Package notify owns telling people of changes: the webhooks principals set, their
// subscriptions to assets' changes, the notifier that turns catalog's audit log into outbox
// messages for subscribers, and the dispatcher that delivers every outbox message (whoever wrote
// it in its own transaction: cleanup with a proposal, reconcile with a finding, the notifier) at
// least once, retried with backoff, never to an internal address unless allowed.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"entgo.io/ent/dialect"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
)

// DefaultInterval is how often the notifier and the dispatcher run unless WithInterval says: a
// subscriber hears of a change within about Settle and two intervals.
const DefaultInterval = 10 * time.Second

// Service keeps webhooks and subscriptions, writes subscribers' notifications and delivers the
// outbox.
type Service struct {
	db       *ent.Client
	cat      *catalog.Catalog
	now      func() time.Time
	log      *slog.Logger
	sqlite   bool
	client   *http.Client
	interval time.Duration
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithInterval sets how often NotifierJob and DispatchJob run (DefaultInterval).
func WithInterval(d time.Duration) Option { return func(s *Service) { s.interval = d } }

// New returns a Service over store; cat reads the assets subscriptions and notifications name.
// The store says which database it is (SQLite has no row locks; its writes are serialised).
func New(store *storage.DB, cat *catalog.Catalog, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("notify: no database")
	}
	if cat == nil {
		return nil, errors.New("notify: no catalog")
	}
	s := &Service{db: store.Client, sqlite: store.Dialect == dialect.SQLite, cat: cat, now: time.Now, log: slog.New(slog.DiscardHandler),
		client: webhookClient(false), interval: DefaultInterval}
	for _, o := range opts {
		o(s)
	}
	if s.interval <= 0 {
		return nil, fmt.Errorf("notify: the interval must be longer than 0, not %s", s.interval)
	}
	return s, nil
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func (s *Service) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
