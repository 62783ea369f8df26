package cleanup

// Snapshot-expiry proposals, for tables that opt in through their properties.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/tables"
)

// Table properties that opt a table into snapshot expiry proposals and tune them.
const (
	PropertyExpireSnapshots = "tidemark.cleanup.expire-snapshots" // "true" opts in
	PropertySnapshotMaxAge  = "tidemark.cleanup.snapshot-max-age" // default 168h
	PropertySnapshotKeep    = "tidemark.cleanup.snapshot-keep"    // default 5
)

func (s *Service) proposeExpiry(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	if t.GoneAt != nil {
		return nil
	}
	in, err := s.tables.Inspection(ctx, t.AssetID)
	if err != nil {
		return nil // not inspected yet: nothing to go by
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindExpireSnapshots)
	if err != nil {
		return err
	}
	exempt, err := s.exempt(ctx, t.AssetID, KindExpireSnapshots)
	if err != nil {
		return err
	}
	if in.Properties[PropertyExpireSnapshots] != "true" || exempt {
		if cur != nil && cur.State == proposal.StateOpen {
			why := "the table no longer opts into snapshot expiry"
			if exempt {
				why = "the table was exempted from snapshot expiry"
			}
			rep.Withdrawn++
			return s.close(ctx, cur, proposal.StateWithdrawn, why)
		}
		return nil
	}
	maxAge := 7 * 24 * time.Hour
	if d, err := time.ParseDuration(in.Properties[PropertySnapshotMaxAge]); err == nil && d > 0 {
		maxAge = d
	}
	keep := 5
	if n, err := strconv.Atoi(in.Properties[PropertySnapshotKeep]); err == nil && n >= 1 {
		keep = n
	}
	snaps := slices.Clone(in.Snapshots)
	slices.SortFunc(snaps, func(a, b tables.Snapshot) int { return a.At.Compare(b.At) })
	var expire []int64
	now := s.clock()
	for i, sn := range snaps {
		if sn.Current || len(sn.Refs) > 0 || i >= len(snaps)-keep || now.Sub(sn.At) < maxAge {
			continue
		}
		expire = append(expire, sn.ID)
	}
	rej, rejEv, err := s.rejection(ctx, t.AssetID, proposal.KindExpireSnapshots)
	if err != nil {
		return err
	}
	if rej != nil { // only snapshots beyond the rejected set, until the quiet period ends
		expire = slices.DeleteFunc(expire, func(id int64) bool { return slices.Contains(rejEv.Snapshots, id) })
	}
	if cur != nil {
		if cur.State != proposal.StateOpen {
			return nil
		}
		var ev Evidence
		if err := json.Unmarshal([]byte(cur.Evidence), &ev); err != nil {
			return err
		}
		if slices.Equal(ev.Snapshots, expire) {
			rep.Kept++
			return nil
		}
		if err := s.close(ctx, cur, proposal.StateWithdrawn, "the snapshots to expire changed (new commits, or expired elsewhere)"); err != nil {
			return err
		}
		rep.Withdrawn++
	}
	if len(expire) == 0 {
		return nil
	}
	files, err := s.expiryFiles(ctx, t.AssetID, expire)
	if err != nil {
		// Without its list nobody could review what it deletes: not proposed this round.
		s.log.Warn("cleanup: the files an expiry would delete could not be listed; not proposed this round", "asset_id", t.AssetID, "err", err)
		return nil
	}
	ev := Evidence{Snapshots: expire, KeepLast: keep, MaxAge: maxAge.String(), Location: t.Location, TableUUID: t.TableUUID, MetadataLocation: t.MetadataLocation,
		FileList: true, Files: int64(len(files)), AgeThreshold: DefaultAgeThreshold.String()}
	for _, f := range files {
		ev.Bytes += f.size
	}
	ev.MonthlyCost = float64(ev.Bytes) / 1e9 * s.prices.StorageGBMonth
	ev.Summary = fmt.Sprintf("%d snapshots are older than %s and not among the last %d: expiring them removes exactly these snapshots in one metadata commit first; then it deletes the %d files (%s) only they reference, listed here, each only if right before its deletion no table references it and it is unchanged and older than %s. They cost about $%.2f a month.",
		len(expire), maxAge, keep, ev.Files, BytesText(ev.Bytes), DefaultAgeThreshold, ev.MonthlyCost)
	if rej != nil {
		id := rej.ID
		ev.Reopens, ev.ReopensWhy = &id, fmt.Sprintf("proposes only snapshots beyond those rejected on %s", rej.DecidedAt.Format(time.RFC3339))
	}
	return s.open(ctx, t.AssetID, proposal.KindExpireSnapshots, proposal.SeverityNormal, ev, files, rep)
}

// expiryFiles lists the files expiring the snapshots would delete, as the table's current
// metadata says: those only they reference (nothing else of the metadata does), on the table's
// own ground, and there now (with the size and modification time the approval covers).
func (s *Service) expiryFiles(ctx context.Context, asset uuid.UUID, expire []int64) ([]journalFile, error) {
	l, err := s.tables.Open(ctx, asset)
	if err != nil {
		return nil, err
	}
	expiring := map[int64]bool{}
	for _, id := range expire {
		expiring[id] = true
	}
	gone := func(id int64) bool { return expiring[id] }
	keep, err := s.referencesOf(ctx, l, gone)
	if err != nil {
		return nil, err
	}
	paths, err := s.onlyReferencedBy(ctx, l, gone, keep)
	if err != nil {
		return nil, err
	}
	var out []journalFile
	for _, p := range paths {
		if tables.Owns(l.Refs.Location, p) != nil {
			continue // never deleted: off the table's ground
		}
		if s.heads != nil {
			if err := s.heads.Wait(ctx); err != nil {
				return nil, err
			}
		}
		info, err := stat(l.IO, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone already: nothing to delete
		}
		if err != nil {
			return nil, fmt.Errorf("cleanup: look up %s: %w", p, err)
		}
		out = append(out, journalFile{path: p, size: info.Size(), modified: info.ModTime()})
	}
	return out, nil
}
