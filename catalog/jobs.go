package catalog

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/internal/loop"
)

// KeyPurgeJob forgets expired idempotency keys every hour (PurgeIdempotencyKeys).
func (c *Catalog) KeyPurgeJob() *loop.Job {
	return &loop.Job{Name: "catalog: purging idempotency keys", Interval: time.Hour, Log: c.log,
		Step: loop.Counted(c.log, "forgot expired idempotency keys", "count", c.PurgeIdempotencyKeys)}
}

// IndexJob gives every asset without a search doc (a database from before search) one, once, at
// start (IndexMissing), so the server answers at once; until it is done, search does not find
// those assets and IndexStatus says "indexing". A failure is retried a minute later; the work
// done stays done.
func (c *Catalog) IndexJob() *loop.Job {
	const every = 50_000 // a log line per this many assets
	start := time.Now()
	return &loop.Job{Name: "search index: indexing assets from before search", Interval: time.Minute, AtStart: true, Once: true, Log: c.log,
		Step: func(ctx context.Context) error {
			c.indexStatus.Store("indexing")
			next := every
			n, err := c.IndexMissing(ctx, func(done int) {
				if done >= next {
					c.log.Info("search index: indexing assets from before search", "indexed", done)
					next = (done/every + 1) * every
				}
			})
			if err != nil {
				return err
			}
			c.indexStatus.Store("ready")
			if n > 0 {
				c.log.Info("search index: every asset indexed", "indexed", n, "took", time.Since(start).Round(time.Millisecond).String())
			}
			return nil
		}}
}

// IndexStatus says whether IndexJob still gives assets from before search their docs
// ("indexing") or has ("ready"); "" before it starts.
func (c *Catalog) IndexStatus() string {
	s, _ := c.indexStatus.Load().(string)
	return s
}
