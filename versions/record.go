package versions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/internal/chunk"
)

// Observed is a version a source saw.
type Observed struct {
	AssetID uuid.UUID
	// Version is the version's name; for an Iceberg snapshot leave it empty and set SnapshotID.
	Version        string
	SnapshotID     *int64
	Parent         string // the parent version ("" for none)
	SequenceNumber *int64
	Operation      string
	Summary        map[string]string // the snapshot summary; only bounded entries are kept
	Principal      string
	CommittedAt    time.Time // zero when nothing dated it
	Source         string    // SourceCommit, SourceSync, SourceInspection, SourceOpenLineage
	CommitID       *uuid.UUID
}

// MaxVersionLen bounds a version's name.
const MaxVersionLen = 256

// Summary bounds: a summary is counts and a few properties, never a document.
const (
	maxSummaryEntries  = 64
	maxSummaryValueLen = 256
)

func (o Observed) name() string {
	if o.Version == "" && o.SnapshotID != nil {
		return strconv.FormatInt(*o.SnapshotID, 10)
	}
	return o.Version
}

func (o Observed) fromTable() bool { return o.Source != SourceOpenLineage }

func (o Observed) check() error {
	n := o.name()
	switch {
	case o.AssetID == uuid.Nil:
		return &catalog.Error{Kind: catalog.ErrInvalid, Message: "versions: a version needs its asset"}
	case n == "" || len(n) > MaxVersionLen:
		return &catalog.Error{Kind: catalog.ErrInvalid, Message: fmt.Sprintf("versions: a version name must be 1 to %d bytes", MaxVersionLen)}
	}
	switch o.Source {
	case SourceCommit, SourceSync, SourceInspection, SourceOpenLineage:
		return nil
	}
	return fmt.Errorf("versions: unknown source %q", o.Source)
}

// summaryJSON keeps the summary's bounded entries, so a hostile committer's summary cannot
// bloat the timeline.
func summaryJSON(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	kept := map[string]string{}
	for _, k := range keys {
		if len(kept) == maxSummaryEntries {
			break
		}
		if v := m[k]; len(k) <= maxSummaryValueLen && len(v) <= maxSummaryValueLen {
			kept[k] = v
		}
	}
	b, _ := json.Marshal(kept)
	return string(b)
}

func (s *Service) client(ctx context.Context) *ent.Client {
	if tx := ent.TxFromContext(ctx); tx != nil {
		return tx.Client()
	}
	return s.db
}

// Record stores what the sources saw: a version not known yet is added; a known one gains what
// it lacked (its time, parent, operation, summary, principal, commit), and a version the table
// itself showed is marked seen, which clears the flag on runs that stated it. Recording the same
// observation twice changes nothing. Runs whose versions may now resolve differently (on an
// asset whose table showed a version Tidemark did not know, or knew less of) are resolved again.
func (s *Service) Record(ctx context.Context, obs []Observed) error {
	for _, o := range obs {
		if err := o.check(); err != nil {
			return err
		}
	}
	now := s.now().UTC()
	touched := map[uuid.UUID]time.Time{}
	for part := range slices.Chunk(obs, chunk.Size) {
		changed, err := s.recordChunk(ctx, part, now)
		if err != nil {
			return err
		}
		for _, o := range changed {
			if !o.fromTable() {
				continue
			}
			t := o.CommittedAt
			if t.IsZero() {
				t = now
			}
			if old, ok := touched[o.AssetID]; !ok || t.Before(old) {
				touched[o.AssetID] = t
			}
		}
	}
	return s.reresolve(ctx, touched)
}

// recordChunk stores a chunk of observations. Per asset, the versions already known are read in
// one query (without their summaries, which only matter when empty), the missing ones are
// inserted in one statement, and a known one is written only where it lacks something the
// observation says: a second sync of an unchanged table writes nothing.
// It returns the observations that added or changed a version.
func (s *Service) recordChunk(ctx context.Context, obs []Observed, now time.Time) ([]Observed, error) {
	c := s.client(ctx)
	var assets []uuid.UUID
	byAsset := map[uuid.UUID][]Observed{}
	for _, o := range obs {
		if _, ok := byAsset[o.AssetID]; !ok {
			assets = append(assets, o.AssetID)
		}
		byAsset[o.AssetID] = append(byAsset[o.AssetID], o)
	}
	var changed []Observed
	for _, a := range assets {
		ch, err := s.recordAsset(ctx, c, a, byAsset[a], now)
		if err != nil {
			return nil, err
		}
		changed = append(changed, ch...)
	}
	return changed, nil
}

