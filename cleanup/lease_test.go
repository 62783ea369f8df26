package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
)

// leaseService is a Service over db for the lease tests, or the test stops.
func leaseService(t *testing.T, db *storage.DB, opts ...Option) *Service {
	t.Helper()
	cat, err := catalog.New(db)
	if err != nil {
		t.Fatal(err)
	}
	tbls, err := tables.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(db, cat, tbls, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLease: one holder at a time; a crashed holder's lease lapses; the holder renews and
// releases its own lease only.
func TestLease(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		a := leaseService(t, db, WithClock(clock), WithHolder("a"))
		b := leaseService(t, db, WithClock(clock), WithHolder("b"))
		asset := uuid.New()
		held := map[*Service]*lease{}
		claim := func(s *Service, shard string) bool {
			t.Helper()
			l, err := s.claim(ctx, asset, shard, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if l != nil {
				held[s] = l
			}
			return l != nil
		}
		if !claim(a, "data/x/") || claim(b, "data/x/") || !claim(b, "data/y/") {
			t.Fatal("a shard was claimed twice, or a free one refused")
		}
		if !claim(a, "data/x/") {
			t.Fatal("the holder could not claim its own lease again")
		}
		now = now.Add(50 * time.Second)
		if err := a.renew(ctx, held[a], time.Minute); err != nil {
			t.Fatal(err)
		}
		now = now.Add(30 * time.Second) // 80 s after the claim, 30 s after the renewal
		if claim(b, "data/x/") {
			t.Fatal("a renewed lease was taken")
		}
		b.release(ctx, &lease{asset: asset, shard: "data/x/", token: held[a].token}) // not b's: nothing happens
		if claim(b, "data/x/") {
			t.Fatal("another holder released a's lease")
		}
		now = now.Add(2 * time.Minute) // a crashed: its lease lapses
		stale := held[a]
		if !claim(b, "data/x/") || claim(a, "data/x/") {
			t.Fatal("an expired lease was not handed over")
		}
		// The old holder, back from a pause, cannot renew or release what is b's now.
		if err := a.renew(ctx, stale, time.Minute); !errors.Is(err, errLeaseLost) {
			t.Fatalf("renewing a lost lease: %v", err)
		}
		a.release(ctx, stale)
		if claim(a, "data/x/") {
			t.Fatal("a lost lease's old holder released or retook it")
		}
		b.release(ctx, held[b])
		if !claim(a, "data/x/") {
			t.Fatal("a released lease could not be claimed")
		}
	})
}

// TestLeaseRace: replicas racing for the same shards (separate services, concurrent claims)
// never see an error, and each shard has exactly one winner.
func TestLeaseRace(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		asset := uuid.New()
		const replicas, shards = 6, 20
		wins := make([][]bool, replicas)
		errs := make(chan error, replicas)
		var wg sync.WaitGroup
		for r := range replicas {
			s := leaseService(t, db, WithHolder(fmt.Sprintf("replica-%d", r)))
			wins[r] = make([]bool, shards)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range shards {
					l, err := s.claim(ctx, asset, fmt.Sprintf("data/%d/", i), time.Minute)
					if err != nil {
						errs <- err
						return
					}
					wins[r][i] = l != nil
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("a claim failed: %v", err)
		}
		for i := range shards {
			n := 0
			for r := range replicas {
				if wins[r][i] {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("shard %d has %d holders", i, n)
			}
		}
	})
}
