package warehouse

// Step 3 of a commit: the new metadata file, named after the one it follows and written before
// any pointer moves (data first, then metadata). Metadata files are read through a cache: a
// location names the same metadata forever.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/tidemark/tidemark/tables"
)

// writeMetadataFiles writes the plans' new metadata files (a register's exists already) and
// returns where. One that cannot be written settles the commit as abandoned: nothing was
// committed.
func (s *Service) writeMetadataFiles(ctx context.Context, w tables.Warehouse, plans []*plan) ([]string, error) {
	var written []string
	for _, p := range plans {
		if p.noop || p.kind == "register" {
			continue
		}
		var err error
		if p.raw, err = s.writeMetadata(ctx, w, p.updated, p.newLoc); err != nil {
			s.settle(ctx, plans, stateAbandoned, "the metadata file could not be written: "+err.Error())
			s.undoAssets(ctx, plans)
			return nil, serveErr(ErrNotCommitted, "could not write the new metadata file %s: %v; nothing was committed", p.newLoc, err)
		}
		p.size = int64(len(p.raw))
		written = append(written, p.newLoc)
	}
	return written, nil
}

// metadataFileLocation names the next metadata file: <location>/metadata/<version>-<uuid>.metadata.json.
func (s *Service) metadataFileLocation(p *plan) (string, error) {
	version := 0
	if p.row != nil {
		base := path.Base(p.row.MetadataLocation)
		if v, err := strconv.Atoi(strings.SplitN(base, "-", 2)[0]); err == nil && v >= 0 {
			version = v + 1
		} else {
			version = 1
			for range p.base.PreviousFiles() {
				version++
			}
		}
	}
	lp, err := table.LoadLocationProvider(p.updated.Location(), p.updated.Properties())
	if err != nil {
		return "", invalid("location", "table %s: %v", p.ident, err)
	}
	return lp.NewTableMetadataFileLocation(version)
}

// writeMetadata writes a metadata file and returns what it wrote.
func (s *Service) writeMetadata(ctx context.Context, w tables.Warehouse, meta table.Metadata, loc string) ([]byte, error) {
	fsys, err := tables.IO(ctx, loc, w.Props)
	if err != nil {
		return nil, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("warehouse: the file IO for %s cannot write", loc)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	if err := wfs.WriteFile(loc, b); err != nil {
		return nil, err
	}
	return b, nil
}

// readMetadata reads and parses a metadata file under a warehouse.
func (s *Service) readMetadata(ctx context.Context, w tables.Warehouse, loc string) (table.Metadata, error) {
	if m, ok := s.metaCache.Get(loc); ok {
		return m, nil
	}
	// Guarded: only under the warehouse, only regular files (a FIFO named by a register must
	// not pin a thread), none larger than the limit.
	fsys, err := s.tables.WarehouseIO(ctx, w, loc)
	if err != nil {
		return nil, fmt.Errorf("warehouse: open %s: %w", loc, err)
	}
	f, err := fsys.Open(loc)
	if err != nil {
		return nil, fmt.Errorf("warehouse: open %s: %w", loc, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, s.limit+1))
	if err != nil {
		return nil, fmt.Errorf("warehouse: read %s: %w", loc, err)
	}
	if int64(len(b)) > s.limit {
		return nil, fmt.Errorf("warehouse: %s: %w", loc, tables.ErrTooLarge)
	}
	m, err := table.ParseMetadata(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("warehouse: parse %s: %w", loc, err)
	}
	s.metaCache.Add(loc, m, int64(len(b)))
	return m, nil
}

// DefaultMetadataCacheBytes bounds the parsed metadata files kept in memory, by the size of
// their files (a parsed file takes a few times that).
const DefaultMetadataCacheBytes = 64 << 20

// metaCache keeps parsed metadata files by location, bounded by the bytes of their files: a
// location names the same metadata forever. A file larger than a quarter of the bound is not
// kept.
type metaCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	lru   *lru.Cache[string, sizedMeta]
}

type sizedMeta struct {
	meta table.Metadata
	size int64
}

func newMetaCache(maxBytes int64) *metaCache {
	c := &metaCache{max: maxBytes}
	c.lru, _ = lru.NewWithEvict(1<<16, func(_ string, v sizedMeta) { c.bytes -= v.size })
	return c
}

func (c *metaCache) Get(loc string) (table.Metadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Get(loc)
	return v.meta, ok
}

func (c *metaCache) Add(loc string, m table.Metadata, size int64) {
	if size > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(loc) {
		return
	}
	c.lru.Add(loc, sizedMeta{m, size})
	c.bytes += size
	for c.bytes > c.max && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
	}
}
