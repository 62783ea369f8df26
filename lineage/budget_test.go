package lineage

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
)

// budgetStep is one thing done to a budget: reserve n nodes for a client (held under the
// step's index), release the reservation of an earlier step, or keep n of its nodes.
type budgetStep struct {
	op     string // reserve, release, keep
	client string
	n      int
	of     int   // the reserve step a release or keep acts on
	want   error // of a reserve: nil, catalog.ErrUnavailable or catalog.ErrInvalid
}

func TestBudgetSteps(t *testing.T) {
	for _, tc := range []struct {
		name             string
		total, perClient int
		steps            []budgetStep
		reserved         int64
		refused          int64
	}{
		{name: "UpToCapacitySucceeds", total: 10, perClient: 10, steps: []budgetStep{
			{op: "reserve", client: "a", n: 4}, {op: "reserve", client: "a", n: 6},
		}, reserved: 10},
		{name: "OverCapacityTimesOut", total: 10, perClient: 10, steps: []budgetStep{
			{op: "reserve", client: "a", n: 10}, {op: "reserve", client: "b", n: 1, want: catalog.ErrUnavailable},
		}, reserved: 10, refused: 1},
		{name: "ReleasedRoomIsReused", total: 10, perClient: 10, steps: []budgetStep{
			{op: "reserve", client: "a", n: 10}, {op: "release", of: 0}, {op: "reserve", client: "b", n: 10},
		}, reserved: 10},
		{name: "KeptPartFreesTheRest", total: 10, perClient: 10, steps: []budgetStep{
			{op: "reserve", client: "a", n: 10}, {op: "keep", of: 0, n: 3}, {op: "reserve", client: "a", n: 7},
			{op: "reserve", client: "b", n: 1, want: catalog.ErrUnavailable},
		}, reserved: 10, refused: 1},
		{name: "OneClientCannotTakeAll", total: 10, perClient: 4, steps: []budgetStep{
			{op: "reserve", client: "a", n: 4}, {op: "reserve", client: "a", n: 1, want: catalog.ErrUnavailable},
			{op: "reserve", client: "b", n: 4}, {op: "reserve", client: "c", n: 2},
			{op: "reserve", client: "d", n: 1, want: catalog.ErrUnavailable},
		}, reserved: 10, refused: 2},
		{name: "LargerThanAClientMayHoldIsInvalid", total: 10, perClient: 4, steps: []budgetStep{
			{op: "reserve", client: "a", n: 5, want: catalog.ErrInvalid},
		}, reserved: 0},
		{name: "ReleaseTwiceGivesBackOnce", total: 10, perClient: 10, steps: []budgetStep{
			{op: "reserve", client: "a", n: 6}, {op: "release", of: 0}, {op: "release", of: 0},
			{op: "reserve", client: "a", n: 10}, {op: "reserve", client: "a", n: 1, want: catalog.ErrUnavailable},
		}, reserved: 10, refused: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBudget(tc.total, tc.perClient, 10*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			held := map[int]*Reservation{}
			for i, s := range tc.steps {
				switch s.op {
				case "reserve":
					r, err := b.Reserve(context.Background(), s.client, s.n)
					if !errors.Is(err, s.want) || (err == nil) != (s.want == nil) {
						t.Fatalf("step %d: reserve %d for %s: got %v, want %v", i, s.n, s.client, err, s.want)
					}
					held[i] = r
				case "release":
					held[s.of].Release()
				case "keep":
					held[s.of].Keep(s.n)
				}
			}
			if got := b.Reserved(); got != tc.reserved {
				t.Errorf("reserved: got %d, want %d", got, tc.reserved)
			}
			if got := b.Refused(); got != tc.refused {
				t.Errorf("refused: got %d, want %d", got, tc.refused)
			}
			for _, r := range held {
				r.Release()
			}
			if got := b.Reserved(); got != 0 {
				t.Errorf("reserved after releasing all: got %d, want 0", got)
			}
			if got := b.clientCount(); got != 0 {
				t.Errorf("client shares after releasing all: got %d, want 0 (idle ones are dropped)", got)
			}
		})
	}
}

// users is how many reservations of client are held or waited for.
func (b *Budget) users(client string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.clients[client]; s != nil {
		return s.users
	}
	return 0
}

func TestBudgetWaiterGetsReleasedRoom(t *testing.T) {
	for _, tc := range []struct {
		name           string
		holder, waiter string
	}{
		{name: "SameClient", holder: "a", waiter: "a"},
		{name: "OtherClient", holder: "a", waiter: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBudget(10, 10, time.Hour) // the waiter waits for the release, not the clock
			if err != nil {
				t.Fatal(err)
			}
			first, err := b.Reserve(context.Background(), tc.holder, 10)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				r, err := b.Reserve(context.Background(), tc.waiter, 7)
				r.Release()
				got <- err
			}()
			want := 1
			if tc.holder == tc.waiter {
				want = 2
			}
			for b.users(tc.waiter) < want { // the waiter has joined its share: it is waiting
				runtime.Gosched()
			}
			select {
			case err := <-got:
				t.Fatalf("the waiter got an answer while the budget was full: %v", err)
			default:
			}
			first.Release()
			if err := <-got; err != nil {
				t.Fatalf("the waiter after a release: %v", err)
			}
			if n := b.Refused(); n != 0 {
				t.Errorf("refused: got %d, want 0", n)
			}
		})
	}
}

func TestBudgetCancelledRequestIsNotBackPressure(t *testing.T) {
	b, err := NewBudget(10, 10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	first, err := b.Reserve(context.Background(), "a", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Reserve(ctx, "b", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := b.Refused(); n != 0 {
		t.Errorf("refused: got %d, want 0 (the client went away; the server was not short)", n)
	}
}

// Many clients reserving and releasing at once (run with -race): the budget never holds more
// than its capacity, and ends empty with no client shares left.
func TestBudgetConcurrentClients(t *testing.T) {
	const capacity, per = 50, 10
	b, err := NewBudget(capacity, per, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	over := make(chan int64, 1)
	for c := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				r, err := b.Reserve(context.Background(), fmt.Sprintf("client-%d", c%7), 1+(c+i)%per)
				if err != nil {
					t.Error(err)
					return
				}
				if n := b.Reserved(); n > capacity {
					select {
					case over <- n:
					default:
					}
				}
				r.Keep(1 + i%3)
				r.Release()
			}
		}()
	}
	wg.Wait()
	select {
	case n := <-over:
		t.Errorf("the budget held %d nodes, over its capacity of %d", n, capacity)
	default:
	}
	if n, c := b.Reserved(), b.clientCount(); n != 0 || c != 0 {
		t.Errorf("after all: %d nodes reserved and %d client shares, want 0 and 0", n, c)
	}
}

func TestNewBudgetRefusesBadFigures(t *testing.T) {
	for _, tc := range []struct{ total, per int }{{0, 1}, {10, 0}, {10, 11}, {-1, -1}} {
		if _, err := NewBudget(tc.total, tc.per, time.Second); err == nil {
			t.Errorf("NewBudget(%d, %d): no error", tc.total, tc.per)
		}
	}
}
