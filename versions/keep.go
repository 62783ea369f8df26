package versions

// What snapshot expiry must keep: the versions people still read by time travel, and the input
// versions of downstream tables whose owners asked for reproducibility.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/sqltime"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/ent/label"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/internal/chunk"
)

// KeepInputVersionsTag is the curated tag by which a downstream asset asks for reproducibility:
// the input versions its current version was built from are kept by snapshot expiry. Catalog
// curation has no key-value properties, so the tag is the property; "keep-input-versions.true"
// says the same for those who write properties as key.value.
const KeepInputVersionsTag = "keep-input-versions"

// keepInputVersionsTags are the tag values that turn the property on.
var keepInputVersionsTags = []string{KeepInputVersionsTag, KeepInputVersionsTag + ".true"}

// Why a version is kept (Keep.Reason).
const (
	// KeepTimeTravel: read while it was no longer the asset's current version.
	KeepTimeTravel = "read by time travel"
	// KeepInputVersion: the input version of the run that built a downstream asset's current
	// version, and that asset carries KeepInputVersionsTag.
	KeepInputVersion = "input version"
	// KeepRead: read at all since a given time (ReadsSince), time travel or not.
	KeepRead = "read"
)

// Keep is a version to keep and why, with its evidence.
type Keep struct {
	Version string
	Reason  string // KeepTimeTravel, KeepInputVersion or KeepRead
	// KeepTimeTravel and KeepRead: who read it, how often, when.
	Readers []KeepReader
	// KeepInputVersion: the downstream asset, its name now, its current version and the run
	// that built that version from this one.
	Downstream        uuid.UUID
	DownstreamName    string
	DownstreamVersion string
	Run               string
}

// KeepReader is one reader's reads of a version a keep names.
type KeepReader struct {
	Reader      string // the usage record's actor; "" when the source named none
	Reads       int64
	First, Last time.Time
}

// Reads totals the reads of all readers.
func (k Keep) Reads() int64 {
	var n int64
	for _, r := range k.Readers {
		n += r.Reads
	}
	return n
}

// LastRead is the newest read of any reader (zero without readers).
func (k Keep) LastRead() time.Time {
	var t time.Time
	for _, r := range k.Readers {
		if r.Last.After(t) {
			t = r.Last
		}
	}
	return t
}

// Why says why the version is kept, in words for a proposal.
func (k Keep) Why() string {
	switch k.Reason {
	case KeepInputVersion:
		return fmt.Sprintf("input version of %s current version (%s)", k.DownstreamName, KeepInputVersionsTag)
	case KeepTimeTravel, KeepRead:
		var parts []string
		for _, r := range k.Readers {
			who := r.Reader
			if who == "" {
				who = "an unnamed reader"
			}
			reads := "reads"
			if r.Reads == 1 {
				reads = "read"
			}
			parts = append(parts, fmt.Sprintf("%s, %d %s, last at %s", who, r.Reads, reads, r.Last.UTC().Format(time.RFC3339)))
		}
		return k.Reason + " by " + strings.Join(parts, "; ")
	}
	return k.Reason
}

// Keeps returns the versions of the asset to keep, each with why: (a) every version read by
// time travel at or after since, and (b) every input version of the run that built the current
// version of a downstream asset that carries KeepInputVersionsTag. A version kept for both
// reasons appears once for each; the list is ordered by version, then reason.
func (s *Service) Keeps(ctx context.Context, asset uuid.UUID, since time.Time) ([]Keep, error) {
	tt, err := s.TimeTravelReadsSince(ctx, asset, nil, since)
	if err != nil {
		return nil, err
	}
	in, err := s.InputKeeps(ctx, asset)
	if err != nil {
		return nil, err
	}
	out := append(tt, in...)
	sortKeeps(out)
	return out, nil
}

// TimeTravelReadsSince returns the time-travel reads of the asset at or after since, per
// version and reader: of the listed snapshots, or of every version when snapshots is nil.
//
// A read of version v at time t is time travel when another version of the asset, committed at
// or before t, is newer than v (committed after it; when v is undated, any dated version is):
// at t, v was no longer the current version. A read of a version no other dated version
// succeeded before it is not recognisable as time travel and is not counted.
func (s *Service) TimeTravelReadsSince(ctx context.Context, asset uuid.UUID, snapshots []int64, since time.Time) ([]Keep, error) {
	return s.keepReads(ctx, asset, snapshots, since, true)
}

// ReadsSince returns every read of the listed snapshots of the asset at or after since, per
// snapshot and reader, time travel or not: the executor's re-check of an approved expiry, for
// which any read after the proposal opened means the snapshot is still used.
func (s *Service) ReadsSince(ctx context.Context, asset uuid.UUID, snapshots []int64, since time.Time) ([]Keep, error) {
	if len(snapshots) == 0 {
		return nil, nil
	}
	return s.keepReads(ctx, asset, snapshots, since, false)
}

