package lineage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/tidemark/tidemark/catalog"
)

// DefaultBudgetWait is how long an answer waits for room in the node budget before it is
// refused: long enough for an answer ahead of it to be written, short enough that a client
// retrying after Retry-After is better off than one holding its connection.
const DefaultBudgetWait = 2 * time.Second

// Budget bounds the nodes of the lineage answers in flight, process-wide and per client: an
// answer's memory (the walk, the summaries, the encoding) grows with its nodes, so the sum of
// the answers' limits bounds what concurrent big answers can take, and one client cannot hold
// it all. An answer reserves the most nodes it may return before it walks and releases them
// once it is written.
type Budget struct {
	total     *semaphore.Weighted
	capacity  int64
	perClient int64
	wait      time.Duration

	mu sync.Mutex
	// clients holds a share only while a reservation of that client is held or waited for, so
	// the map is as large as the requests in flight, never as the clients ever seen.
	clients map[string]*clientShare
	// idle are shares dropped, for the next client: most clients have one answer in flight
	// at a time, so a share was made and dropped for every answer.
	idle sync.Pool

	reserved atomic.Int64
	refused  atomic.Int64
	// held, when set, is called with each reservation granted (WithBudgetHook).
	held func(ctx context.Context, nodes int)
}

type clientShare struct {
	sem   *semaphore.Weighted
	users int // reservations held or waited for; the share is dropped at zero
}

// NewBudget returns a budget of capacity nodes in all, perClient nodes for one client, where
// a reservation waits at most wait for room.
func NewBudget(capacity, perClient int, wait time.Duration) (*Budget, error) {
	if capacity < 1 || perClient < 1 || perClient > capacity {
		return nil, fmt.Errorf("lineage: a node budget needs 1 <= per client (%d) <= total (%d)", perClient, capacity)
	}
	if wait < 0 {
		return nil, fmt.Errorf("lineage: the budget wait must not be negative, not %s", wait)
	}
	return &Budget{total: semaphore.NewWeighted(int64(capacity)), capacity: int64(capacity), perClient: int64(perClient),
		wait: wait, clients: map[string]*clientShare{}}, nil
}

// Capacity is the most nodes all answers in flight may hold.
func (b *Budget) Capacity() int { return int(b.capacity) }

// PerClient is the most nodes one client's answers in flight may hold: the largest limit one
// answer may ask for.
func (b *Budget) PerClient() int { return int(b.perClient) }

// Reserved is the nodes held now.
func (b *Budget) Reserved() int64 { return b.reserved.Load() }

// Refused counts the reservations refused for want of room since the start.
func (b *Budget) Refused() int64 { return b.refused.Load() }

// Reservation is nodes held in a Budget; Release gives them back. A nil Reservation holds
// nothing.
type Reservation struct {
	b     *Budget
	key   string
	share *clientShare
	mu    sync.Mutex
	n     int64
}

// Reserve holds nodes for client (a token's name or an address: whoever the per-client share
// is for), waiting until there is room, ctx ends or the budget's wait passes. A request
// larger than one client's share is invalid; no room in time is ErrUnavailable.
func (b *Budget) Reserve(ctx context.Context, client string, nodes int) (*Reservation, error) {
	if nodes < 1 {
		return nil, invalid("a reservation needs at least one node, not %d", nodes)
	}
	if int64(nodes) > b.perClient {
		return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "limit", Message: fmt.Sprintf(
			"lineage: limit %d is more than one client may have in flight at once; the largest limit allowed is %d", nodes, b.perClient)}
	}
	share := b.join(client)
	n := int64(nodes)
	// Room now is taken at once: Acquire looks at the context first, and a short wait may
	// have passed already. The wait's context (a timer) is made only for a reservation that
	// waits, the one deadline for both waits.
	var wctx context.Context
	cancel := context.CancelFunc(func() {})
	defer func() { cancel() }()
	waiting := func() context.Context {
		if wctx == nil {
			wctx, cancel = context.WithTimeout(ctx, b.wait)
		}
		return wctx
	}
	if !share.sem.TryAcquire(n) {
		if err := share.sem.Acquire(waiting(), n); err != nil {
			b.leave(client, share)
			return nil, b.refuse(ctx, true)
		}
	}
	if b.total.TryAcquire(n) {
		return b.grant(ctx, client, share, n), nil
	}
	if err := b.total.Acquire(waiting(), n); err != nil {
		share.sem.Release(n)
		b.leave(client, share)
		return nil, b.refuse(ctx, false)
	}
	return b.grant(ctx, client, share, n), nil
}

func (b *Budget) grant(ctx context.Context, client string, share *clientShare, n int64) *Reservation {
	b.reserved.Add(n)
	if b.held != nil {
		b.held(ctx, int(n))
	}
	return &Reservation{b: b, key: client, share: share, n: n}
}

// refuse words a reservation that found no room: the request's own end (the client went
// away) is returned as it is; the budget's wait running out is back-pressure.
func (b *Budget) refuse(ctx context.Context, client bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.refused.Add(1)
	msg := fmt.Sprintf("lineage: the server is busy with other lineage answers (at most %d nodes in flight); retry shortly, or ask for a smaller limit", b.capacity)
	if client {
		msg = fmt.Sprintf("lineage: this client's lineage answers in flight leave no room for this one (at most %d nodes a client); retry shortly, or ask for a smaller limit", b.perClient)
	}
	return &catalog.Error{Kind: catalog.ErrUnavailable, Message: msg}
}

func (b *Budget) join(client string) *clientShare {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.clients[client]
	if s == nil {
		if s, _ = b.idle.Get().(*clientShare); s == nil {
			s = &clientShare{sem: semaphore.NewWeighted(b.perClient)}
		}
		b.clients[client] = s
	}
	s.users++
	return s
}

func (b *Budget) leave(client string, s *clientShare) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(b.clients, client)
		b.idle.Put(s) // nothing held or waited for: its semaphore is as new
	}
}

// clientCount is the clients with a share now (for tests: idle ones are dropped).
func (b *Budget) clientCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

// Keep gives back all but n of the nodes held (never more than held): once an answer is
// walked its size is known, and encoding it costs that, not its limit.
func (r *Reservation) Keep(n int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if back := r.n - max(int64(n), 0); back > 0 {
		r.give(back)
	}
}

// Release gives back every node held; a second call does nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.share == nil {
		return
	}
	r.give(r.n)
	r.b.leave(r.key, r.share)
	r.share = nil
}

func (r *Reservation) give(n int64) {
	if n <= 0 || r.share == nil {
		return
	}
	r.b.reserved.Add(-n) // first, so the gauge never shows more than is held
	r.b.total.Release(n)
	r.share.sem.Release(n)
	r.n -= n
}
