package tables

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

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
	local    map[string]*partial // this refresh's

	mu     sync.Mutex // guards files, local and rep
	listMu sync.Mutex // one reread of a manifest list at a time
}

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
		local: map[string]*partial{}}
}

func (r *reader) io(ctx context.Context) (icebergio.IO, error) {
	r.fsOnce.Do(func() { r.fsVal, r.fsErr = r.fs(ctx) })
	return r.fsVal, r.fsErr
}

// manifests returns the snapshot's manifest list, from the cache when it was read before.
func (r *reader) manifests(ctx context.Context, snap table.Snapshot) ([]manifestRef, error) {
	key := snap.ManifestList
	if key == "" {
		// v1 tables may embed manifest paths in the snapshot instead of a list file.
		return r.readList(ctx, snap)
	}
	row, err := r.db.IcebergManifestList.Query().Where(icebergmanifestlist.Path(key)).Only(ctx)
	switch {
	case err == nil:
		var refs []manifestRef
		if err := gunzipJSON(row.Manifests, &refs); err != nil {
			return nil, fmt.Errorf("cached manifest list %s: %w", key, err)
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
	blob, err := gzipJSON(refs)
	if err != nil {
		return nil, err
	}
	err = r.db.IcebergManifestList.Create().SetPath(key).SetManifests(blob).SetReadAt(r.now()).Exec(ctx)
	if err != nil && !ent.IsConstraintError(err) { // a concurrent refresh cached it first
		return nil, err
	}
	return refs, nil
}

func (r *reader) readList(ctx context.Context, snap table.Snapshot) ([]manifestRef, error) {
	fs, err := r.io(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: manifest list %s: %w", snap.SnapshotID, snap.ManifestList, err)
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
	return nil, fmt.Errorf("manifest %s is not in manifest list %s", ref.Path, snap.ManifestList)
}

// entries returns every entry of a manifest (deleted ones too), from the cache when it was
// read before.
func (r *reader) entries(ctx context.Context, snap table.Snapshot, ref manifestRef) ([]entry, error) {
	row, err := r.db.IcebergManifest.Query().Where(icebergmanifest.Path(ref.Path)).Only(ctx)
	switch {
	case err == nil:
		var es []entry
		if err := gunzipJSON(row.Entries, &es); err != nil {
			return nil, fmt.Errorf("cached manifest %s: %w", ref.Path, err)
		}
		r.count(func(rep *RefreshReport) { rep.ManifestsCached++ })
		return es, nil
	case !ent.IsNotFound(err):
		return nil, err
	}
	mf, err := r.manifestFile(ctx, snap, ref)
	if err != nil {
		return nil, err
	}
	fs, err := r.io(ctx)
	if err != nil {
		return nil, err
	}
	var es []entry
	for e, err := range mf.Entries(fs, false) {
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", ref.Path, err)
		}
		es = append(es, toEntry(e))
	}
	r.count(func(rep *RefreshReport) { rep.ManifestsRead++; rep.EntriesRead += int64(len(es)) })
	blob, err := gzipJSON(es)
	if err != nil {
		return nil, err
	}
	err = r.db.IcebergManifest.Create().SetPath(ref.Path).SetEntryCount(len(es)).SetEntries(blob).SetReadAt(r.now()).Exec(ctx)
	if err != nil && !ent.IsConstraintError(err) {
		return nil, err
	}
	return es, nil
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
	for id, v := range df.Partition() {
		out.Partition = append(out.Partition, partValue{FieldID: id, Value: jsonValue(v)})
	}
	slices.SortFunc(out.Partition, func(a, b partValue) int { return a.FieldID - b.FieldID })
	return out
}

// jsonValue turns a partition value into one that survives a JSON round trip unchanged:
// numbers as int64 or float64, strings and booleans as is, anything else as its text.
func jsonValue(v any) any {
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

func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
