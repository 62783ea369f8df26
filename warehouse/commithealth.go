package warehouse

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/internal/words"
)

// Commit health thresholds (seed 000's streaming job): past either, each commit's fixed cost (a
// metadata file, a manifest list, usually a manifest, and a race with every other writer)
// outweighs what it carries, and writes should be batched.
const (
	// BatchCommitsPerMinute is the commit rate above which batching is recommended: more than
	// one commit every 10 s.
	BatchCommitsPerMinute = 6.0
	// BatchConflictRate is the share of commits refused with 409 above which batching (or fewer
	// concurrent writers) is recommended.
	BatchConflictRate = 0.2
	// DefaultCommitWindow is the window commit health looks back over.
	DefaultCommitWindow = time.Hour
)

// CommitHealth is how a served table is being committed to over a window.
type CommitHealth struct {
	AssetID          uuid.UUID
	Window           time.Duration
	From, To         time.Time
	Commits          int     // committed commits (appends, overwrites, schema changes, ...)
	Conflicts        int     // commits refused with 409
	Retries          int     // committed commits that followed their writer's 409 within 10 s
	Abandoned        int     // commits that wrote a file and never swapped
	CommitsPerMinute float64 // over the window
	ConflictRate     float64 // conflicts / (commits + conflicts)
	MedianGap        time.Duration
	MinGap           time.Duration
	BatchRecommended bool
	Recommendation   string
}

// retryWindow links a writer's 409 to its next successful commit.
const retryWindow = 10 * time.Second

// CommitHealth reads a served table's commit record over the window ending now.
func (s *Service) CommitHealth(ctx context.Context, id uuid.UUID, window time.Duration) (CommitHealth, error) {
	if window <= 0 {
		window = DefaultCommitWindow
	}
	if _, err := s.tables.Get(ctx, id); err != nil {
		return CommitHealth{}, err
	}
	to := s.clock()
	h := CommitHealth{AssetID: id, Window: window, From: to.Add(-window), To: to}
	rows, err := s.db.IcebergCommit.Query().Where(icebergcommit.AssetID(id), icebergcommit.StartedAtGTE(h.From),
		icebergcommit.KindIn("create", "commit")).Order(ent.Asc(icebergcommit.FieldStartedAt)).Limit(100_000).All(ctx)
	if err != nil {
		return h, fmt.Errorf("warehouse: read commits: %w", err)
	}
	lastConflict := map[string]time.Time{}
	var times []time.Time
	for _, c := range rows {
		switch c.State {
		case stateCommitted:
			h.Commits++
			at := c.StartedAt
			if c.FinishedAt != nil {
				at = *c.FinishedAt
			}
			times = append(times, at)
			if t, ok := lastConflict[c.Actor]; ok && c.StartedAt.Sub(t) <= retryWindow {
				h.Retries++
				delete(lastConflict, c.Actor)
			}
		case stateConflict:
			h.Conflicts++
			lastConflict[c.Actor] = c.StartedAt
		case stateAbandoned:
			h.Abandoned++
		}
	}
	h.CommitsPerMinute = float64(h.Commits) / window.Minutes()
	if n := h.Commits + h.Conflicts; n > 0 {
		h.ConflictRate = float64(h.Conflicts) / float64(n)
	}
	if len(times) > 1 {
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		gaps := make([]time.Duration, len(times)-1)
		for i := 1; i < len(times); i++ {
			gaps[i-1] = times[i].Sub(times[i-1])
		}
		slices.Sort(gaps)
		h.MedianGap, h.MinGap = gaps[len(gaps)/2], gaps[0]
	}
	fast, contended := h.CommitsPerMinute > BatchCommitsPerMinute, h.ConflictRate > BatchConflictRate && h.Conflicts >= 3
	if fast || contended {
		h.BatchRecommended = true
		h.Recommendation = fmt.Sprintf("%s in the last %s (%.1f a minute, median gap %s) and %d refused with 409 (%.0f%% of attempts, %d retried): ",
			words.Count(int64(h.Commits), "commit"), words.Duration(window), h.CommitsPerMinute, words.Duration(h.MedianGap), h.Conflicts, 100*h.ConflictRate, h.Retries)
		switch {
		case fast && contended:
			h.Recommendation += "batch the writes into fewer, larger commits (one a minute or less) and funnel concurrent writers through one committer: every commit writes a metadata file, a manifest list and a manifest, and every race costs the loser a retry"
		case fast:
			h.Recommendation += fmt.Sprintf("batch the writes into fewer, larger commits (at most %.0f a minute): every commit writes a metadata file, a manifest list and a manifest, which the table's readers and its maintenance pay for", BatchCommitsPerMinute)
		default:
			h.Recommendation += "writers race for the table's pointer: batch their writes, or commit through one writer, so fewer attempts are refused and retried"
		}
	}
	return h, nil
}

// stale holds served tables committed to since their last inspection: a background loop
// inspects each once per round however often it was committed to, so a table written every
// second is not inspected every second.
type stale struct {
	mu  sync.Mutex
	ids map[uuid.UUID]bool
}

func (s *Service) markStale(id uuid.UUID) {
	s.stale.mu.Lock()
	defer s.stale.mu.Unlock()
	if s.stale.ids == nil {
		s.stale.ids = map[uuid.UUID]bool{}
	}
	s.stale.ids[id] = true
}

// RefreshServed inspects the served tables committed to since the last round (their health,
// snapshots and files); a failure is recorded on the table and the next commit marks it again.
// It returns how many it inspected.
func (s *Service) RefreshServed(ctx context.Context) (int, error) {
	s.stale.mu.Lock()
	ids := s.stale.ids
	s.stale.ids = nil
	s.stale.mu.Unlock()
	n := 0
	for id := range ids {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if _, err := s.tables.Refresh(ctx, id); err != nil {
			s.log.Warn("could not inspect a served table after its commits", "asset_id", id, "err", err)
			continue
		}
		n++
	}
	return n, nil
}
