package warehouse

// Timing a commit's steps, for the commit benchmark (bench/commits): an observer rides on the
// request's context, so nothing is timed when none is there.

import (
	"context"
	"time"
)

// PhaseFunc receives how long one step of a commit took (commit, claim, stage, prepare,
// read-manifests, record-pending, write-metadata, swap, inventory-rows, versions, record-use,
// after-commit; and through Phase: decode).
// Steps nest: commit holds all, prepare holds read-manifests, swap holds inventory-rows,
// versions and record-use.
type PhaseFunc func(phase string, d time.Duration)

type phaseKey struct{}

// WithPhaseTimer returns a context whose commits report their steps' durations to f.
func WithPhaseTimer(ctx context.Context, f PhaseFunc) context.Context {
	return context.WithValue(ctx, phaseKey{}, f)
}

func noPhase() {}

// Phase starts timing a step of a commit request outside the commit itself (the REST face's
// decoding of the request); the returned func ends it.
func Phase(ctx context.Context, name string) func() { return phase(ctx, name) }

// phase starts timing a step; the returned func ends it.
func phase(ctx context.Context, name string) func() {
	f, _ := ctx.Value(phaseKey{}).(PhaseFunc)
	if f == nil {
		return noPhase
	}
	start := time.Now()
	return func() { f(name, time.Since(start)) }
}
