package cleanup

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/tables"
)

// A location is not owned by one table. Before anything is confirmed or deleted under a
// location, the cleanup bot reads the world around it: every known table whose location
// overlaps it (the same location, or one nested in the other), the union of what they all
// reference, and any table that evidently lives there without Tidemark knowing it (a
// metadata file with another table-uuid).

// SharedTable is a known table whose location overlaps the scanned one.
type SharedTable struct {
	AssetID   uuid.UUID  `json:"asset_id"`
	TableUUID string     `json:"table_uuid"`
	Location  string     `json:"location"`
	GoneAt    *time.Time `json:"gone_at,omitempty"`
	// Skipped says why this table's references were not read (its last metadata is gone).
	Skipped string `json:"skipped,omitempty"`
}

// ForeignTenant is a metadata file under the location that names another table than every
// known one there, or that could not be read (which counts as another table: fail closed).
type ForeignTenant struct {
	MetadataFile string     `json:"metadata_file"`
	TableUUID    string     `json:"table_uuid,omitempty"`
	AssetID      *uuid.UUID `json:"asset_id,omitempty"` // the asset bound to that table-uuid, if any
	Error        string     `json:"error,omitempty"`
}

// world is the union of references of every table overlapping a location, and who they are.
type world struct {
	refs   *refSet
	uuids  map[string]bool // table-uuids of the tables read (the scanned one included)
	shared []SharedTable   // the other tables
	reads  int             // manifests and manifest lists read from storage
	// versions is the metadata file each table's references were read from. Metadata files
	// are immutable, so the same files name the same references.
	versions map[uuid.UUID]string
	reused   bool // the references are a previous read's: no table had committed since
}

func overlaps(a, b string) bool {
	ka, _ := normalize(strings.TrimRight(a, "/"))
	kb, _ := normalize(strings.TrimRight(b, "/"))
	return ka == kb || strings.HasPrefix(ka, kb+"/") || strings.HasPrefix(kb, ka+"/")
}

