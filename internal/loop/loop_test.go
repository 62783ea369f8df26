package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestEveryStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, true, func(context.Context) {
			if calls++; calls == 3 {
				cancel()
			}
		})
	}()
	<-done
	if calls != 3 {
		t.Fatalf("fn ran %d times, want 3 (it stops when the context ends)", calls)
	}
}

func TestRetry(t *testing.T) {
	busy := errors.New("busy")
	for _, tc := range []struct {
		name     string
		failures int
		attempts int
		again    bool
		want     int // calls
		wantErr  error
	}{
		{"succeeds at once", 0, 4, true, 1, nil},
		{"succeeds on the third", 2, 4, true, 3, nil},
		{"gives up after the attempts", 10, 4, true, 4, busy},
		{"stops on an error not worth retrying", 10, 4, false, 1, busy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), tc.attempts, func(int) time.Duration { return time.Microsecond },
				func(error) bool { return tc.again }, func() error {
					calls++
					if calls <= tc.failures {
						return busy
					}
					return nil
				})
			if calls != tc.want || !errors.Is(err, tc.wantErr) {
				t.Fatalf("calls %d err %v, want %d %v", calls, err, tc.want, tc.wantErr)
			}
		})
	}
	// A wait ends with the context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Retry(ctx, 3, func(int) time.Duration { return time.Hour }, func(error) bool { return true }, func() error { return busy })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("retry with an ended context waiting an hour: %v", err)
	}
}

// TestJobRetriesAFailingStepAndStopsWithItsContext: a failing step runs again at the next
// interval, a Once job ends after its first success, and every job returns nil when its context
// ends.
func TestJobRetriesAFailingStepAndStopsWithItsContext(t *testing.T) {
	calls := 0
	once := &Job{Name: "once", Interval: time.Millisecond, Once: true, Step: func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}}
	if err := once.Run(context.Background()); err != nil || calls != 3 {
		t.Fatalf("once: err %v after %d calls, want nil after 3", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	steps := 0
	every := &Job{Name: "every", Interval: time.Millisecond, AtStart: true, Step: func(context.Context) error {
		if steps++; steps == 5 {
			cancel()
		}
		return errors.New("always fails")
	}}
	if err := every.Run(ctx); err != nil || steps < 5 {
		t.Fatalf("every: err %v after %d steps, want nil after at least 5", err, steps)
	}
}

// TestCountedLogsOnlyWorkDone: a step that did something says how much; one that did nothing
// says nothing; its error is returned for the Job to log and retry.
func TestCountedLogsOnlyWorkDone(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	boom := errors.New("boom")
	for _, tc := range []struct {
		n       int
		err     error
		logged  bool
		wantErr error
	}{{0, nil, false, nil}, {3, nil, true, nil}, {2, boom, true, boom}, {0, boom, false, boom}} {
		buf.Reset()
		err := Counted(log, "did work", "items", func(context.Context) (int, error) { return tc.n, tc.err })(context.Background())
		if err != tc.wantErr || strings.Contains(buf.String(), fmt.Sprintf("items=%d", tc.n)) != tc.logged {
			t.Errorf("n=%d err=%v: returned %v, logged %q", tc.n, tc.err, err, buf.String())
		}
	}
}
