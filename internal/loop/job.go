package loop

import (
	"context"
	"log/slog"
	"time"
)

// Job is one piece of background work in the one shape every domain gives it: a step repeated
// every Interval until the context ends. A domain builds its jobs (with the interval chosen at
// construction) and the server runs them as a list, each with Run.
type Job struct {
	// Name says what the work is, in logs ("cleanup scans").
	Name     string
	Interval time.Duration
	// AtStart runs the step once when the job starts, not only after the first interval.
	AtStart bool
	// Once ends the job after the first step that succeeds (work done once at start, such as a
	// back-fill, retried every Interval until it is done).
	Once bool
	// Step does the work once. An error is logged and the step runs again at the next interval;
	// the step logs what it did itself.
	Step func(ctx context.Context) error
	Log  *slog.Logger
}

// Run runs the job until ctx ends (or, with Once, until a step succeeds) and returns nil then:
// a failing step is retried, never the end of the server.
func (j *Job) Run(ctx context.Context) error {
	log := j.Log
	if log == nil {
		log = slog.Default()
	}
	step := func(ctx context.Context) bool {
		err := j.Step(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn(j.Name+" failed; will retry", "err", err, "retry_in", j.Interval.String())
		}
		return err == nil && ctx.Err() == nil
	}
	if j.Once {
		for ctx.Err() == nil && !step(ctx) {
			if Sleep(ctx, j.Interval) != nil {
				break
			}
		}
		return nil
	}
	Every(ctx, j.Interval, j.AtStart, func(ctx context.Context) { step(ctx) })
	return nil
}

// Counted is the step of work that says how much it did: when n > 0 it logs done with n under
// key ("scheduled cleanup scans done", tables=3). Its error is the Job's to log and retry.
func Counted(log *slog.Logger, done, key string, work func(context.Context) (int, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := work(ctx)
		if n > 0 {
			log.Info(done, key, n)
		}
		return err
	}
}
