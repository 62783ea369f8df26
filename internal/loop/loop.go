// Package loop owns how Tidemark's background work repeats: a function on a ticker until its
// context ends, and bounded retries whose waits end with the context. Every background loop of
// the server goes through it, so stopping a context stops them all promptly.
package loop

import (
	"context"
	"time"
)

// Every calls fn every interval until ctx ends; with now set it calls fn once at the start too.
// fn runs to completion: a tick that comes while it runs is dropped, not queued.
func Every(ctx context.Context, interval time.Duration, now bool, fn func(context.Context)) {
	if now && ctx.Err() == nil {
		fn(ctx)
	}
	t := time.NewTicker(max(interval, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// Sleep waits for d or until ctx ends, whichever is first, and returns ctx's error if it ended.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry calls fn up to attempts times while again(err) holds, waiting backoff(n) after the n-th
// failure (n from 1). It returns fn's last error, or ctx's when it ends during a wait.
func Retry(ctx context.Context, attempts int, backoff func(n int) time.Duration, again func(error) bool, fn func() error) error {
	var err error
	for n := 1; ; n++ {
		if err = fn(); err == nil || !again(err) || n >= attempts {
			return err
		}
		if serr := Sleep(ctx, backoff(n)); serr != nil {
			return serr
		}
	}
}
