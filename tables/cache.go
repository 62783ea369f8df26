package tables

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergmanifest"
	"github.com/tidemark/tidemark/ent/icebergmanifestlist"
)

// manifestRef is one entry of a manifest list, as cached.
type manifestRef struct {
	Path    string `json:"p"`
	Length  int64  `json:"l"`
	Content int    `json:"c"` // iceberg.ManifestContent: 0 data, 1 deletes
	SpecID  int32  `json:"s"`
	Added   int64  `json:"a"` // snapshot that added the manifest
}

// entry is one manifest entry, as cached. Deleted entries are kept: they still name files
// that older snapshots may reference.
type entry struct {
	Path      string      `json:"p"`
	Content   int8        `json:"c"`  // iceberg.ManifestEntryContent
	Status    int8        `json:"st"` // iceberg.ManifestEntryStatus
	Format    string      `json:"f"`
	Size      int64       `json:"b"`
	Records   int64       `json:"r"`
	SpecID    int32       `json:"sp"`
	Snapshot  int64       `json:"sn"`
	Partition []partValue `json:"pt,omitempty"`
}

type partValue struct {
	FieldID int `json:"i"`
	Value   any `json:"v"`
}

func (e entry) live() bool {
	return iceberg.ManifestEntryStatus(e.Status) != iceberg.EntryStatusDELETED
}

// manifestAgg is what a snapshot summary needs of one manifest.
type manifestAgg struct {
	entries            int64
	dataFiles, deletes int64
	records, bytes     int64
}

// reader reads manifest lists and manifests through the cache, counting what it had to read
// from storage. One reader serves one refresh or listing; entries and partial are safe for
// concurrent use (prefetch), the rest for one goroutine.
type reader struct {
	db  *ent.Client
	fs  func(ctx context.Context) (icebergio.IO, error)
	now func() time.Time
	rep *RefreshReport

	fsOnce sync.Once
	fsVal  icebergio.IO
	fsErr  error
	files  map[string]iceberg.ManifestFile // read from storage in this refresh, by path

	partials *partials           // the service's, across refreshes; nil keeps none
	lz4      *lz4Probe           // the service's; nil writes with the database's defaults
	local    map[string]*partial // this refresh's

	lists map[string][]manifestRef // manifest lists looked up by preload, by path
	// cached holds the manifests lookup looked up, by path, until entries takes them: their
	// cached entries, or nil when the cache has none.
	cached map[string][]byte

	// batch holds new cache rows back for flush to write together (one statement for many
	// rows instead of one per manifest); without it each row is written when read.
	batch        bool
	pending      []cacheRow
	pendingBytes int

	mu     sync.Mutex // guards files, local, cached, pending and rep
	listMu sync.Mutex // one reread of a manifest list at a time
}

// cacheRow is a manifest list or manifest read from storage, to be cached.
type cacheRow struct {
	list    bool
	path    string
	entries int // a manifest's
	blob    []byte
}

// flushBytes bounds the cache rows a batch holds before writing them, so a table of many
// manifests neither holds all of them in memory nor loses all that was read when a refresh
// ends early.
const flushBytes = 16 << 20

// count updates the report under the lock.
func (r *reader) count(f func(*RefreshReport)) {
	r.mu.Lock()
	f(r.rep)
	r.mu.Unlock()
}

func newReader(db *ent.Client, fs func(ctx context.Context) (icebergio.IO, error), now func() time.Time, rep *RefreshReport) *reader {
	if rep == nil {
		rep = &RefreshReport{}
	}
	return &reader{db: db, fs: fs, now: now, rep: rep, files: map[string]iceberg.ManifestFile{},
		local: map[string]*partial{}, lists: map[string][]manifestRef{}, cached: map[string][]byte{}}
}

func (r *reader) io(ctx context.Context) (icebergio.IO, error) {
	r.fsOnce.Do(func() { r.fsVal, r.fsErr = r.fs(ctx) })
	return r.fsVal, r.fsErr
}

// inChunk bounds the paths of one IN (...) lookup and the rows of one bulk insert, well under
// both databases' limits on bound parameters.
const inChunk = 500

