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
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/versions"
)

// Table properties that opt a table into snapshot expiry proposals and tune them.
const (
	PropertyExpireSnapshots = "tidemark.cleanup.expire-snapshots" // "true" opts in
	PropertySnapshotMaxAge  = "tidemark.cleanup.snapshot-max-age" // default 168h
	PropertySnapshotKeep    = "tidemark.cleanup.snapshot-keep"    // default 5
)

// VersionKeeps says which versions of an asset are still needed: read by time travel, or the
// input of a downstream asset's current version that asks for reproducibility
// (*versions.Service).
type VersionKeeps interface {
	// Keeps is every version of the asset to keep, and why, counting reads since the time.
	Keeps(ctx context.Context, asset uuid.UUID, since time.Time) ([]versions.Keep, error)
	// ReadsSince is every read of the listed snapshots since the time.
	ReadsSince(ctx context.Context, asset uuid.UUID, snapshots []int64, since time.Time) ([]versions.Keep, error)
}

// WithVersions makes snapshot expiry keep what v says is still needed: a proposal leaves out
// (and lists, with why) every snapshot read by time travel within the unused window
// (Policy.UnusedWindow) and every input version of a keep-input-versions downstream's current
// version; right before its commit, an approved expiry keeps any approved snapshot found needed
// since, or read at all since the proposal opened. Without it expiry goes by age and count only.
func WithVersions(v VersionKeeps) Option { return func(s *Service) { s.versions = v } }

// KeptSnapshot is a snapshot an expiry keeps although it is old enough to expire, and why.
type KeptSnapshot struct {
	Snapshot int64 `json:"snapshot"`
	// Reason is "read by time travel", "read since the proposal opened", or "input version of
	// <downstream> current version (keep-input-versions)".
	Reason string `json:"reason"`
	// Readers (the reasons that are reads): who read it, how often, when.
	Readers []KeptReader `json:"readers,omitempty"`
	// The downstream asset (input versions): its current version and the run that built it.
	Downstream        *uuid.UUID `json:"downstream,omitempty"`
	DownstreamVersion string     `json:"downstream_version,omitempty"`
	Run               string     `json:"run,omitempty"`
	// Detail is the whole reason in words, readers and times included.
	Detail string `json:"detail"`
}

// KeptReader is one reader's reads of a kept snapshot.
type KeptReader struct {
	Reader    string    `json:"reader"` // "" when the usage source named none
	Reads     int64     `json:"reads"`
	FirstRead time.Time `json:"first_read"`
	LastRead  time.Time `json:"last_read"`
}

// keptReadSinceOpened is the reason of a snapshot the executor keeps because it was read at all
// after the proposal opened (the other reasons come from versions).
const keptReadSinceOpened = "read since the proposal opened"

// keptSnapshots turns the keeps of versions among the snapshots into an expiry's evidence, in
// the order of snapshots; reason overrides the keeps' own (for ReadsSince) when not "".
func keptSnapshots(ks []versions.Keep, snapshots []int64, reason string) []KeptSnapshot {
	var out []KeptSnapshot
	for _, id := range snapshots {
		name := strconv.FormatInt(id, 10)
		for _, k := range ks {
			if k.Version != name {
				continue
			}
			kept := KeptSnapshot{Snapshot: id, Reason: k.Reason, DownstreamVersion: k.DownstreamVersion, Run: k.Run, Detail: k.Why()}
			if k.Reason == versions.KeepInputVersion {
				d := k.Downstream
				kept.Downstream, kept.Reason = &d, k.Why()
			}
			if reason != "" {
				kept.Reason = reason
				kept.Detail = reason + strings.TrimPrefix(k.Why(), k.Reason)
			}
			for _, r := range k.Readers {
				kept.Readers = append(kept.Readers, KeptReader{Reader: r.Reader, Reads: r.Reads, FirstRead: r.First, LastRead: r.Last})
			}
			out = append(out, kept)
		}
	}
	return out
}

// keptText lists kept snapshots in words.
func keptText(kept []KeptSnapshot) string {
	parts := make([]string, len(kept))
	for i, k := range kept {
		parts[i] = fmt.Sprintf("snapshot %d: %s", k.Snapshot, k.Detail)
	}
	return strings.Join(parts, "; ")
}

// keptIDs is the set of snapshots kept.
func keptIDs(kept []KeptSnapshot) map[int64]bool {
	ids := map[int64]bool{}
	for _, k := range kept {
		ids[k.Snapshot] = true
	}
	return ids
}

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
	// Old enough, yet still needed: read by time travel in the unused window, or the input of
	// a downstream's current version that asks for reproducibility. Kept, and said so.
	var kept []KeptSnapshot
	since := now.Add(-s.policy.UnusedWindow)
	if s.versions != nil && len(expire) > 0 {
		ks, err := s.versions.Keeps(ctx, t.AssetID, since)
		if err != nil {
			return err
		}
		kept = keptSnapshots(ks, expire, "")
		ids := keptIDs(kept)
		expire = slices.DeleteFunc(expire, func(id int64) bool { return ids[id] })
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
		why := "the snapshots to expire changed (new commits, or expired elsewhere)"
		if needed := slices.DeleteFunc(slices.Clone(kept), func(k KeptSnapshot) bool { return !slices.Contains(ev.Snapshots, k.Snapshot) }); len(needed) > 0 {
			why = "snapshots it would expire are still needed: " + keptText(needed)
		}
		if err := s.close(ctx, cur, proposal.StateWithdrawn, why); err != nil {
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
		len(expire), words.Duration(maxAge), keep, ev.Files, BytesText(ev.Bytes), words.Duration(DefaultAgeThreshold), ev.MonthlyCost)
	if s.versions != nil {
		ev.From, ev.To, ev.Kept = &since, &now, kept
		if len(kept) > 0 {
			ev.Summary += fmt.Sprintf(" It keeps %d snapshots old enough to expire, still needed (time-travel reads counted over the last %s): %s.",
				len(keptIDs(kept)), days(s.policy.UnusedWindow), keptText(kept))
		}
	}
	if rej != nil {
		id := rej.ID
		ev.Reopens, ev.ReopensWhy = &id, fmt.Sprintf("proposes only snapshots beyond those %s", declinedOn(rej))
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
