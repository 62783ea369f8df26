// Package usage owns usage of assets: idempotent usage events (from query logs and completed
// OpenLineage runs) keyed on asset IDs, daily rollups kept exact under late and duplicate events,
// usage series and rankings, and the "real usage" summary the cleanup bot relies on. Names are
// resolved to IDs as of each event's time, so a rename never resets usage.
package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"entgo.io/ent/dialect"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"

	"github.com/tidemark/tidemark/internal/loop"
)

// Defaults.
const (
	// DefaultLateness: engines ship query logs late (retries, backfills); a month covers them.
	DefaultLateness = 30 * 24 * time.Hour
	// DefaultRetention of raw events; rollups are kept forever. Longer than the lateness, so a
	// bucket still open to late events can always be recounted from its raw events.
	DefaultRetention = 90 * 24 * time.Hour
	// Skew tolerated for events stamped in the future (clocks of engines and proxies drift).
	Skew = 5 * time.Minute
)

// Service records and answers usage.
type Service struct {
	db        *ent.Client
	cat       *catalog.Catalog
	now       func() time.Time
	lateness  time.Duration
	retention time.Duration
	log       *slog.Logger
	sqlite    bool
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces time.Now (lateness, retention and windows are judged against it).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLateness sets how old an event may be when it arrives.
func WithLateness(d time.Duration) Option { return func(s *Service) { s.lateness = d } }

// WithRetention sets how long raw events are kept.
func WithRetention(d time.Duration) Option { return func(s *Service) { s.retention = d } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// New returns a Service; call Open before use.
// The store says which database it is: the SQL differs, and is never guessed.
func New(store *storage.DB, cat *catalog.Catalog, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("usage: no database")
	}
	s := &Service{db: store.Client, sqlite: store.Dialect == dialect.SQLite, cat: cat, now: time.Now, lateness: DefaultLateness, retention: DefaultRetention, log: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	if s.lateness <= 0 || s.retention <= s.lateness {
		return nil, fmt.Errorf("usage: retention (%s) must be longer than lateness (%s): a day still open to late events must keep its raw events", s.retention, s.lateness)
	}
	return s, nil
}

// Lateness is the configured lateness.
func (s *Service) Lateness() time.Duration { return s.lateness }

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Day is the rollup bucket of t: its UTC date.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Purge deletes raw events, and unresolved records, older than the retention; rollups stay. It
// returns how many it deleted. The jobs seen per day go too, for the days before the cutoff's:
// no record of those days is accepted any more, so no job can be new to them.
func (s *Service) Purge(ctx context.Context) (int, error) {
	cutoff := s.clock().Add(-s.retention)
	var total int
	for _, table := range []string{"usage_events", "usage_pendings"} {
		res, err := s.db.ExecContext(ctx, "DELETE FROM "+table+" WHERE at < $1", cutoff)
		if err != nil {
			return total, fmt.Errorf("usage: purge %s: %w", table, err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM usage_job_dailies WHERE day < $1", Day(cutoff)); err != nil {
		return total, fmt.Errorf("usage: purge usage_job_dailies: %w", err)
	}
	return total, nil
}

// Job is usage's background work: every interval it attributes the kept unresolved records
// whose names now resolve (changes made by other replicas, or inside lineage transactions, reach
// them here) and purges what is past the retention (hourly).
func (s *Service) Job(interval time.Duration) *loop.Job {
	var purged time.Time
	return &loop.Job{Name: "usage: resolving kept records", Interval: interval, Log: s.log, Step: func(ctx context.Context) error {
		n, err := s.ResolvePending(ctx, nil)
		if err != nil {
			return err
		}
		if n > 0 {
			s.log.Info("usage: attributed records that waited for their name", "records", n)
		}
		if time.Since(purged) < time.Hour {
			return nil
		}
		purged = time.Now()
		if n, err = s.Purge(ctx); err != nil {
			return err
		}
		if n > 0 {
			s.log.Info("usage: purged raw events past retention", "deleted", n, "retention", s.retention.String())
		}
		return nil
	}}
}
