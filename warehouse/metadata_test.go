package warehouse

import (
	"testing"

	"github.com/apache/iceberg-go/table"
)

func TestMetaCacheBoundedByBytes(t *testing.T) {
	c := newMetaCache(1000)
	var m table.Metadata
	for i := range 10 {
		c.Add(string(rune('a'+i)), m, 200)
	}
	if c.bytes > 1000 || c.lru.Len() != 5 {
		t.Fatalf("%d bytes in %d entries, want at most 1000 in 5", c.bytes, c.lru.Len())
	}
	if _, ok := c.Get("a"); ok {
		t.Fatal("the oldest entry should have been evicted")
	}
	c.Add("big", m, 300) // over a quarter of the bound: not kept
	if _, ok := c.Get("big"); ok {
		t.Fatal("a file over a quarter of the bound was kept")
	}
}
