package tables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"
)

// inspect walks every retained snapshot of the metadata through the reader and computes the
// inspection and the current snapshot's health. The manifest lists, then the manifests of all
// snapshots are read first, in parallel; the cache rows for what was read from storage are
// written together at the end.
// describe is what the metadata file itself says: its log, statistics files and partition specs.
func describe(meta table.Metadata, metadataLocation string) Inspection {
	in := Inspection{MetadataLocation: metadataLocation, Snapshots: []Snapshot{}, MetadataLog: []MetadataFile{}, Properties: meta.Properties()}
	for m := range meta.PreviousFiles() {
		in.MetadataLog = append(in.MetadataLog, MetadataFile{Path: m.MetadataFile, At: time.UnixMilli(m.TimestampMs).UTC()})
	}
	for s := range meta.Statistics() {
		in.Statistics = append(in.Statistics, StatsFile{SnapshotID: s.SnapshotID, Path: s.StatisticsPath, Size: s.FileSizeInBytes})
	}
	for s := range meta.PartitionStatistics() {
		in.PartitionStats = append(in.PartitionStats, StatsFile{SnapshotID: s.SnapshotID, Path: s.StatisticsPath, Size: s.FileSizeInBytes})
	}
	for _, spec := range meta.PartitionSpecs() {
		sp := Spec{ID: spec.ID(), Fields: []SpecField{}}
		for _, f := range spec.Fields() {
			sp.Fields = append(sp.Fields, SpecField{FieldID: f.FieldID, Name: f.Name, Transform: f.Transform.String()})
		}
		in.Specs = append(in.Specs, sp)
	}
	return in
}

// snapshotOrder is the order snapshots are read in (the current one first) and the current
// snapshot's ID (nil when the table has none).
func snapshotOrder(meta table.Metadata, snaps []table.Snapshot) ([]int, *int64) {
	var curID *int64
	cur := meta.CurrentSnapshot()
	order := make([]int, 0, len(snaps))
	for i, s := range snaps {
		if cur != nil && s.SnapshotID == cur.SnapshotID {
			order = append([]int{i}, order...)
			id := s.SnapshotID
			curID = &id
		} else {
			order = append(order, i)
		}
	}
	return order, curID
}

func inspect(ctx context.Context, r *reader, meta table.Metadata, metadataLocation string, small int64, now time.Time) (_ Inspection, _ Health, err error) {
	r.batch = true
	defer func() {
		fctx := ctx
		if err != nil {
			// Cache what was read even when the inspection failed or ran out of time: the
			// next attempt goes on from there instead of reading it all again.
			var cancel context.CancelFunc
			fctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
		}
		if ferr := r.flush(fctx); ferr != nil {
			err = errors.Join(err, fmt.Errorf("tables: cache manifests: %w", ferr))
		}
	}()
	in := describe(meta, metadataLocation)
	acc := newHealthAcc(in.Specs, small)
	tableUUID := meta.TableUUID().String()
	snaps := meta.Snapshots()
	order, curID := snapshotOrder(meta, snaps)
	heads := map[int64][]string{}
	for name, ref := range meta.Refs() {
		heads[ref.SnapshotID] = append(heads[ref.SnapshotID], name)
	}
	if err := r.preload(ctx, snaps); err != nil {
		return in, Health{}, err
	}
	var jobs []manifestJob
	seen := map[string]bool{}
	lists := make([][]manifestRef, len(snaps))
	for _, i := range order {
		refs, err := r.manifests(ctx, snaps[i])
		if err != nil {
			return in, Health{}, err
		}
		lists[i] = refs
		for _, ref := range refs {
			if !seen[ref.Path] {
				seen[ref.Path] = true
				jobs = append(jobs, manifestJob{snaps[i], ref})
			}
		}
	}
	if err := r.prefetch(ctx, jobs, tableUUID, acc); err != nil {
		return in, Health{}, err
	}
	out := make([]Snapshot, len(snaps))
	perSnap := make([]int64, 0, len(snaps))
	var curManifests int
	var curEntries int64
	var curParts []*partial
	for _, i := range order {
		if err := ctx.Err(); err != nil {
			return in, Health{}, err
		}
		s := snaps[i]
		isCur := curID != nil && s.SnapshotID == *curID
		snap := Snapshot{ID: s.SnapshotID, ParentID: s.ParentSnapshotID, SequenceNumber: s.SequenceNumber,
			At: time.UnixMilli(s.TimestampMs).UTC(), Current: isCur, ManifestList: s.ManifestList, Refs: heads[s.SnapshotID]}
		slices.Sort(snap.Refs)
		if s.Summary != nil {
			snap.Operation = string(s.Summary.Operation)
			snap.Summary = s.Summary.Properties
		}
		refs := lists[i]
		for _, ref := range refs {
			p, err := r.partial(ctx, s, ref, tableUUID, acc)
			if err != nil {
				return in, Health{}, fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
			}
			if isCur {
				curParts = append(curParts, p)
			}
			a := p.agg
			if ref.Content == 0 {
				snap.DataManifests++
			} else {
				snap.DeleteManifests++
			}
			snap.DataFiles += a.dataFiles
			snap.DeleteFiles += a.deletes
			snap.Records += a.records
			snap.Bytes += a.bytes
			snap.ManifestEntries += a.entries
		}
		perSnap = append(perSnap, int64(len(refs)))
		if isCur {
			curManifests, curEntries = len(refs), snap.ManifestEntries
		}
		out[i] = snap
	}
	acc.merge(curParts)
	in.Snapshots = out
	r.rep.Snapshots = len(out)
	h := acc.finish(now, curID, curManifests, curEntries, perSnap, out, len(in.MetadataLog)+1, meta.Properties())
	return in, h, nil
}