// knownFields are what recordAsset reads of a known version: all but the summary.
var knownFields = []string{datasetversion.FieldID, datasetversion.FieldAssetID, datasetversion.FieldVersion,
	datasetversion.FieldSnapshotID, datasetversion.FieldParentVersion, datasetversion.FieldSequenceNumber,
	datasetversion.FieldOperation, datasetversion.FieldPrincipal, datasetversion.FieldCommittedAt,
	datasetversion.FieldSeenInTable, datasetversion.FieldCommitID, datasetversion.FieldRunID}

func (s *Service) recordAsset(ctx context.Context, c *ent.Client, asset uuid.UUID, obs []Observed, now time.Time) ([]Observed, error) {
	names := make([]string, 0, len(obs))
	for _, o := range obs {
		names = append(names, o.name())
	}
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	rows, err := c.DatasetVersion.Query().Where(datasetversion.AssetID(asset), datasetversion.VersionIn(names...)).
		Select(knownFields...).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("versions: read the versions of %s: %w", asset, err)
	}
	known := make(map[string]*ent.DatasetVersion, len(rows))
	for _, r := range rows {
		known[r.Version] = r
	}
	noSummary := map[string]bool{}
	if len(rows) > 0 {
		empty, err := c.DatasetVersion.Query().Where(datasetversion.AssetID(asset), datasetversion.VersionIn(names...),
			datasetversion.Summary("")).Select(datasetversion.FieldVersion).Strings(ctx)
		if err != nil {
			return nil, fmt.Errorf("versions: read the versions of %s: %w", asset, err)
		}
		for _, v := range empty {
			noSummary[v] = true
		}
	}
	var missing, again, changed []Observed
	first := map[string]bool{}
	for _, o := range obs {
		name := o.name()
		switch row, ok := known[name]; {
		case first[name]:
			again = append(again, o) // named twice in one batch: merged once the first is stored
		case ok:
			first[name] = true
			ch, err := s.mergeGaps(ctx, c, row, o, noSummary[name])
			if err != nil {
				return nil, err
			}
			if ch {
				changed = append(changed, o)
			}
		default:
			first[name] = true
			missing = append(missing, o)
		}
	}
	inserted, err := s.insertMissing(ctx, c, asset, missing, now)
	if err != nil {
		return nil, err
	}
	var seen []string
	for _, o := range missing {
		switch {
		case !inserted[o.name()]:
			again = append(again, o) // another writer added it meanwhile
		case o.fromTable():
			seen = append(seen, o.name())
			fallthrough
		default:
			changed = append(changed, o)
		}
	}
	if len(seen) > 0 {
		if _, err := c.RunVersion.Update().Where(runversion.AssetID(asset), runversion.VersionIn(seen...), runversion.Flagged(true)).
			SetFlagged(false).Save(ctx); err != nil {
			return nil, fmt.Errorf("versions: clear flags on %s: %w", asset, err)
		}
	}
	for _, o := range again {
		ch, err := s.recordOne(ctx, c, o, now)
		if err != nil {
			return nil, err
		}
		if ch {
			changed = append(changed, o)
		}
	}
	return changed, nil
}