// readWorld reads the references of live (unless nil) and of every other known table whose
// location overlaps loc: live ones, dropped ones within the grace period, and dropped ones
// whose retirement or purge is under way. A table that cannot be read fails the read (fail closed),
// except a dropped one whose last metadata file is gone: nothing of it is left to protect.
//
// With prev (a read of the same location earlier in this scan), the tables are opened first and,
// when every one is at the metadata file prev read it from (nothing was committed since, and
// no table came or went), prev's references are reused instead of read again.
func (s *Service) readWorld(ctx context.Context, self uuid.UUID, loc string, live *tables.Live, prev ...*world) (*world, error) {
	w := &world{refs: &refSet{}, uuids: map[string]bool{}, versions: map[uuid.UUID]string{}}
	type opened struct {
		l    *tables.Live
		wrap string // how a failure is reported
	}
	var todo []opened
	var elsewhere []string // strays of the tables elsewhere
	add := func(id uuid.UUID, l *tables.Live, wrap string) {
		todo = append(todo, opened{l, wrap})
		w.versions[id] = l.Refs.MetadataLocation
		w.uuids[l.Table.Metadata().TableUUID().String()] = true
	}
	if live != nil {
		add(self, live, "read the table's metadata: %w")
	}
	now := s.clock()
	for after := uuid.Nil; ; {
		ts, more, err := s.tables.List(ctx, after, 500)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			after = t.AssetID
			if t.AssetID == self {
				continue
			}
			if !overlaps(t.Location, loc) {
				// Elsewhere, but every known table's references count, whatever its location:
				// those outside its own location (strays: normally none) that fall under loc.
				l, err := s.readElsewhere(ctx, t, loc, now)
				if err != nil {
					return nil, err
				}
				if l == nil {
					continue
				}
				out, reads, err := s.strayRefs(ctx, l)
				w.reads += reads
				if err != nil {
					return nil, fmt.Errorf("cleanup: table %s (at %s) could not be read, so whether it references files under %s is unknown: %w", t.AssetID, t.Location, loc, err)
				}
				w.versions[t.AssetID] = l.Refs.MetadataLocation
				w.uuids[l.Table.Metadata().TableUUID().String()] = true
				elsewhere = append(elsewhere, out...)
				continue
			}
			st := SharedTable{AssetID: t.AssetID, TableUUID: t.TableUUID, Location: t.Location, GoneAt: t.GoneAt}
			// Known, even when nothing of it is protected any more: its metadata is no stranger's.
			w.uuids[t.TableUUID] = true
			if t.GoneAt != nil && now.Sub(*t.GoneAt) >= s.policy.Grace {
				retiring, err := s.db.Proposal.Query().Where(proposal.AssetID(t.AssetID), proposal.KindIn(proposal.KindUnusedAsset, proposal.KindPurge),
					proposal.StateEQ(proposal.StateExecuting)).Exist(ctx)
				if err != nil {
					return nil, err
				}
				if !retiring {
					st.Skipped = fmt.Sprintf("dropped at %s, longer ago than the %s grace period", words.Time(*t.GoneAt), words.Duration(s.policy.Grace))
					w.shared = append(w.shared, st)
					continue
				}
			}
			other, err := s.tables.Open(ctx, t.AssetID)
			if err != nil && t.GoneAt != nil && errors.Is(err, fs.ErrNotExist) {
				st.Skipped = "dropped, and its last metadata file is gone"
				w.shared = append(w.shared, st)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("cleanup: table %s shares the location %s and could not be read, so nothing there can be judged unreferenced: %w", t.AssetID, loc, err)
			}
			add(t.AssetID, other, fmt.Sprintf("table %s shares the location %s and its metadata could not be read: %%w", t.AssetID, loc))
			w.shared = append(w.shared, st)
		}
		if !more {
			break
		}
	}
	_, locPath := normalize(strings.TrimRight(loc, "/"))
	for _, p := range elsewhere {
		// By the path alone, across schemes: a superset of what lies under loc.
		if _, po := normalize(p); strings.HasPrefix(po, locPath+"/") {
			w.refs.add(p)
		}
	}
	if len(prev) == 1 && prev[0] != nil && maps.Equal(prev[0].versions, w.versions) {
		w.refs, w.reused = prev[0].refs, true
		return w, nil
	}
	for _, o := range todo {
		before := o.l.Refs.Report.ManifestsRead + o.l.Refs.Report.ManifestListsRead
		refs, err := s.tables.WalkReferences(ctx, o.l, func(p string, _ tables.RefKind) error { w.refs.add(p); return nil })
		w.reads += refs.Report.ManifestsRead + refs.Report.ManifestListsRead - before
		if err != nil {
			return nil, fmt.Errorf(o.wrap, err)
		}
	}
	w.refs.seal()
	return w, nil
}

// readElsewhere opens a known table whose location does not overlap loc, for its references
// under loc: live ones, and dropped ones within the grace period or being retired (nil when
// none of those). One that cannot be read fails the read (fail closed), except a dropped one
// whose metadata is gone.
func (s *Service) readElsewhere(ctx context.Context, t tables.Table, loc string, now time.Time) (*tables.Live, error) {
	if t.GoneAt != nil && now.Sub(*t.GoneAt) >= s.policy.Grace {
		retiring, err := s.db.Proposal.Query().Where(proposal.AssetID(t.AssetID), proposal.KindIn(proposal.KindUnusedAsset, proposal.KindPurge),
			proposal.StateEQ(proposal.StateExecuting)).Exist(ctx)
		if err != nil || !retiring {
			return nil, err
		}
	}
	l, err := s.tables.Open(ctx, t.AssetID)
	if err != nil && t.GoneAt != nil && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cleanup: table %s (at %s) could not be read, so whether it references files under %s is unknown; nothing there is judged unreferenced until it can be read: %w", t.AssetID, t.Location, loc, err)
	}
	return l, nil
}

// strays keeps, by metadata file, the references of a table that lie outside its own location
// (a commit from before commits were checked, a registered layout): normally none. A metadata
// file never changes, so neither do they; a table elsewhere is walked once per version, not on
// every scan of every other table.
type strays struct {
	cache *lru.Cache[string, []string] // safe for concurrent use
}

func newStrays() *strays {
	c, _ := lru.New[string, []string](4096) // only a size below 1 fails
	return &strays{cache: c}
}

