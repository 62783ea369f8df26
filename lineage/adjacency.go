package lineage

import (
	"slices"
	"unsafe"
)

// The graph keeps a million nodes and millions of edges for as long as the process runs. Held
// as a slice per node and a string per name, that is three million pointers the garbage
// collector scans on every cycle, taking CPU from the requests running meanwhile. adjacency and
// nameArena hold the same data without pointers: the collector skips them.

// adjacency is every node's neighbour list (one direction), all lists in one pool.
type adjacency struct {
	at    []span // by node index
	pool  []int32
	waste int // pool slots left behind by lists that moved
}

// span is a node's list: pool[off : off+n], with room up to off+cap.
type span struct{ off, n, cap uint32 }

// grow adds an empty list for a new node.
func (a *adjacency) grow() { a.at = append(a.at, span{}) }

// list returns u's neighbours. The slice is valid while the caller holds the graph's lock.
func (a *adjacency) list(u int32) []int32 {
	s := a.at[u]
	return a.pool[s.off : s.off+s.n : s.off+s.n]
}

// add appends v to u's list, moving the list to the pool's end (with twice the room) when full.
func (a *adjacency) add(u, v int32) {
	s := &a.at[u]
	if s.n == s.cap {
		c := max(2, 2*s.cap)
		off := len(a.pool)
		a.pool = slices.Grow(a.pool, int(c))[:off+int(c)] // slots past n are never read
		copy(a.pool[off:], a.pool[s.off:s.off+s.n])
		a.waste += int(s.cap)
		s.off, s.cap = uint32(off), c
	}
	a.pool[s.off+s.n] = v
	s.n++
	if a.waste > 1<<16 && a.waste > len(a.pool)/3 {
		a.compact()
	}
}

// compact rewrites the pool with each list a quarter longer than it is: most lists are written
// once (at load) and then only read, and the slack spares a compaction per few new edges while
// a graph loads. A list that outgrows it moves to the end.
func (a *adjacency) compact() {
	room := func(n uint32) uint32 { return n + n/4 + 1 }
	size := 0
	for _, s := range a.at {
		size += int(room(s.n))
	}
	pool := make([]int32, size)
	off := uint32(0)
	for i, s := range a.at {
		copy(pool[off:], a.pool[s.off:s.off+s.n])
		a.at[i] = span{off, s.n, room(s.n)}
		off += room(s.n)
	}
	a.pool, a.waste = pool, 0
}

// nameArena holds names back to back. Bytes once written are never changed (a name that
// changes is appended anew), so strings handed out point into the arena without a copy and
// stay valid after the arena grows or is compacted: they keep their old array alive.
type nameArena struct {
	b     []byte
	waste int
}

// nameRef is a name's place in the arena.
type nameRef struct{ off, n uint32 }

// put stores s in place of old, which becomes waste, and returns where s is.
func (a *nameArena) put(s string, old nameRef) nameRef {
	if a.str(old) == s {
		return old
	}
	a.waste += int(old.n)
	r := nameRef{uint32(len(a.b)), uint32(len(s))}
	a.b = append(a.b, s...)
	return r
}

// wasteful says when more than half the arena is names no longer used.
func (a *nameArena) wasteful() bool { return a.waste > 1<<20 && a.waste > len(a.b)/2 }

func (a *nameArena) str(r nameRef) string {
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&a.b[r.off], r.n)
}
