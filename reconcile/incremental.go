package reconcile

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/reconciliationrun"
	"github.com/tidemark/tidemark/ent/reconciliationwindow"
)

// An incremental run re-reads on an Iceberg new side only the windows whose data changed since
// the previous run: those the data files added or removed by the snapshots committed since hold,
// by the files' bounds on the time column, and the newest windows (whose rows may have been
// written before the previous run but timed after it). Every other window's figures are the
// previous run's. An Iceberg side is read so only as the new side; the old side is read in full
// unless a change log proves which of its windows changed (changelog.go), which it does only for
// a side a unique index proves free of repeated keys. A key the new side repeats in a changed
// window and an unchanged one still differs from the old side there, so it is not clean (it is
// classified extra rather than duplication).

// previous is what an incremental run takes from the run before it: each side's figures (nil
// for a side it cannot start from) and the snapshot it read an Iceberg new side at.
type previous struct {
	snapshot *int64
	sides    [2]*prevSide
	// deep are the windows it compared record by record, with what it found.
	deep map[int64]WindowResult
}

// lastFigures returns the newest finished run's figures of each side, when it compared against
// the same old side, hashed records the same way (hashing) and did not fail. A side's figures
// are kept when the run read it at a recorded snapshot: an Iceberg new side's snapshot, or a
// PostgreSQL side's change log snapshot.
func (s *Service) lastFigures(ctx context.Context, m Migration, against reconciliationrun.Against, hashing string) (*previous, error) {
	r, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(m.ID), reconciliationrun.FinishedAtNotNil(),
		reconciliationrun.OriginEQ(reconciliationrun.OriginTidemark)).
		Order(ent.Desc(reconciliationrun.FieldStartedAt), ent.Desc(reconciliationrun.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reconcile: the previous run: %w", err)
	}
	var sum storedSummary
	if r.Error != "" || r.Against != against || r.Summary == "" || json.Unmarshal([]byte(r.Summary), &sum) != nil || sum.Hashing != hashing {
		return nil, nil
	}
	p := &previous{snapshot: sum.Cost.NewSnapshot}
	for i := range p.sides {
		if (i == 1 && sum.Cost.NewSnapshot != nil) || sum.Logs[i] != "" {
			p.sides[i] = &prevSide{started: r.StartedAt.UTC(), logSnapshot: sum.Logs[i], clean: true,
				figs: sideFigures{windows: map[int64]*figure{}, repeated: map[int64]bool{}, repeatedSegs: map[segKey]bool{}}}
		}
	}
	if p.sides == [2]*prevSide{} {
		return nil, nil
	}
	rows, err := s.db.ReconciliationWindow.Query().Where(reconciliationwindow.RunID(r.ID)).Select(reconciliationwindow.FieldBody).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: the previous run's windows: %w", err)
	}
	for _, row := range rows {
		var w WindowResult
		if err := json.Unmarshal([]byte(row.Body), &w); err != nil {
			return nil, nil // not a body this code wrote: read in full
		}
		idx := windowIndex(&m.Spec, w.Start)
		if w.Deep {
			if p.deep == nil {
				p.deep = map[int64]WindowResult{}
			}
			p.deep[idx] = w
		}
		for i, f := range []SideFigures{w.Old, w.New} {
			ps := p.sides[i]
			if ps == nil || f.Rows == 0 {
				continue
			}
			sum, err := strconv.ParseUint(f.Checksum, 16, 64)
			if err != nil {
				return nil, nil
			}
			ps.figs.windows[idx] = &figure{rows: f.Rows, keys: f.Keys, sum: sum, versions: f.Versions}
			if f.DuplicateKeys > 0 || f.Versions > 0 {
				ps.clean = false
			}
			if f.DuplicateKeys > 0 {
				ps.figs.repeated[idx] = true
			}
		}
		if ps := p.sides[1]; ps != nil {
			for _, seg := range w.NewRepeatedSegments {
				ps.figs.repeatedSegs[segKey{idx, seg}] = true
			}
		}
	}
	return p, nil
}

