package tables

import (
	"container/list"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"
)

// partial is one manifest's share of a snapshot's totals and of the current snapshot's health.
// Manifests are immutable, so a partial computed once stands for every later inspection: a
// refresh after one commit computes one partial and merges the rest from memory, instead of
// decoding every cached entry again. A partial is never changed once built.
type partial struct {
	agg       manifestAgg
	dataBytes int64
	sizes     []int64             // live data files' sizes
	parts     map[string]*partAcc // live data files by partition
}

// cost estimates a partial's memory in bytes.
func (p *partial) cost() int64 { return int64(8*len(p.sizes) + 96*len(p.parts) + 128) }

// partialOf computes a manifest's partial from its entries; the table's specs (through a)
// render the partition keys. Safe for concurrent use.
func (a *healthAcc) partialOf(es []entry) *partial {
	k := keyer{specs: a.specs}
	p := &partial{parts: map[string]*partAcc{}}
	p.agg.entries = int64(len(es))
	for _, e := range es {
		if !e.live() {
			continue
		}
		p.agg.bytes += e.Size
		if iceberg.ManifestEntryContent(e.Content) != iceberg.EntryContentData {
			p.agg.deletes++
			continue
		}
		p.agg.dataFiles++
		p.agg.records += e.Records
		p.dataBytes += e.Size
		p.sizes = append(p.sizes, e.Size)
		key := k.partitionKey(e)
		pa := p.parts[string(key)]
		if pa == nil {
			pa = &partAcc{coarse: k.coarseKey(e)}
			p.parts[string(key)] = pa
		}
		pa.files++
		pa.bytes += e.Size
	}
	return p
}

// merge adds the current snapshot's manifests' partials to its health. The partition map and
// figures are sized once for all of them: growing them a partition at a time took longer than
// the adding, at 26,000 partitions.
func (a *healthAcc) merge(ps []*partial) {
	nSizes, nParts := 0, 0
	for _, p := range ps {
		nSizes += len(p.sizes)
		nParts += len(p.parts) // at most: a partition may be in several manifests
	}
	a.sizes = slices.Grow(a.sizes, nSizes)
	if len(a.parts) == 0 {
		a.parts = make(map[string]*partAcc, nParts)
	}
	slab := make([]partAcc, 0, nParts) // never grows, so its elements stay where they are
	for _, p := range ps {
		a.h.DeleteFiles += p.agg.deletes
		a.h.DataFiles += p.agg.dataFiles
		a.h.Records += p.agg.records
		a.h.Bytes += p.dataBytes
		for _, size := range p.sizes {
			a.sizes = append(a.sizes, size)
			if size < a.small {
				a.h.SmallFiles++
				a.h.SmallFilesBytes += size
			}
			for i := range a.histogram {
				if a.histogram[i].UpTo == 0 || size <= a.histogram[i].UpTo {
					a.histogram[i].Files++
					a.histogram[i].Bytes += size
					break
				}
			}
		}
		for key, pp := range p.parts {
			q := a.parts[key]
			if q == nil {
				slab = append(slab, partAcc{coarse: pp.coarse})
				q = &slab[len(slab)-1]
				a.parts[key] = q
			}
			q.files += pp.files
			q.bytes += pp.bytes
		}
	}
}

// partials keeps the partials of recently inspected manifests, least recently used first out,
// within a memory budget (per process).
type partials struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // of *partialItem, most recent at the front
	byKey map[string]*list.Element
}

type partialItem struct {
	key string
	p   *partial
}

// DefaultPartialCache is the memory the health partials may hold (a table of 78,000 files in
// 26,000 partitions needs about 3 MiB).
const DefaultPartialCache = 64 << 20

func newPartials(max int64) *partials {
	return &partials{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *partials) get(key string) *partial {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		c.order.MoveToFront(el)
		return el.Value.(*partialItem).p
	}
	return nil
}

// has reports whether a partial is kept, without counting as a use.
func (c *partials) has(key string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byKey[key]
	return ok
}

func (c *partials) put(key string, p *partial) {
	if c == nil || p.cost() > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.order.PushFront(&partialItem{key, p})
	c.used += p.cost()
	for c.used > c.max {
		el := c.order.Back()
		it := el.Value.(*partialItem)
		c.order.Remove(el)
		delete(c.byKey, it.key)
		c.used -= it.p.cost()
	}
}

// partial returns a manifest's partial: from memory, else computed from its entries (from the
// database cache, else storage). The key holds the table's UUID as well as the path, since the
// partition keys depend on the table's specs.
func (r *reader) partial(ctx context.Context, snap table.Snapshot, ref manifestRef, tableUUID string, acc *healthAcc) (*partial, error) {
	key := tableUUID + "\x00" + ref.Path
	r.mu.Lock()
	p := r.local[key] // a manifest shared by several snapshots
	r.mu.Unlock()
	if p != nil {
		return p, nil
	}
	if p = r.partials.get(key); p != nil {
		r.count(func(rep *RefreshReport) { rep.ManifestsInMemory++ })
	} else {
		es, err := r.entries(ctx, snap, ref)
		if err != nil {
			return nil, err
		}
		p = acc.partialOf(es)
		r.partials.put(key, p)
	}
	r.mu.Lock()
	r.local[key] = p
	r.mu.Unlock()
	return p, nil
}

// manifestJob is a manifest to compute the partial of, with a snapshot that lists it.
type manifestJob struct {
	snap table.Snapshot
	ref  manifestRef
}

// prefetchChunk is how many manifests prefetch looks up in the database cache at once: one
// query instead of one per manifest, holding at most this many cached manifests in memory.
const prefetchChunk = 64

// prefetch computes the partials of the given manifests up to GOMAXPROCS at once: reading and
// decoding manifests is most of a cold inspection, and iceberg-go's own planning reads them
// in parallel too.
func (r *reader) prefetch(ctx context.Context, jobs []manifestJob, tableUUID string, acc *healthAcc) error {
	var todo []manifestJob
	for _, j := range jobs {
		key := tableUUID + "\x00" + j.ref.Path
		r.mu.Lock()
		p := r.local[key]
		r.mu.Unlock()
		if p == nil && !r.partials.has(key) {
			todo = append(todo, j)
		}
	}
	for chunk := range slices.Chunk(todo, prefetchChunk) {
		paths := make([]string, len(chunk))
		for i, j := range chunk {
			paths[i] = j.ref.Path
		}
		if err := r.lookup(ctx, paths); err != nil {
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(runtime.GOMAXPROCS(0))
		for _, j := range chunk {
			g.Go(func() error {
				_, err := r.partial(gctx, j.snap, j.ref, tableUUID, acc)
				if err != nil {
					return fmt.Errorf("snapshot %d: %w", j.snap.SnapshotID, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return nil
}
