package lineage

import "sync"

// A walk's working memory is kept for the next walk. A sync.Pool alone is emptied by the
// second garbage collection without a walk in between, and a server whose collections come
// from other work (ingest, a big answer) then paid for fresh memory on its next small answer:
// the visited set is 8 bytes per node of the whole graph (8 MB at a million nodes), in pages the
// kernel must fault in as the walk first writes them. So a few of each are kept on free lists
// the collector leaves alone; only the overflow goes to a sync.Pool.

// freeList keeps up to max values for reuse.
type freeList[T any] struct {
	mu   sync.Mutex
	max  int
	free []*T
}

// get returns a kept value, nil when there is none.
func (f *freeList[T]) get() *T {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.free)
	if n == 0 {
		return nil
	}
	v := f.free[n-1]
	f.free[n-1] = nil
	f.free = f.free[:n-1]
	return v
}

// put keeps v if there is room, reporting whether it did.
func (f *freeList[T]) put(v *T) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.free) >= f.max {
		return false
	}
	f.free = append(f.free, v)
	return true
}

// walkBufs are the slices of one walk and of the View built from it.
type walkBufs struct {
	order, depths, level []int32
	fronts               [4][]int32 // per direction walked: the frontier and the next one
	edges                [][2]int32
	reached              []int
	recs                 []node
}

var (
	// walkFree keeps the buffers of answers up to a few thousand nodes (a 5-hop answer over
	// the graph is 1,337), about 300 KB each at most.
	walkFree = freeList[walkBufs]{max: 4}
	walkPool sync.Pool
)

func getWalkBufs() *walkBufs {
	if b := walkFree.get(); b != nil {
		return b
	}
	if b, _ := walkPool.Get().(*walkBufs); b != nil {
		return b
	}
	return &walkBufs{}
}

// putWalkBufs keeps b for the next walk: on the free list when small, in the pool when large,
// not at all when huge (an odd 100,000-node answer's memory is not held for ever).
func putWalkBufs(b *walkBufs) {
	switch nodes, edges := cap(b.recs), cap(b.edges); {
	case nodes > 1<<20 || edges > 4<<20:
	case nodes <= 1<<12 && edges <= 1<<13 && walkFree.put(b):
	default:
		walkPool.Put(b)
	}
}

// marksFree is how many visited sets a graph keeps past collections: one per walk running at
// once on a small server; more concurrent walks use the pool.
const marksFree = 2

// putMarks keeps m for the next walk.
func (g *Graph) putMarks(m *marks) {
	if !g.markFree.put(m) {
		markPool.Put(m)
	}
}