// keepReads groups the reads of the asset with a version since the given time by version and
// reader; only time-travel reads when timeTravel; only of the snapshots when not nil.
func (s *Service) keepReads(ctx context.Context, asset uuid.UUID, snapshots []int64, since time.Time, timeTravel bool) ([]Keep, error) {
	q := `SELECT u.version, u.actor, COUNT(*), MIN(u.at), MAX(u.at) FROM ` + usageevent.Table + ` u
LEFT JOIN ` + datasetversion.Table + ` v ON v.asset_id = u.asset_id AND v.version = u.version
WHERE u.asset_id = $1 AND u.kind = 'read' AND u.version <> '' AND u.at >= $2`
	if timeTravel {
		q += ` AND EXISTS (SELECT 1 FROM ` + datasetversion.Table + ` w WHERE w.asset_id = u.asset_id
	AND w.committed_at IS NOT NULL AND w.committed_at <= u.at AND (v.committed_at IS NULL OR w.committed_at > v.committed_at))`
	}
	byVersion := map[string]*Keep{}
	run := func(names []string) error {
		query, args := q, []any{asset, since.UTC()}
		if names != nil {
			ph := make([]string, len(names))
			for i, n := range names {
				args = append(args, n)
				ph[i] = "$" + strconv.Itoa(len(args))
			}
			query += ` AND u.version IN (` + strings.Join(ph, ", ") + `)`
		}
		query += ` GROUP BY u.version, u.actor`
		rows, err := s.client(ctx).QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("versions: read the reads of %s: %w", asset, err)
		}
		defer rows.Close()
		for rows.Next() {
			var version string
			var r KeepReader
			var first, last sqltime.Time
			if err := rows.Scan(&version, &r.Reader, &r.Reads, &first, &last); err != nil {
				return fmt.Errorf("versions: read the reads of %s: %w", asset, err)
			}
			r.First, r.Last = first.T, last.T
			k := byVersion[version]
			if k == nil {
				reason := KeepRead
				if timeTravel {
					reason = KeepTimeTravel
				}
				k = &Keep{Version: version, Reason: reason}
				byVersion[version] = k
			}
			k.Readers = append(k.Readers, r)
		}
		return rows.Err()
	}
	if snapshots == nil {
		if err := run(nil); err != nil {
			return nil, err
		}
	} else {
		names := make([]string, len(snapshots))
		for i, id := range snapshots {
			names[i] = strconv.FormatInt(id, 10)
		}
		if err := chunk.Each(names, run); err != nil {
			return nil, err
		}
	}
	out := make([]Keep, 0, len(byVersion))
	for _, k := range byVersion {
		// The most recent readers first: who to ask before expiring it.
		slices.SortFunc(k.Readers, func(a, b KeepReader) int {
			return cmp.Or(b.Last.Compare(a.Last), cmp.Compare(a.Reader, b.Reader))
		})
		out = append(out, *k)
	}
	sortKeeps(out)
	return out, nil
}

// InputKeeps returns the input versions of the asset that built the current version of a
// downstream asset carrying KeepInputVersionsTag: for each such asset, its current version
// (an Iceberg table's current snapshot; otherwise its newest version by commit time), the runs
// that produced that version, and the version of this asset each of them read, when known
// (stated, reported or inferred; never an unknown edge).
func (s *Service) InputKeeps(ctx context.Context, asset uuid.UUID) ([]Keep, error) {
	// From the tagged assets (few: an opt-in) to their current version's producing runs, then
	// to those runs' edges to this asset; every step is an indexed lookup.
	current := `CASE WHEN EXISTS (SELECT 1 FROM ` + icebergtable.Table + ` t WHERE t.id = l.asset_id)
	THEN (SELECT CAST(t.current_snapshot_id AS TEXT) FROM ` + icebergtable.Table + ` t WHERE t.id = l.asset_id)
	ELSE (SELECT d.version FROM ` + datasetversion.Table + ` d WHERE d.asset_id = l.asset_id AND d.committed_at IS NOT NULL
		ORDER BY d.committed_at DESC, d.id DESC LIMIT 1) END`
	q := `SELECT DISTINCT i.version, o.asset_id, o.version, o.run_id FROM ` + label.Table + ` l
JOIN ` + runversion.Table + ` o ON o.asset_id = l.asset_id AND o.role = 'output' AND o.version <> '' AND o.version = (` + current + `)
JOIN ` + runversion.Table + ` i ON i.run_id = o.run_id AND i.asset_id = $1 AND i.role = 'input' AND i.kind <> 'unknown' AND i.version <> ''
WHERE l.kind = 'tag' AND l.value IN ($2, $3) AND l.removed_at IS NULL AND l.column_id = $4 AND l.asset_id <> $1`
	rows, err := s.client(ctx).QueryContext(ctx, q, asset, keepInputVersionsTags[0], keepInputVersionsTags[1], uuid.Nil)
	if err != nil {
		return nil, fmt.Errorf("versions: read the input versions of %s downstream assets keep: %w", asset, err)
	}
	var out []Keep
	for rows.Next() {
		var k Keep
		if err := rows.Scan(&k.Version, &k.Downstream, &k.DownstreamVersion, &k.Run); err != nil {
			rows.Close()
			return nil, fmt.Errorf("versions: read the input versions of %s downstream assets keep: %w", asset, err)
		}
		k.Reason = KeepInputVersion
		out = append(out, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	names := map[uuid.UUID]string{}
	for i, k := range out {
		n, ok := names[k.Downstream]
		if !ok {
			n = k.Downstream.String()
			if a, err := s.cat.Get(ctx, k.Downstream); err == nil && a.Name != "" {
				n = a.Namespace + "." + a.Name
				if a.Namespace == "" {
					n = a.Name
				}
			} else if err != nil {
				s.log.Warn("versions: the name of a downstream asset could not be read", "asset_id", k.Downstream, "err", err)
			}
			names[k.Downstream] = n
		}
		out[i].DownstreamName = n
	}
	sortKeeps(out)
	return out, nil
}

func sortKeeps(ks []Keep) {
	slices.SortFunc(ks, func(a, b Keep) int {
		return cmp.Or(compareVersions(a.Version, b.Version), cmp.Compare(a.Reason, b.Reason),
			cmp.Compare(a.DownstreamName, b.DownstreamName), cmp.Compare(a.Run, b.Run))
	})
}

// compareVersions orders snapshot IDs numerically, any other names as text after them.
func compareVersions(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(x, y)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
}
