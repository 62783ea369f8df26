package restcatalog

// Loads as usage evidence.
//
// iceberg-go sends no scan report after a scan: a table load is the only read signal an engine
// gives. But writers load a table before they commit to it, and a table only written to must
// not look read. So a load by a token is held for LoadGrace: if the same principal commits to
// the same table meanwhile, the load was a writer's and counts for nothing (the commit is the
// write); otherwise it becomes a read. A principal's loads of one table count as one read an
// hour (the usage idempotency key names the hour), so a polling engine does not flood usage; a
// scan report that names its snapshot is a read of that snapshot (one an hour per snapshot) and
// takes the place of the principal's held load of the table that hour. Anonymous loads and reports are never usage: anonymous traffic must not keep a
// table alive or withdraw a proposal. Held loads live in this process: a load whose commit lands
// on another replica still counts as a read (the safe side for the cleanup bot), and loads held
// when the process stops are recorded as reads.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/internal/loop"
)

// LoadGrace is how long a load waits for its principal's commit before it counts as a read.
const LoadGrace = 2 * time.Minute

// maxHeldLoads bounds the loads held in memory; past it the oldest are decided early.
const maxHeldLoads = 100_000

type heldLoad struct {
	asset uuid.UUID
	actor string
	at    time.Time
	wrote bool
}

type loads struct {
	mu   sync.Mutex
	held map[string]*heldLoad
}

func readKey(asset uuid.UUID, actor string, at time.Time) string {
	return fmt.Sprintf("iceberg-read:%s:%s:%s", asset, actor, at.UTC().Truncate(time.Hour).Format("2006-01-02T15"))
}

// byToken reports whether the request's principal is a token (usage counts only those).
func byToken(ctx context.Context) (string, bool) {
	a := catalog.ActorFrom(ctx)
	return a, strings.HasPrefix(a, "token:")
}

// loaded holds a load by a token until it is known not to be a writer's.
func (f *Face) loaded(ctx context.Context, asset uuid.UUID) {
	actor, ok := byToken(ctx)
	if !ok || f.cfg.RecordUse == nil {
		return
	}
	now := f.cfg.Now()
	k := readKey(asset, actor, now)
	f.loads.mu.Lock()
	if _, ok := f.loads.held[k]; !ok {
		f.loads.held[k] = &heldLoad{asset: asset, actor: actor, at: now}
	}
	full := len(f.loads.held) > maxHeldLoads
	f.loads.mu.Unlock()
	if full {
		f.FlushLoads(context.WithoutCancel(ctx), true)
	}
}

// committed marks the principal's held loads of asset as a writer's.
func (f *Face) committed(ctx context.Context, asset uuid.UUID) {
	actor := catalog.ActorFrom(ctx)
	f.loads.mu.Lock()
	defer f.loads.mu.Unlock()
	for _, l := range f.loads.held {
		if l.asset == asset && l.actor == actor {
			l.wrote = true
		}
	}
}

// FlushLoads records the held loads older than LoadGrace (all of them when all is set) that no
// commit of their principal followed as reads, and forgets them. The server runs it every
// LoadGrace/4 and once with all when it stops.
func (f *Face) FlushLoads(ctx context.Context, all bool) {
	cutoff := f.cfg.Now().Add(-LoadGrace)
	var due []*heldLoad
	var keys []string
	f.loads.mu.Lock()
	for k, l := range f.loads.held {
		if all || l.at.Before(cutoff) {
			delete(f.loads.held, k)
			if !l.wrote {
				due = append(due, l)
				keys = append(keys, k)
			}
		}
	}
	f.loads.mu.Unlock()
	for i, l := range due {
		if err := f.cfg.RecordUse(ctx, l.asset, "read", l.actor, keys[i], l.at); err != nil {
			f.cfg.Logger.Warn("iceberg rest: could not record a table load as a read", "asset_id", l.asset, "err", err)
		}
	}
}

// LoadsJob records the held loads past LoadGrace as reads every LoadGrace/4 (FlushLoads).
func (f *Face) LoadsJob() *loop.Job {
	return &loop.Job{Name: "iceberg rest: recording held table loads", Interval: LoadGrace / 4, Log: f.cfg.Logger,
		Step: func(ctx context.Context) error { f.FlushLoads(ctx, false); return nil }}
}
