package warehouse

// The manifests committed manifest lists name, kept by the list's path: a commit compares its
// new list with its parent's to record the manifests it drops, and the parent is, more often
// than not, the list the table's previous commit added. A manifest list is never rewritten, so
// a path names the same manifests forever; only lists of commits that swapped are kept.

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// manifestRef is one manifest a manifest list names.
type manifestRef struct {
	path   string
	length int64
}

// DefaultListCacheBytes bounds the manifest lists kept, by the length of their manifests' paths.
const DefaultListCacheBytes = 16 << 20

// listCache is bounded by bytes; a list larger than a quarter of the bound is not kept.
type listCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	lru   *lru.Cache[string, []manifestRef]
}

func newListCache(maxBytes int64) *listCache {
	c := &listCache{max: maxBytes}
	c.lru, _ = lru.NewWithEvict(1<<16, func(k string, v []manifestRef) { c.bytes -= refsSize(k, v) })
	return c
}

// refsSize is about what a kept list takes: its path, and each manifest's path and length.
func refsSize(list string, refs []manifestRef) int64 {
	n := int64(len(list))
	for _, r := range refs {
		n += int64(len(r.path)) + 24
	}
	return n
}

func (c *listCache) Get(list string) ([]manifestRef, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(list)
}

func (c *listCache) Add(list string, refs []manifestRef) {
	size := refsSize(list, refs)
	if size > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(list) {
		return
	}
	c.lru.Add(list, refs)
	c.bytes += size
	for c.bytes > c.max && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
	}
}