// reusedComparisons returns the previous run's record-by-record comparisons when this run would
// look into exactly the windows that run compared and neither side changed in any of them since
// (o and n prove it): comparing the same records again finds the same, since a comparison reads
// nothing but those windows' records (samples and repeats across them included). The classes
// are made again from this run's figures and clock; writers and snapshots are named again.
func reusedComparisons(prev *previous, o, n sideFigures) ([]WindowResult, bool) {
	cands := candidates(o, n)
	if len(cands) == 0 || len(cands) != len(prev.deep) {
		return nil, false
	}
	out := make([]WindowResult, 0, len(cands))
	for _, w := range cands {
		r, ok := prev.deep[w]
		if !ok || !o.unchanged(w) || !n.unchanged(w) {
			return nil, false
		}
		r.Writers, r.Snapshots = nil, nil
		out = append(out, r)
	}
	return out, true
}

// changedWindows returns the windows holding data that the snapshots after from (up to cur)
// added or removed, or false when that cannot be told: from is not an ancestor of cur (expired,
// rolled back), a snapshot wrote delete files, or a data file has no bounds on the time column.
func changedWindows(ctx context.Context, tbl *table.Table, cur *table.Snapshot, from int64, spec *Spec) (map[int64]bool, bool, error) {
	field, ok := tbl.Schema().FindFieldByName(spec.TimeColumn)
	if !ok {
		return nil, false, nil
	}
	unit, ok := timeUnit(field.Type)
	if !ok {
		return nil, false, nil
	}
	var since []*table.Snapshot
	for s := cur; s.SnapshotID != from; {
		since = append(since, s)
		if s.ParentSnapshotID == nil {
			return nil, false, nil
		}
		if s = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID); s == nil {
			return nil, false, nil
		}
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, false, err
	}
	changed := map[int64]bool{}
	for _, snap := range since {
		mfs, err := snap.Manifests(fs)
		if err != nil {
			return nil, false, err
		}
		for _, mf := range mfs {
			if mf.SnapshotID() != snap.SnapshotID {
				continue // written by an earlier snapshot: nothing in it changed now
			}
			if mf.ManifestContent() != iceberg.ManifestContentData {
				return nil, false, nil
			}
			for e, err := range mf.Entries(fs, false) {
				if err != nil {
					return nil, false, err
				}
				if e.Status() == iceberg.EntryStatusEXISTING || e.SnapshotID() != snap.SnapshotID {
					continue
				}
				df := e.DataFile()
				lo, ok1 := boundAt(df.LowerBoundValues()[field.ID], unit)
				hi, ok2 := boundAt(df.UpperBoundValues()[field.ID], unit)
				if !ok1 || !ok2 || hi.Before(lo) {
					return nil, false, nil
				}
				first, last := max(windowIndex(spec, lo), 0), windowIndex(spec, hi)
				if lo.Before(spec.Since) && hi.Before(spec.Since) {
					continue
				}
				if last-first > MaxWindows {
					return nil, false, nil
				}
				for w := first; w <= last; w++ {
					changed[w] = true
				}
			}
		}
	}
	return changed, true, nil
}

// incrementalFigures computes the new side's figures reading only what changed since prev, or
// returns false to read it in full.
func incrementalFigures(ctx context.Context, spec *Spec, src SourceSpec, r *icebergReader, prev *prevSide, from int64, now time.Time) (sideFigures, int64, bool, error) {
	tbl, snap, err := r.pin(ctx)
	if err != nil || snap == nil {
		return sideFigures{}, 0, false, err
	}
	changed, ok, err := changedWindows(ctx, tbl, snap, from, spec)
	if err != nil || !ok {
		return sideFigures{}, 0, false, err
	}
	// The newest windows always: rows timed after the previous run may sit in files it read.
	for w := max(windowIndex(spec, prev.started), 0); w <= windowIndex(spec, now); w++ {
		changed[w] = true
	}
	acc := newFigureAcc(spec, src)
	acc.segmentsOf(0, windowIndex(spec, now))
	var read, bytes int64
	for _, span := range ranges(slices.Sorted(maps.Keys(changed))) {
		from, to := windowStart(spec, span[0]), windowStart(spec, span[1]+1)
		if to.After(now) {
			to = now
		}
		if !from.Before(to) {
			continue
		}
		b, n, err := hashSide(ctx, spec, r, acc, from, to)
		bytes, read = bytes+b, read+n
		if err != nil {
			return sideFigures{}, bytes, false, err
		}
	}
	out := acc.finish(read)
	out.incremental, out.changed = true, changed
	for w, f := range prev.figs.windows {
		if !changed[w] {
			out.windows[w] = f
			if prev.figs.repeated[w] {
				out.repeated[w] = true
				known := false
				for seg := range int64(1 << segBits) {
					if prev.figs.repeatedSegs[segKey{w, seg}] {
						out.repeatedSegs[segKey{w, seg}], known = true, true
					}
				}
				for seg := range int64(1 << segBits) {
					if !known { // a run that did not keep them: every segment is looked into
						out.repeatedSegs[segKey{w, seg}] = true
					}
				}
			}
			out.reused++
			if out.segsMissing == nil {
				out.segsMissing = map[int64]bool{}
			}
			out.segsMissing[w] = true
		}
	}
	return out, bytes, true, nil
}