// preload looks up the snapshots' cached manifest lists in one query (per inChunk) and reads
// the others from storage up to GOMAXPROCS at once, instead of a query and a read per snapshot
// in turn.
func (r *reader) preload(ctx context.Context, snaps []table.Snapshot) error {
	var keys []string
	for _, s := range snaps {
		if s.ManifestList != "" {
			keys = append(keys, s.ManifestList)
		}
	}
	for c := range slices.Chunk(keys, inChunk) {
		rows, err := r.db.IcebergManifestList.Query().Where(icebergmanifestlist.PathIn(c...)).All(ctx)
		if err != nil {
			return err
		}
		for _, row := range rows {
			refs, err := decodeRefs(row.Manifests)
			if err != nil {
				return fmt.Errorf("tables: cached manifest list %s: %w", row.Path, err)
			}
			r.lists[row.Path] = refs
			r.rep.ManifestListsHit++
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	read := make([][]manifestRef, len(snaps))
	for i, s := range snaps {
		if _, ok := r.lists[s.ManifestList]; ok || s.ManifestList == "" {
			continue
		}
		g.Go(func() error {
			refs, err := r.readList(gctx, s)
			read[i] = refs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, refs := range read {
		if refs == nil {
			continue
		}
		key := snaps[i].ManifestList
		if _, ok := r.lists[key]; ok { // two snapshots sharing a list
			continue
		}
		r.lists[key] = refs
		if err := r.store(ctx, cacheRow{list: true, path: key, blob: encodeRefs(refs)}); err != nil {
			return err
		}
	}
	return nil
}

// manifests returns the snapshot's manifest list, from the cache when it was read before.
func (r *reader) manifests(ctx context.Context, snap table.Snapshot) ([]manifestRef, error) {
	key := snap.ManifestList
	if key == "" {
		// v1 tables may embed manifest paths in the snapshot instead of a list file.
		return r.readList(ctx, snap)
	}
	if refs, ok := r.lists[key]; ok {
		return refs, nil
	}
	row, err := r.db.IcebergManifestList.Query().Where(icebergmanifestlist.Path(key)).Only(ctx)
	switch {
	case err == nil:
		refs, err := decodeRefs(row.Manifests)
		if err != nil {
			return nil, fmt.Errorf("tables: cached manifest list %s: %w", key, err)
		}
		r.count(func(rep *RefreshReport) { rep.ManifestListsHit++ })
		return refs, nil
	case !ent.IsNotFound(err):
		return nil, err
	}
	refs, err := r.readList(ctx, snap)
	if err != nil {
		return nil, err
	}
	return refs, r.store(ctx, cacheRow{list: true, path: key, blob: encodeRefs(refs)})
}

func (r *reader) readList(ctx context.Context, snap table.Snapshot) ([]manifestRef, error) {
	fs, err := r.io(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("tables: snapshot %d: manifest list %s: %w", snap.SnapshotID, snap.ManifestList, err)
	}
	refs := make([]manifestRef, len(mfs))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.ManifestListsRead++
	for i, m := range mfs {
		r.files[m.FilePath()] = m
		refs[i] = manifestRef{Path: m.FilePath(), Length: m.Length(), Content: int(m.ManifestContent()), SpecID: m.PartitionSpecID(), Added: m.SnapshotID()}
	}
	return refs, nil
}

// manifestFile returns the manifest as its list describes it. When the list came from the cache
// and this manifest did not, the list is read again for the manifest's inherited fields
// (snapshot ID, sequence numbers), once however many goroutines need it.
func (r *reader) manifestFile(ctx context.Context, snap table.Snapshot, ref manifestRef) (iceberg.ManifestFile, error) {
	known := func() (iceberg.ManifestFile, bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		mf, ok := r.files[ref.Path]
		return mf, ok
	}
	if mf, ok := known(); ok {
		return mf, nil
	}
	r.listMu.Lock()
	defer r.listMu.Unlock()
	if mf, ok := known(); ok {
		return mf, nil
	}
	if _, err := r.readList(ctx, snap); err != nil {
		return nil, err
	}
	if mf, ok := known(); ok {
		return mf, nil
	}
	return nil, fmt.Errorf("tables: manifest %s is not in manifest list %s", ref.Path, snap.ManifestList)
}

// lookup fetches the cached entries of the given manifests in one query (per inChunk) for
// entries to take, instead of one query per manifest.
func (r *reader) lookup(ctx context.Context, paths []string) error {
	for c := range slices.Chunk(paths, inChunk) {
		rows, err := r.db.IcebergManifest.Query().Where(icebergmanifest.PathIn(c...)).
			Select(icebergmanifest.FieldPath, icebergmanifest.FieldEntries).All(ctx)
		if err != nil {
			return err
		}
		r.mu.Lock()
		for _, p := range c {
			r.cached[p] = nil
		}
		for _, row := range rows {
			r.cached[row.Path] = row.Entries
		}
		r.mu.Unlock()
	}
	return nil
}

// entries returns every entry of a manifest (deleted ones too), from the cache when it was
// read before.
func (r *reader) entries(ctx context.Context, snap table.Snapshot, ref manifestRef) ([]entry, error) {
	r.mu.Lock()
	blob, looked := r.cached[ref.Path]
	delete(r.cached, ref.Path)
	r.mu.Unlock()
	if !looked {
		row, err := r.db.IcebergManifest.Query().Where(icebergmanifest.Path(ref.Path)).Only(ctx)
		switch {
		case err == nil:
			blob = row.Entries
		case !ent.IsNotFound(err):
			return nil, err
		}
	}
	if blob != nil {
		es, err := decodeEntries(blob)
		if err != nil {
			return nil, fmt.Errorf("tables: cached manifest %s: %w", ref.Path, err)
		}
		r.count(func(rep *RefreshReport) { rep.ManifestsCached++ })
		return es, nil
	}
	mf, err := r.manifestFile(ctx, snap, ref)
	if err != nil {
		return nil, err
	}
	fs, err := r.io(ctx)
	if err != nil {
		return nil, err
	}
	es := make([]entry, 0, max(0, int(mf.AddedDataFiles()+mf.ExistingDataFiles()+mf.DeletedDataFiles())))
	// Column statistics are never used here: leave them undecoded, as iceberg-go's own
	// planning does.
	for e, err := range iceberg.EntriesWithProjection(fs, mf, false, iceberg.ManifestEntryProjection{}) {
		if err != nil {
			return nil, fmt.Errorf("tables: manifest %s: %w", ref.Path, err)
		}
		es = append(es, toEntry(e))
	}
	r.count(func(rep *RefreshReport) { rep.ManifestsRead++; rep.EntriesRead += int64(len(es)) })
	return es, r.store(ctx, cacheRow{path: ref.Path, entries: len(es), blob: encodeEntries(es)})
}

// store caches a row read from storage: now, or in a batch when the reader batches (written
// by flush, or here once the batch is large).
func (r *reader) store(ctx context.Context, row cacheRow) error {
	if !r.batch {
		return r.write(ctx, []cacheRow{row})
	}
	r.mu.Lock()
	r.pending = append(r.pending, row)
	r.pendingBytes += len(row.blob)
	var rows []cacheRow
	if r.pendingBytes >= flushBytes {
		rows, r.pending, r.pendingBytes = r.pending, nil, 0
	}
	r.mu.Unlock()
	return r.write(ctx, rows)
}

// flush writes the rows a batch holds.
func (r *reader) flush(ctx context.Context) error {
	r.mu.Lock()
	rows := r.pending
	r.pending, r.pendingBytes = nil, 0
	r.mu.Unlock()
	return r.write(ctx, rows)
}

// write inserts cache rows, inChunk per statement. A row cached meanwhile by a concurrent
// refresh fails the statement; its rows are then written one at a time, skipping those.
func (r *reader) write(ctx context.Context, rows []cacheRow) error {
	now := r.now()
	var lists []*ent.IcebergManifestListCreate
	var mans []cacheRow
	for _, row := range rows {
		if row.list {
			lists = append(lists, r.db.IcebergManifestList.Create().SetPath(row.path).SetManifests(row.blob).SetReadAt(now))
		} else {
			mans = append(mans, row)
		}
	}
	for c := range slices.Chunk(lists, inChunk) {
		if err := r.db.IcebergManifestList.CreateBulk(c...).Exec(ctx); ent.IsConstraintError(err) {
			for _, one := range c {
				if err := one.Exec(ctx); err != nil && !ent.IsConstraintError(err) {
					return err
				}
			}
		} else if err != nil {
			return err
		}
	}
	for c := range slices.Chunk(mans, inChunk) {
		size := 0
		for _, row := range c {
			size += len(row.blob)
		}
		// A small insert (a refresh's one new manifest) is not worth the transaction's three
		// round trips.
		insert := func(rows []cacheRow) error {
			return r.db.IcebergManifest.CreateBulk(manifestCreates(r.db, rows, now)...).Exec(ctx)
		}
		if size >= lz4Bytes && r.lz4.available(ctx, r.db) {
			insert = func(rows []cacheRow) error { return insertLZ4(ctx, r.db, r.lz4, rows, now) }
		}
		if err := insert(c); ent.IsConstraintError(err) {
			for _, row := range c {
				if err := insert([]cacheRow{row}); err != nil && !ent.IsConstraintError(err) {
					return err
				}
			}
		} else if err != nil {
			return err
		}
	}
	return nil
}

func manifestCreates(db *ent.Client, rows []cacheRow, now time.Time) []*ent.IcebergManifestCreate {
	out := make([]*ent.IcebergManifestCreate, len(rows))
	for i, row := range rows {
		out[i] = db.IcebergManifest.Create().SetPath(row.path).SetEntryCount(row.entries).SetEntries(row.blob).SetReadAt(now)
	}
	return out
}

// lz4Bytes is the size of manifest rows from which insertLZ4 writes them.
const lz4Bytes = 64 << 10

// insertLZ4 inserts manifest rows in a transaction that has PostgreSQL compress them with lz4.
// Its default, pglz, took most of the insert: the 26 manifests (1.2 MiB) of the benchmark's
// hourly table took a median 18 ms with pglz, 7.5 ms with lz4. A server built without lz4
// refuses the setting: the rows are then inserted as they would be otherwise, and p is told.
func insertLZ4(ctx context.Context, db *ent.Client, p *lz4Probe, rows []cacheRow, now time.Time) error {
	tx, err := db.Tx(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL default_toast_compression = lz4"); err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			return errors.Join(err, rerr)
		}
		p.refused()
		return db.IcebergManifest.CreateBulk(manifestCreates(db, rows, now)...).Exec(ctx)
	}
	if err := tx.IcebergManifest.CreateBulk(manifestCreates(tx.Client(), rows, now)...).Exec(ctx); err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit()
}

// lz4Probe says whether insertLZ4 may be tried: on PostgreSQL, until the server refuses lz4 (a
// build option). Asking the server's settings instead cost a query of about 1 ms per service.
type lz4Probe struct {
	mu        sync.Mutex
	asked, ok bool
}

func (p *lz4Probe) available(ctx context.Context, db *ent.Client) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.asked {
		var d string
		if _, err := db.IcebergManifest.Query().Where(func(s *entsql.Selector) {
			d = s.Dialect()
			s.Where(entsql.False())
		}).Exist(ctx); err != nil {
			return false // asked again next time
		}
		p.asked, p.ok = true, d == dialect.Postgres
	}
	return p.ok
}

func (p *lz4Probe) refused() {
	p.mu.Lock()
	p.ok = false
	p.mu.Unlock()
}

func toEntry(e iceberg.ManifestEntry) entry {
	df := e.DataFile()
	out := entry{
		Path:     df.FilePath(),
		Content:  int8(df.ContentType()),
		Status:   int8(e.Status()),
		Format:   string(df.FileFormat()),
		Size:     df.FileSizeBytes(),
		Records:  df.Count(),
		SpecID:   df.SpecID(),
		Snapshot: e.SnapshotID(),
	}
	if part := df.Partition(); len(part) > 0 {
		out.Partition = make([]partValue, 0, len(part))
		for id, v := range part {
			out.Partition = append(out.Partition, partValue{FieldID: id, Value: scalarValue(v)})
		}
	}
	slices.SortFunc(out.Partition, func(a, b partValue) int { return a.FieldID - b.FieldID })
	return out
}

// scalarValue turns a partition value into one the cache and the API's JSON both keep unchanged:
// numbers as int64 or float64, strings and booleans as is, anything else as its text.
func scalarValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case float32:
		return float64(x)
	case float64:
		return x
	case iceberg.Date:
		return int64(x)
	case iceberg.Time:
		return int64(x)
	case iceberg.Timestamp:
		return int64(x)
	case iceberg.TimestampNano:
		return int64(x)
	case []byte:
		return fmt.Sprintf("%x", x)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

func gunzipJSON(b []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(io.LimitReader(zr, 1<<31))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return zr.Close()
}