// strayRefs returns l's references outside its own location, and the manifests and manifest
// lists read to find them (0 when they were known).
func (s *Service) strayRefs(ctx context.Context, l *tables.Live) ([]string, int, error) {
	key := l.Refs.MetadataLocation
	if out, ok := s.strays.cache.Get(key); ok {
		return out, 0, nil
	}
	own := l.Table.Metadata().Location()
	var out []string
	before := l.Refs.Report.ManifestsRead + l.Refs.Report.ManifestListsRead
	refs, err := s.tables.WalkReferences(ctx, l, func(p string, _ tables.RefKind) error {
		if tables.Owns(own, p) != nil {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	s.strays.cache.Add(key, out)
	return out, refs.Report.ManifestsRead + refs.Report.ManifestListsRead - before, nil
}

// probeTenants reads every *.metadata.json among paths (and under loc/metadata/ when list is
// set) that the world does not reference, and returns those naming a table-uuid no known table
// has, or that cannot be read. It returns the storage requests it made (lists, gets).
func (s *Service) probeTenants(ctx context.Context, fsys icebergio.IO, loc string, w *world, paths []string, list bool) ([]ForeignTenant, int64, int64, error) {
	var lists, gets int64
	seen := map[string]bool{}
	var metas []string
	consider := func(p string) {
		key, _ := normalize(p)
		if !strings.HasSuffix(key, ".metadata.json") || w.refs.has(key) || seen[key] {
			return
		}
		seen[key] = true
		metas = append(metas, p)
	}
	for _, p := range paths {
		consider(p)
	}
	if list {
		lister, ok := fsys.(icebergio.ListableIO)
		if !ok {
			return nil, 0, 0, fmt.Errorf("cleanup: the storage of %s cannot be listed to look for other tables' metadata", loc)
		}
		lists++
		if err := s.wait(ctx, s.lists); err != nil {
			return nil, lists, gets, err
		}
		err := lister.WalkDir(strings.TrimRight(loc, "/")+"/metadata", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if !d.IsDir() {
				consider(p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, lists, gets, fmt.Errorf("cleanup: list %s/metadata to look for other tables' metadata: %w", loc, err)
		}
	}
	var out []ForeignTenant
	for _, p := range metas {
		if err := s.wait(ctx, s.heads); err != nil {
			return nil, lists, gets, err
		}
		gets++
		id, err := metadataUUID(fsys, p)
		if err == nil && w.uuids[id] {
			continue // an older metadata file of a known table
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed: it names nobody now
		}
		ft := ForeignTenant{MetadataFile: p, TableUUID: id}
		if err != nil {
			ft.Error = err.Error()
		} else if ref, ok, lerr := s.cat.LookupExternal(ctx, catalog.SystemIcebergTable, id); lerr == nil && ok {
			aid := ref.ID
			ft.AssetID = &aid
		}
		out = append(out, ft)
	}
	return out, lists, gets, nil
}

// maxMetadataBytes bounds how much of a metadata file is read to find its table-uuid.
const maxMetadataBytes = 64 << 20

// metadataUUID streams a metadata file's top-level keys until table-uuid.
func metadataUUID(fsys icebergio.IO, p string) (string, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = io.LimitReader(f, maxMetadataBytes)
	if strings.HasSuffix(p, ".gz.metadata.json") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return "", fmt.Errorf("cleanup: read %s: %w", p, err)
		}
		defer gz.Close()
		r = io.LimitReader(gz, maxMetadataBytes)
	}
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", fmt.Errorf("cleanup: %s is not a JSON object", p)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("cleanup: read %s: %w", p, err)
		}
		key, _ := t.(string)
		if key == "table-uuid" {
			var id string
			if err := dec.Decode(&id); err != nil {
				return "", fmt.Errorf("cleanup: read the table-uuid of %s: %w", p, err)
			}
			if _, err := uuid.Parse(id); err != nil {
				return "", fmt.Errorf("cleanup: %s has a table-uuid that is not a UUID", p)
			}
			return strings.ToLower(id), nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", fmt.Errorf("cleanup: read %s: %w", p, err)
		}
	}
	return "", fmt.Errorf("cleanup: %s has no table-uuid", p)
}

func foreignText(fs []ForeignTenant) string {
	var parts []string
	for _, f := range fs {
		switch {
		case f.Error != "":
			parts = append(parts, fmt.Sprintf("%s (unreadable: %s)", f.MetadataFile, f.Error))
		case f.AssetID != nil:
			parts = append(parts, fmt.Sprintf("%s (table-uuid %s, asset %s)", f.MetadataFile, f.TableUUID, f.AssetID))
		default:
			parts = append(parts, fmt.Sprintf("%s (table-uuid %s, unknown to Tidemark)", f.MetadataFile, f.TableUUID))
		}
		if len(parts) == 3 && len(fs) > 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-3))
			break
		}
	}
	return strings.Join(parts, "; ")
}