// SnapshotRef is an Iceberg snapshot that added data files holding a window's records.
type SnapshotRef struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Operation string    `json:"operation,omitempty"`
}

// nameSnapshots names, for each window with duplicated keys on an Iceberg new side, the
// snapshots that added the live data files whose time bounds overlap the window (at most
// maxWriters, newest first): the commits where the repeat may have come from. Files without
// bounds on the time column are named for every such window.
func (s *Service) nameSnapshots(ctx context.Context, m Migration, ws []WindowResult) error {
	dup := map[int64]int{} // window index -> position in ws
	for i, w := range ws {
		if w.New.DuplicateKeys > 0 && len(dup) < maxWriterWindows {
			dup[windowIndex(&m.Spec, w.Start)] = i
		}
	}
	if len(dup) == 0 {
		return nil
	}
	live, err := s.tables.Open(ctx, m.NewAssetID)
	if err != nil {
		return err
	}
	tbl := live.Table
	snap := tbl.CurrentSnapshot()
	field, ok := tbl.Schema().FindFieldByName(m.Spec.TimeColumn)
	if snap == nil || !ok {
		return nil
	}
	unit, timed := timeUnit(field.Type) // untimed: every file is named for every window
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		return err
	}
	added := map[int64]map[int64]bool{} // window -> snapshot IDs
	for _, mf := range mfs {
		if mf.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range mf.Entries(fs, true) {
			if err != nil {
				return err
			}
			df := e.DataFile()
			lo, ok1 := boundAt(df.LowerBoundValues()[field.ID], unit)
			hi, ok2 := boundAt(df.UpperBoundValues()[field.ID], unit)
			for w := range dup {
				st, end := windowStart(&m.Spec, w), windowStart(&m.Spec, w+1)
				if timed && ok1 && ok2 && (hi.Before(st) || !lo.Before(end)) {
					continue
				}
				if added[w] == nil {
					added[w] = map[int64]bool{}
				}
				added[w][e.SnapshotID()] = true
			}
		}
	}
	for w, ids := range added {
		var refs []SnapshotRef
		for id := range ids {
			r := SnapshotRef{ID: id}
			if sn := tbl.Metadata().SnapshotByID(id); sn != nil {
				r.At = time.UnixMilli(sn.TimestampMs).UTC()
				if sn.Summary != nil {
					r.Operation = string(sn.Summary.Operation)
				}
			}
			refs = append(refs, r)
		}
		slices.SortFunc(refs, func(a, b SnapshotRef) int { return b.At.Compare(a.At) })
		ws[dup[w]].Snapshots = refs[:min(len(refs), maxWriters)]
	}
	return nil
}

// timeUnit is the unit of an Iceberg timestamp type's values; false for other types.
func timeUnit(t iceberg.Type) (time.Duration, bool) {
	switch t.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return time.Microsecond, true
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return time.Nanosecond, true
	}
	return 0, false
}

// boundAt reads a data file's lower or upper bound of a timestamp column (8 bytes, little
// endian, in unit); false when the file has none.
func boundAt(b []byte, unit time.Duration) (time.Time, bool) {
	if len(b) != 8 {
		return time.Time{}, false
	}
	return time.Unix(0, 0).Add(time.Duration(int64(binary.LittleEndian.Uint64(b))) * unit).UTC(), true
}

// snapshotOf is the snapshot an Iceberg reader pinned, for the run's cost.
func snapshotOf(r reader) *int64 {
	ir, ok := r.(*icebergReader)
	if !ok || ir.pinned == nil {
		return nil
	}
	id := *ir.pinned
	return &id
}