// insertMissing inserts versions not known yet in one statement; a version another writer
// inserted meanwhile is skipped (ON CONFLICT), never an error that would end the caller's
// transaction. It returns the names it inserted.
func (s *Service) insertMissing(ctx context.Context, c *ent.Client, asset uuid.UUID, obs []Observed, now time.Time) (map[string]bool, error) {
	inserted := map[string]bool{}
	if len(obs) == 0 {
		return inserted, nil
	}
	const cols = 15
	var q strings.Builder
	q.WriteString(`INSERT INTO dataset_versions (id, asset_id, version, snapshot_id, parent_version, sequence_number, operation,
		summary, principal, committed_at, source, seen_in_table, commit_id, run_id, first_seen) VALUES `)
	args := make([]any, 0, cols*len(obs))
	for i, o := range obs {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(")
		for j := range cols {
			if j > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "$%d", len(args)+j+1)
		}
		q.WriteString(")")
		var snap, seq, committed, commit any
		if o.SnapshotID != nil {
			snap = *o.SnapshotID
		}
		if o.SequenceNumber != nil {
			seq = *o.SequenceNumber
		}
		if !o.CommittedAt.IsZero() {
			committed = o.CommittedAt.UTC()
		}
		if o.CommitID != nil {
			commit = *o.CommitID
		}
		args = append(args, uuid.Must(uuid.NewV7()), asset, o.name(), snap, o.Parent, seq, o.Operation, summaryJSON(o.Summary),
			o.Principal, committed, o.Source, o.fromTable(), commit, runIDOf(o.Summary), now)
	}
	q.WriteString(" ON CONFLICT (asset_id, version) DO NOTHING RETURNING version")
	rows, err := c.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("versions: record the versions of %s: %w", asset, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		inserted[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("versions: record the versions of %s: %w", asset, err)
	}
	return inserted, nil
}

// recordOne records one observation on its own: read, then create or fill in. It reports
// whether it added or changed the version.
func (s *Service) recordOne(ctx context.Context, c *ent.Client, o Observed, now time.Time) (bool, error) {
	name := o.name()
	row, err := c.DatasetVersion.Query().Where(datasetversion.AssetID(o.AssetID), datasetversion.Version(name)).Only(ctx)
	if ent.IsNotFound(err) {
		if err := s.create(ctx, c, o, name, now); err != nil {
			return false, fmt.Errorf("versions: record %s of %s: %w", name, o.AssetID, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("versions: read %s of %s: %w", name, o.AssetID, err)
	}
	return s.mergeGaps(ctx, c, row, o, row.Summary == "")
}

func (s *Service) create(ctx context.Context, c *ent.Client, o Observed, name string, now time.Time) error {
	q := c.DatasetVersion.Create().SetAssetID(o.AssetID).SetVersion(name).SetNillableSnapshotID(o.SnapshotID).
		SetParentVersion(o.Parent).SetNillableSequenceNumber(o.SequenceNumber).SetOperation(o.Operation).
		SetSummary(summaryJSON(o.Summary)).SetPrincipal(o.Principal).SetSource(o.Source).
		SetSeenInTable(o.fromTable()).SetNillableCommitID(o.CommitID).SetRunID(runIDOf(o.Summary)).SetFirstSeen(now)
	if !o.CommittedAt.IsZero() {
		q.SetCommittedAt(o.CommittedAt.UTC())
	}
	if _, err := q.Save(ctx); err != nil {
		return err
	}
	if o.fromTable() {
		return s.unflag(ctx, c, o.AssetID, name)
	}
	return nil
}

// mergeGaps fills in what a known version lacks and never overwrites what a source already
// said; the row may be read without its summary (noSummary says whether it has one). It
// reports whether it changed the row.
func (s *Service) mergeGaps(ctx context.Context, c *ent.Client, row *ent.DatasetVersion, o Observed, noSummary bool) (bool, error) {
	u := c.DatasetVersion.UpdateOneID(row.ID)
	changed := false
	set := func(cond bool, f func()) {
		if cond {
			f()
			changed = true
		}
	}
	set(row.CommittedAt == nil && !o.CommittedAt.IsZero(), func() { u.SetCommittedAt(o.CommittedAt.UTC()) })
	set(row.ParentVersion == "" && o.Parent != "", func() { u.SetParentVersion(o.Parent) })
	set(row.SequenceNumber == nil && o.SequenceNumber != nil, func() { u.SetSequenceNumber(*o.SequenceNumber) })
	set(row.Operation == "" && o.Operation != "", func() { u.SetOperation(o.Operation) })
	set(noSummary && len(o.Summary) > 0, func() { u.SetSummary(summaryJSON(o.Summary)) })
	set(row.Principal == "" && o.Principal != "", func() { u.SetPrincipal(o.Principal) })
	set(row.CommitID == nil && o.CommitID != nil, func() { u.SetCommitID(*o.CommitID) })
	set(row.RunID == "" && runIDOf(o.Summary) != "", func() { u.SetRunID(runIDOf(o.Summary)) })
	seen := !row.SeenInTable && o.fromTable()
	set(seen, func() { u.SetSeenInTable(true) })
	if !changed {
		return false, nil
	}
	if err := u.Exec(ctx); err != nil {
		return false, fmt.Errorf("versions: update %s of %s: %w", row.Version, row.AssetID, err)
	}
	if seen {
		return true, s.unflag(ctx, c, row.AssetID, row.Version)
	}
	return true, nil
}

// unflag clears the flag on runs that stated a version once the table shows it.
func (s *Service) unflag(ctx context.Context, c *ent.Client, asset uuid.UUID, version string) error {
	_, err := c.RunVersion.Update().
		Where(runversion.AssetID(asset), runversion.Version(version), runversion.Flagged(true)).
		SetFlagged(false).Save(ctx)
	return err
}

func runIDOf(summary map[string]string) string {
	v := summary[RunIDProperty]
	if len(v) > 255 {
		return ""
	}
	return v
}

// MarkExpired marks snapshots of an asset expired (kept, with when and by whom), so a version's
// history outlives maintenance. A snapshot never recorded is left alone: nothing dates it.
func (s *Service) MarkExpired(ctx context.Context, asset uuid.UUID, snapshots []int64, by string, at time.Time) error {
	c := s.client(ctx)
	names := make([]string, len(snapshots))
	for i, id := range snapshots {
		names[i] = strconv.FormatInt(id, 10)
	}
	for part := range slices.Chunk(names, chunk.Size) {
		if _, err := c.DatasetVersion.Update().
			Where(datasetversion.AssetID(asset), datasetversion.VersionIn(part...), datasetversion.ExpiredAtIsNil()).
			SetExpiredAt(at.UTC()).SetExpiredBy(by).Save(ctx); err != nil {
			return fmt.Errorf("versions: mark expired: %w", err)
		}
	}
	return nil
}

// TableRead is what one reading of a table's metadata showed (a catalog sync, an inspection,
// a register): every snapshot it holds.
type TableRead struct {
	AssetID uuid.UUID
	Source  string // SourceSync or SourceInspection
	// Snapshots are the metadata's snapshots (their AssetID and Source are the read's).
	Snapshots []Observed
	// LastSequenceNumber and LastUpdated are the metadata's own. A version the metadata lacks is
	// expired only when it is older than the metadata: a snapshot committed after the file was
	// read is missing from it without having been removed.
	LastSequenceNumber int64
	LastUpdated        time.Time
	// By and At are who marks the versions the table no longer has expired, and when.
	By string
	At time.Time
}

// TableRecorded is what RecordTable changed.
type TableRecorded struct {
	Expired int // versions marked expired by this read
}

// RecordTable records every snapshot a reading of a table showed, and marks expired the
// versions the table showed before that it no longer has. The known versions are read once,
// only missing ones are inserted, and known ones are written only where they lack something,
// so a sync of an unchanged table of a thousand snapshots reads and writes little.
func (s *Service) RecordTable(ctx context.Context, r TableRead) (TableRecorded, error) {
	var out TableRecorded
	if r.Source != SourceSync && r.Source != SourceInspection {
		return out, fmt.Errorf("versions: a table read is a sync or an inspection, not %q", r.Source)
	}
	obs := make([]Observed, len(r.Snapshots))
	present := make(map[string]bool, len(r.Snapshots))
	for i, o := range r.Snapshots {
		o.AssetID, o.Source = r.AssetID, r.Source
		obs[i] = o
		present[o.name()] = true
	}
	if err := s.Record(ctx, obs); err != nil {
		return out, err
	}
	live, err := s.client(ctx).DatasetVersion.Query().
		Where(datasetversion.AssetID(r.AssetID), datasetversion.SeenInTable(true), datasetversion.ExpiredAtIsNil(), datasetversion.SnapshotIDNotNil()).
		Select(datasetversion.FieldVersion, datasetversion.FieldSnapshotID, datasetversion.FieldSequenceNumber, datasetversion.FieldCommittedAt).All(ctx)
	if err != nil {
		return out, fmt.Errorf("versions: read the live versions of %s: %w", r.AssetID, err)
	}
	var gone []int64
	for _, v := range live {
		if !present[v.Version] && r.olderThanRead(v) {
			gone = append(gone, *v.SnapshotID)
		}
	}
	if len(gone) == 0 {
		return out, nil
	}
	if err := s.MarkExpired(ctx, r.AssetID, gone, r.By, r.At); err != nil {
		return out, err
	}
	out.Expired = len(gone)
	return out, nil
}

// olderThanRead reports whether a version predates the metadata read: by sequence number where
// both have one (format 2 on: exact), else by time.
func (r TableRead) olderThanRead(v *ent.DatasetVersion) bool {
	if v.SequenceNumber != nil && *v.SequenceNumber > 0 && r.LastSequenceNumber > 0 {
		return *v.SequenceNumber <= r.LastSequenceNumber
	}
	return v.CommittedAt != nil && !r.LastUpdated.IsZero() && !v.CommittedAt.After(r.LastUpdated)
}

// SeenInTable reports whether a version of an asset is known as one its table showed.
func (s *Service) SeenInTable(ctx context.Context, asset uuid.UUID, version string) (bool, error) {
	ok, err := s.client(ctx).DatasetVersion.Query().
		Where(datasetversion.AssetID(asset), datasetversion.Version(version), datasetversion.SeenInTable(true)).Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("versions: look up %s of %s: %w", version, asset, err)
	}
	return ok, nil
}