// keepAt is what an execution re-reads right before a batch of deletions at loc: the
// references of every table there (live's, unless nil, and every other known table's), which
// must be kept. It stops the execution when a table nobody told Tidemark about lives there;
// own, when set, is a table-uuid of the asset's own that is not such a stranger.
func (s *Service) keepAt(ctx context.Context, asset uuid.UUID, loc string, live *tables.Live, fsys icebergio.IO, own string) (*refSet, error) {
	w, err := s.readWorld(ctx, asset, loc, live)
	if err != nil {
		return nil, err
	}
	if own != "" {
		w.uuids[own] = true
	}
	if err := s.noTenants(ctx, fsys, loc, w); err != nil {
		return nil, err
	}
	return w.refs, nil
}

// noTenants stops an execution when a table nobody told Tidemark about lives at loc.
func (s *Service) noTenants(ctx context.Context, fsys icebergio.IO, loc string, w *world) error {
	foreign, _, _, err := s.probeTenants(ctx, fsys, loc, w, nil, true)
	if err != nil {
		return err
	}
	if len(foreign) > 0 {
		return stop("another table lives in %s: %s; nothing there is deleted while it does", loc, foreignText(foreign))
	}
	return nil
}

// forgetObservations drops every observation of a table: they no longer prove anything. Scans
// and executions call it when they find a foreign tenant in the location.
func (s *Service) forgetObservations(ctx context.Context, asset uuid.UUID) error {
	_, err := s.db.CleanupObservation.Delete().Where(cleanupobservation.AssetID(asset)).Exec(ctx)
	return err
}

// Paths, and the set of referenced ones.

// normalize turns a listed or referenced path into the key both are compared by, and the
// path alone (without scheme and authority) for spotting two names of one file. Local paths,
// file:/x and file:///x are all file:///x; s3a and s3n are s3; scheme and authority are
// compared case-insensitively.
func normalize(p string) (key, pathOnly string) {
	scheme, auth, rest := "file", "", p
	if i := strings.Index(p, "://"); i >= 0 {
		scheme, rest = strings.ToLower(p[:i]), p[i+3:]
		if scheme == "file" {
			// file:///x has an empty authority; file://host/x names a host.
			if !strings.HasPrefix(rest, "/") {
				auth, rest, _ = strings.Cut(rest, "/")
				rest = "/" + rest
			}
		} else {
			auth, rest, _ = strings.Cut(rest, "/")
			rest = "/" + rest
		}
	} else if r, ok := strings.CutPrefix(p, "file:"); ok {
		rest = r
	}
	switch scheme {
	case "s3a", "s3n":
		scheme = "s3"
	}
	auth = strings.ToLower(auth)
	clean := path.Clean("/" + rest)
	return scheme + "://" + auth + clean, clean
}

// refSet is the set of referenced files as sorted 64-bit hashes of their keys (and of their
// paths alone): 16 bytes a referenced file, whatever its path length. A hash collision can only
// make an unreferenced file look referenced, which keeps it; never the reverse.
type refSet struct {
	keys  []uint64
	paths []uint64
}

func (r *refSet) add(p string) {
	k, po := normalize(p)
	r.keys = append(r.keys, xxhash.Sum64String(k))
	r.paths = append(r.paths, xxhash.Sum64String(po))
}

func (r *refSet) seal() {
	slices.Sort(r.keys)
	r.keys = slices.Compact(r.keys)
	slices.Sort(r.paths)
	r.paths = slices.Compact(r.paths)
}

func (r *refSet) has(key string) bool {
	_, ok := slices.BinarySearch(r.keys, xxhash.Sum64String(key))
	return ok
}

func (r *refSet) hasPath(pathOnly string) bool {
	_, ok := slices.BinarySearch(r.paths, xxhash.Sum64String(pathOnly))
	return ok
}
