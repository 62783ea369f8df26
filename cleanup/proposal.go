package cleanup

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

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupshardwalk"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

// BotActor is the audit actor of what the cleanup bot does on its own; it may never approve.
const BotActor = "tidemark-cleanup-bot"

// Proposal kinds and states.
const (
	KindOrphanFiles     = "orphan_files"
	KindUnusedAsset     = "unused_asset"
	KindExpireSnapshots = "expire_snapshots"
	KindDangling        = "dangling_reference"
	KindSharedLocation  = "shared_location"
)

// Table properties that opt a table into snapshot expiry proposals and tune them.
const (
	PropertyExpireSnapshots = "tidemark.cleanup.expire-snapshots" // "true" opts in
	PropertySnapshotMaxAge  = "tidemark.cleanup.snapshot-max-age" // default 168h
	PropertySnapshotKeep    = "tidemark.cleanup.snapshot-keep"    // default 5
)

// Policy is what the proposer and executor go by.
type Policy struct {
	UnusedWindow time.Duration // no reads for this long (default 90 days)
	MinAssetAge  time.Duration // and the asset at least this old (default 30 days)
	Grace        time.Duration // between retiring an asset's metadata and deleting its files (default 7 days)
	OpenFor      time.Duration // an open proposal nobody decided expires after this (default 30 days)
	// RejectQuiet is how long a rejection holds: the bot does not propose the same kind for the
	// asset again until then, unless the evidence materially changes (default 90 days).
	RejectQuiet time.Duration
}

// DefaultPolicy is the documented default.
var DefaultPolicy = Policy{UnusedWindow: 90 * 24 * time.Hour, MinAssetAge: 30 * 24 * time.Hour, Grace: 7 * 24 * time.Hour,
	OpenFor: 30 * 24 * time.Hour, RejectQuiet: 90 * 24 * time.Hour}

// WithUsage lets the proposer see real usage (and downstream consumers through lineage).
func WithUsage(u *usage.Service, downstream usage.Downstream) Option {
	return func(s *Service) { s.usage, s.downstream = u, downstream }
}

// MigrationGate says whether an asset may be retired now. An asset that is the old side of a
// dataset migration may be retired only after the cutover and a final clean reconciliation,
// whose run the gate returns (the evidence cites it); why says what is missing otherwise.
type MigrationGate func(ctx context.Context, asset uuid.UUID) (ok bool, finalRun uuid.UUID, why string, err error)

// WithMigrationGate consults g before proposing, and before executing, an asset's retirement.
func WithMigrationGate(g MigrationGate) Option { return func(s *Service) { s.migrations = g } }

// WithPolicy sets the proposal and execution policy.
func WithPolicy(p Policy) Option { return func(s *Service) { s.policy = p } }

// WithFault is called at the executor's crash points (tests inject crashes through it).
func WithFault(f func(point string) error) Option { return func(s *Service) { s.fault = f } }

// Evidence is why a proposal exists; each kind fills its part.
type Evidence struct {
	Summary string `json:"summary"`
	// FinalReconciliation (unused_asset of the old side of a migration): the clean run after
	// the cutover that closes the books.
	FinalReconciliation *uuid.UUID `json:"final_reconciliation,omitempty"`
	// orphan_files
	Scans        []uuid.UUID `json:"scans,omitempty"`
	Shards       []string    `json:"shards,omitempty"`
	Files        int64       `json:"files,omitempty"`
	Bytes        int64       `json:"bytes,omitempty"`
	MonthlyCost  float64     `json:"monthly_cost_usd,omitempty"`
	AgeThreshold string      `json:"age_threshold,omitempty"`
	MinGap       string      `json:"min_gap,omitempty"` // how far apart the confirming walks had to be
	Assumption   string      `json:"assumption,omitempty"`
	// FileList (expire_snapshots): the proposal lists the exact files it deletes (Files and Bytes
	// total them), so its approval confirms their count and bytes and its execution deletes no
	// other file. Expiry proposals opened before lists existed lack it.
	FileList bool `json:"file_list,omitempty"`
	// unused_asset and expire_snapshots: exactly which table was approved
	TableUUID        string `json:"table_uuid,omitempty"`
	MetadataLocation string `json:"metadata_location,omitempty"`
	// shared_location
	Foreign []ForeignTenant `json:"foreign_tenants,omitempty"`
	// Reopens names the rejected proposal this one reopens, and why the bot may.
	Reopens    *uuid.UUID `json:"reopens,omitempty"`
	ReopensWhy string     `json:"reopens_why,omitempty"`
	// unused_asset
	Window         string         `json:"window,omitempty"`
	From           *time.Time     `json:"from,omitempty"`
	To             *time.Time     `json:"to,omitempty"`
	LastRead       *time.Time     `json:"last_read,omitempty"`
	Names          []NameEvidence `json:"names,omitempty"`
	Readers        int            `json:"distinct_readers_ever,omitempty"`
	Downstream     []uuid.UUID    `json:"downstream,omitempty"`
	Owners         []string       `json:"owners,omitempty"`
	AssetCreatedAt *time.Time     `json:"asset_created_at,omitempty"`
	Location       string         `json:"location,omitempty"`
	Snapshots      []int64        `json:"snapshots,omitempty"`
	KeepLast       int            `json:"keep_last,omitempty"`
	MaxAge         string         `json:"max_age,omitempty"`
	Dangling       []DanglingRef  `json:"dangling,omitempty"`
	DanglingCount  int64          `json:"dangling_count,omitempty"`
	Remedies       []string       `json:"remedies,omitempty"`
	ScanID         *uuid.UUID     `json:"scan_id,omitempty"`
	RefCheckID     *uuid.UUID     `json:"ref_check_id,omitempty"`
}

// NameEvidence is a name the asset had, and when usage last saw it.
type NameEvidence struct {
	Namespace  string     `json:"namespace"`
	Name       string     `json:"name"`
	Current    bool       `json:"current"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// ProposeReport says what a proposer run did.
type ProposeReport struct {
	Opened    int `json:"opened"`
	Withdrawn int `json:"withdrawn"`
	Expired   int `json:"expired"`
	Kept      int `json:"kept"`
}

// Propose re-evaluates every open proposal (withdrawing those whose evidence no longer holds,
// expiring those nobody decided) and opens new ones, for every known table.
func (s *Service) Propose(ctx context.Context) (ProposeReport, error) {
	ctx = catalog.WithActor(ctx, BotActor)
	var rep ProposeReport
	if err := s.expireOpen(ctx, &rep); err != nil {
		return rep, err
	}
	for after := uuid.Nil; ; {
		ts, more, err := s.tables.List(ctx, after, 200)
		if err != nil {
			return rep, err
		}
		for _, t := range ts {
			after = t.AssetID
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			for _, fn := range []func(context.Context, tables.Table, *ProposeReport) error{s.proposeOrphans, s.proposeUnused, s.proposeDangling, s.proposeShared, s.proposeExpiry} {
				if err := fn(ctx, t, &rep); err != nil {
					return rep, fmt.Errorf("cleanup: proposals for table %s: %w", t.AssetID, err)
				}
			}
		}
		if !more {
			return rep, nil
		}
	}
}

func (s *Service) expireOpen(ctx context.Context, rep *ProposeReport) error {
	if s.policy.OpenFor <= 0 {
		return nil
	}
	old, err := s.db.Proposal.Query().Where(proposal.StateEQ(proposal.StateOpen), proposal.CreatedAtLT(s.clock().Add(-s.policy.OpenFor))).All(ctx)
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := s.close(ctx, p, proposal.StateExpired, fmt.Sprintf("nobody decided within %s", s.policy.OpenFor)); err != nil {
			return err
		}
		rep.Expired++
	}
	return nil
}

// current returns the table's open, approved or executing proposal of a kind, if any.
func (s *Service) current(ctx context.Context, asset uuid.UUID, kind proposal.Kind) (*ent.Proposal, error) {
	p, err := s.db.Proposal.Query().Where(proposal.AssetID(asset), proposal.KindEQ(kind),
		proposal.StateIn(proposal.StateOpen, proposal.StateApproved, proposal.StateExecuting)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	return p, err
}

func (s *Service) proposeOrphans(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	if t.GoneAt != nil {
		return nil
	}
	obs, err := s.db.CleanupObservation.Query().Where(cleanupobservation.AssetID(t.AssetID), cleanupobservation.StreakGTE(2)).
		Order(ent.Asc(cleanupobservation.FieldPath)).All(ctx)
	if err != nil {
		return err
	}
	// A file a walk and an inventory pass both confirmed is proposed once.
	confirmed := map[string]*ent.CleanupObservation{}
	obs = slices.DeleteFunc(obs, func(o *ent.CleanupObservation) bool {
		dup := confirmed[o.Path] != nil
		confirmed[o.Path] = o
		return dup
	})
	cur, err := s.current(ctx, t.AssetID, proposal.KindOrphanFiles)
	if err != nil {
		return err
	}
	if cur != nil && cur.State != proposal.StateOpen {
		return nil // decided: the executor re-verifies every file before deleting it
	}
	if exempt, err := s.exempt(ctx, t.AssetID, KindOrphanFiles); err != nil || exempt {
		if err == nil && cur != nil {
			err = s.close(ctx, cur, proposal.StateWithdrawn, "the table was exempted from orphan-file cleanup")
			rep.Withdrawn++
		}
		return err
	}
	if cur != nil {
		files, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(cur.ID)).All(ctx)
		if err != nil {
			return err
		}
		stale := 0
		for _, f := range files {
			if confirmed[f.Path] == nil {
				stale++
			}
		}
		if stale == 0 {
			rep.Kept++
			return nil
		}
		if err := s.close(ctx, cur, proposal.StateWithdrawn, fmt.Sprintf("%d of its %d files are no longer confirmed orphans (referenced again, changed or gone)", stale, len(files))); err != nil {
			return err
		}
		rep.Withdrawn++
	}
	// A person's rejection holds: only files beyond the rejected set are proposed until the
	// quiet period ends.
	rej, _, err := s.rejection(ctx, t.AssetID, proposal.KindOrphanFiles)
	if err != nil {
		return err
	}
	var reopens string
	if rej != nil {
		files, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(rej.ID)).All(ctx)
		if err != nil {
			return err
		}
		rejected := map[string]bool{}
		for _, f := range files {
			rejected[f.Path] = true
		}
		obs = slices.DeleteFunc(obs, func(o *ent.CleanupObservation) bool { return rejected[o.Path] })
		reopens = fmt.Sprintf("proposes only the %d confirmed orphans beyond the %d files rejected on %s", len(obs), len(files), rej.DecidedAt.Format(time.RFC3339))
	}
	if len(obs) == 0 {
		return nil
	}
	ev := Evidence{Files: int64(len(obs))}
	if rej != nil {
		id := rej.ID
		ev.Reopens, ev.ReopensWhy = &id, reopens
	}
	walkIDs := map[uuid.UUID]bool{}
	shards := map[string]bool{}
	for _, o := range obs {
		ev.Bytes += o.Size
		walkIDs[o.LastWalkID] = true
		shards[o.Shard] = true
	}
	for sh := range shards {
		ev.Shards = append(ev.Shards, sh)
	}
	slices.Sort(ev.Shards)
	if ev.Scans, err = s.confirmingScans(ctx, walkIDs); err != nil {
		return err
	}
	last, err := s.lastFinishedScan(ctx, t.AssetID)
	if err != nil {
		return err
	}
	threshold := DefaultAgeThreshold
	ev.MinGap = DefaultMinGap.String()
	if last != nil {
		threshold = time.Duration(last.AgeThresholdSeconds) * time.Second
		if r, err := toReport(last); err == nil && r.MinGap != "" {
			ev.MinGap = r.MinGap
		}
	}
	ev.AgeThreshold = threshold.String()
	ev.Assumption = fmt.Sprintf("No write takes longer than %s to commit: a file older than that which no metadata references is not part of a write in flight.", threshold)
	ev.MonthlyCost = float64(ev.Bytes) / 1e9 * s.prices.StorageGBMonth
	ev.Summary = fmt.Sprintf("%d files (%s) in %d shards of %s are referenced by no retained snapshot and are older than %s; two consecutive complete walks of their shards (or, for files the write-path inventory recorded as staged by commits that did not happen, two inventory passes), at least %s apart, agreed (scans %d), and no other table known to live there references them. They cost about $%.2f a month.",
		ev.Files, BytesText(ev.Bytes), len(ev.Shards), t.Location, threshold, ev.MinGap, len(ev.Scans), ev.MonthlyCost)
	files := make([]journalFile, len(obs))
	for i, o := range obs {
		files[i] = journalFile{path: o.Path, size: o.Size} // modified: as the scans observed it
	}
	return s.open(ctx, t.AssetID, proposal.KindOrphanFiles, proposal.SeverityNormal, ev, files, rep)
}

// confirmingScans are the scans that confirmed a proposal's files: those of the walks that saw
// them last and of the complete walks of the same shards before them.
func (s *Service) confirmingScans(ctx context.Context, walkIDs map[uuid.UUID]bool) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	for id := range walkIDs {
		ids = append(ids, id)
	}
	walks, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup: read the walks that confirmed the files: %w", err)
	}
	scans := map[uuid.UUID]bool{}
	for _, w := range walks {
		scans[w.ScanID] = true
		prev, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.AssetID(w.AssetID), cleanupshardwalk.Shard(w.Shard),
			cleanupshardwalk.IDLT(w.ID), cleanupshardwalk.OutcomeEQ(cleanupshardwalk.OutcomeComplete)).Order(ent.Desc(cleanupshardwalk.FieldID)).First(ctx)
		if err == nil {
			scans[prev.ScanID] = true
		}
	}
	out := make([]uuid.UUID, 0, len(scans))
	for id := range scans {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return out, nil
}

// unusedNoLonger says why an open retirement no longer holds ("" while it does): the asset was
// deleted, exempted, read or read downstream, or the migration gate (gate, when not "") shuts.
func (s *Service) unusedNoLonger(a catalog.Asset, exempt bool, real usage.RealUsage, gate string) string {
	switch {
	case a.Status == catalog.StatusDeleted:
		return "the asset was deleted"
	case exempt:
		return "the asset was exempted from cleanup"
	case real.Reads > 0:
		why := fmt.Sprintf("it was read %d times in the last %s, last at %s", real.Reads, days(s.policy.UnusedWindow), real.LastRead.Format(time.RFC3339))
		for _, n := range real.NamesSeen {
			if n.LastAt.Equal(*real.LastRead) || n.LastAt.After(*real.LastRead) {
				why += fmt.Sprintf(" (as %s.%s)", n.Namespace, n.Name)
				break
			}
		}
		return why
	case real.DownstreamRead:
		return fmt.Sprintf("%d assets downstream of it were read in the last %s", len(real.ReadDownstream), days(s.policy.UnusedWindow))
	}
	return gate
}

// nameEvidence is each of the asset's names with when it was last used under it.
func nameEvidence(names []catalog.Name, seen []usage.NameSeen) []NameEvidence {
	var out []NameEvidence
	for _, n := range names {
		ne := NameEvidence{Namespace: n.Namespace, Name: n.Name, Current: n.Current()}
		for _, s := range seen {
			if s.Namespace == n.Namespace && s.Name == n.Name {
				at := s.LastAt
				ne.LastUsedAt = &at
			}
		}
		out = append(out, ne)
	}
	return out
}

func (s *Service) proposeUnused(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	if s.usage == nil || t.GoneAt != nil {
		return nil
	}
	a, err := s.cat.Get(ctx, t.AssetID)
	if err != nil {
		return err
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindUnusedAsset)
	if err != nil {
		return err
	}
	now := s.clock()
	from := now.Add(-s.policy.UnusedWindow)
	real, err := s.usage.Real(ctx, t.AssetID, from, now, s.downstream)
	if err != nil {
		return err
	}
	exempt, err := s.exempt(ctx, t.AssetID, KindUnusedAsset)
	if err != nil {
		return err
	}
	young := now.Sub(a.CreatedAt) < s.policy.MinAssetAge
	used := real.Reads > 0 || real.DownstreamRead
	gateOK, finalRun, gateWhy := true, uuid.Nil, ""
	if s.migrations != nil {
		if gateOK, finalRun, gateWhy, err = s.migrations(ctx, t.AssetID); err != nil {
			return err
		}
	}
	if cur != nil {
		if cur.State != proposal.StateOpen {
			return nil
		}
		why := gateWhy
		if gateOK {
			why = ""
		}
		why = s.unusedNoLonger(a, exempt, real, why)
		if why == "" {
			rep.Kept++
			return nil
		}
		if err := s.close(ctx, cur, proposal.StateWithdrawn, why); err != nil {
			return err
		}
		rep.Withdrawn++
		return nil
	}
	if used || young || exempt || !gateOK || a.Status == catalog.StatusDeleted {
		return nil
	}
	// A person's rejection holds until a whole new window of no reads follows the rejected one,
	// or the quiet period ends.
	rej, rejEv, err := s.rejection(ctx, t.AssetID, proposal.KindUnusedAsset)
	if err != nil {
		return err
	}
	if rej != nil && (rejEv.To == nil || from.Before(*rejEv.To)) {
		return nil
	}
	// Evidence over the asset's whole life: its last read ever, under which names, by how many.
	life, err := s.usage.Real(ctx, t.AssetID, a.CreatedAt, now, nil)
	if err != nil {
		return err
	}
	var down []uuid.UUID
	if s.downstream != nil {
		if down, err = s.downstream(ctx, t.AssetID); err != nil {
			return err
		}
	}
	names, err := s.cat.Names(ctx, t.AssetID)
	if err != nil {
		return err
	}
	ev := Evidence{Window: days(s.policy.UnusedWindow), From: &from, To: &now, LastRead: life.LastRead, Readers: life.DistinctReaders,
		Downstream: down, AssetCreatedAt: &a.CreatedAt, Location: t.Location, TableUUID: t.TableUUID, MetadataLocation: t.MetadataLocation}
	if finalRun != uuid.Nil {
		ev.FinalReconciliation = &finalRun
	}
	if rej != nil {
		id := rej.ID
		ev.Reopens, ev.ReopensWhy = &id, fmt.Sprintf("a whole new %s window without reads followed the one rejected on %s", days(s.policy.UnusedWindow), rej.DecidedAt.Format(time.RFC3339))
	}
	ev.Names = nameEvidence(names, life.NamesSeen)
	for _, o := range a.Owners {
		ev.Owners = append(ev.Owners, o.Principal)
	}
	last := "never"
	if life.LastRead != nil {
		last = life.LastRead.Format(time.RFC3339)
	}
	ev.Summary = fmt.Sprintf("No read of this asset under any of its %d names in the last %s (last read: %s), none of its %d downstream assets read either; created %s. Retiring it drops the table from its catalog first and deletes its files %s later.",
		len(names), days(s.policy.UnusedWindow), last, len(down), a.CreatedAt.Format(time.RFC3339), days(s.policy.Grace))
	if finalRun != uuid.Nil {
		ev.Summary += fmt.Sprintf(" It was migrated and cut over; the final reconciliation after the cutover, run %s, was clean.", finalRun)
	}
	return s.open(ctx, t.AssetID, proposal.KindUnusedAsset, proposal.SeverityNormal, ev, nil, rep)
}

// proposeDangling opens a high-severity finding from the newest reference check that ran both
// checks, and withdraws the open one when a later complete check found no dangling reference.
func (s *Service) proposeDangling(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	latest, err := s.lastRefCheck(ctx, t.AssetID)
	if err != nil {
		return err
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindDanglingReference)
	if err != nil || latest == nil {
		return err
	}
	if cur != nil {
		if latest.DanglingCount == 0 && latest.State == "complete" && latest.StartedAt.After(cur.CreatedAt) {
			if err := s.close(ctx, cur, proposal.StateWithdrawn, fmt.Sprintf("reference check %s found no dangling reference", latest.CheckID)); err != nil {
				return err
			}
			rep.Withdrawn++
			return nil
		}
		rep.Kept++
		return nil
	}
	if latest.DanglingCount == 0 {
		return nil
	}
	if rej, rejEv, err := s.rejection(ctx, t.AssetID, proposal.KindDanglingReference); err != nil || (rej != nil && rejEv.DanglingCount == latest.DanglingCount) {
		return err
	}
	id := latest.CheckID
	ev := Evidence{RefCheckID: &id, Dangling: latest.Dangling, DanglingCount: latest.DanglingCount,
		Remedies: []string{
			"restore the missing files from a backup or object versioning (the paths are listed), then run the reference check again (tidemark cleanup check-refs)",
			"or roll the table back to a snapshot that does not reference them (rollback to snapshot); for files only a tag or an old snapshot references, drop the tag or expire the snapshot",
			"or remove the references with a metadata-only delete of the affected files (e.g. Spark's remove_orphan references / a rewrite that drops them), accepting the data loss",
		},
		Summary: fmt.Sprintf("Retained snapshots reference %d files that storage did not have on two checks (reference check %s): queries reading them fail. Tidemark never repairs this itself.", latest.DanglingCount, latest.CheckID)}
	return s.open(ctx, t.AssetID, proposal.KindDanglingReference, proposal.SeverityHigh, ev, nil, rep)
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

// open writes a proposal, its files, and its notifications in one transaction.
func (s *Service) open(ctx context.Context, asset uuid.UUID, kind proposal.Kind, sev proposal.Severity, ev Evidence, files []journalFile, rep *ProposeReport) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	now := s.clock()
	err = s.tx(ctx, func(tx *ent.Tx) error {
		p, err := tx.Proposal.Create().SetKind(kind).SetAssetID(asset).SetState(proposal.StateOpen).SetSeverity(sev).
			SetEvidence(string(body)).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return err
		}
		if err := journalFiles(ctx, tx, p.ID, files); err != nil {
			return err
		}
		if err := s.cat.RecordAudit(ctx, tx, "proposal.open", asset, nil, map[string]any{"proposal_id": p.ID, "kind": kind, "summary": ev.Summary}); err != nil {
			return err
		}
		return s.notify(ctx, tx, p, "proposal.opened")
	})
	if err == nil {
		rep.Opened++
	}
	return err
}

// close moves an open proposal to a final state with the reason, and notifies the owners.
func (s *Service) close(ctx context.Context, p *ent.Proposal, state proposal.State, reason string) error {
	return s.tx(ctx, func(tx *ent.Tx) error {
		n, err := tx.Proposal.Update().Where(proposal.ID(p.ID), proposal.Version(p.Version)).SetState(state).SetReason(reason).
			SetUpdatedAt(s.clock()).AddVersion(1).Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return errConcurrent
		}
		p.State, p.Reason, p.Version = state, reason, p.Version+1
		if err := s.cat.RecordAudit(ctx, tx, "proposal."+string(state), p.AssetID, nil, map[string]any{"proposal_id": p.ID, "kind": p.Kind, "reason": reason}); err != nil {
			return err
		}
		if state == proposal.StateWithdrawn {
			return s.notify(ctx, tx, p, "proposal.withdrawn")
		}
		return nil
	})
}

var errConcurrent = &catalog.Error{Kind: catalog.ErrStaleVersion, Message: "the proposal changed meanwhile: read it again"}

func days(d time.Duration) string { return fmt.Sprintf("%d days", int(d.Hours()/24)) }

// rejection returns the newest rejection of a kind for the asset that still holds (decided
// within the quiet period), with its evidence.
func (s *Service) rejection(ctx context.Context, asset uuid.UUID, kind proposal.Kind) (*ent.Proposal, Evidence, error) {
	var ev Evidence
	if s.policy.RejectQuiet <= 0 {
		return nil, ev, nil
	}
	p, err := s.db.Proposal.Query().Where(proposal.AssetID(asset), proposal.KindEQ(kind), proposal.StateEQ(proposal.StateRejected),
		proposal.DecidedAtGT(s.clock().Add(-s.policy.RejectQuiet))).Order(ent.Desc(proposal.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, ev, nil
	}
	if err != nil {
		return nil, ev, err
	}
	return p, ev, json.Unmarshal([]byte(p.Evidence), &ev)
}

// proposeShared opens a non-executable shared_location proposal when the table's latest
// finished scan found another table living in its location, and withdraws it once a later
// scan finds none.
func (s *Service) proposeShared(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	last, err := s.lastFinishedScan(ctx, t.AssetID)
	if err != nil || last == nil {
		return err
	}
	latest, err := toReport(last)
	if err != nil {
		return err
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindSharedLocation)
	if err != nil {
		return err
	}
	if cur != nil {
		if len(latest.Foreign) == 0 && latest.StartedAt.After(cur.CreatedAt) {
			rep.Withdrawn++
			return s.close(ctx, cur, proposal.StateWithdrawn, fmt.Sprintf("scan %s found no other table in the location", latest.ScanID))
		}
		rep.Kept++
		return nil
	}
	if len(latest.Foreign) == 0 {
		return nil
	}
	if rej, rejEv, err := s.rejection(ctx, t.AssetID, proposal.KindSharedLocation); err != nil || (rej != nil && sameTenants(rejEv.Foreign, latest.Foreign)) {
		return err
	}
	id := latest.ScanID
	ev := Evidence{ScanID: &id, Foreign: latest.Foreign, Location: t.Location, TableUUID: t.TableUUID,
		Remedies: []string{
			"register the other table in Tidemark (POST /api/v1/tables with its metadata location, or sync the catalog that holds it): its files then count as referenced and cleanup of this location resumes",
			"or move one of the tables to a location of its own",
			"if the metadata file is a leftover of a table that no longer exists anywhere, remove it by hand after checking every catalog",
		},
		Summary: fmt.Sprintf("Another table lives in %s: %s. Until every table there is known, no file in the location is proposed for deletion.", t.Location, foreignText(latest.Foreign))}
	return s.open(ctx, t.AssetID, proposal.KindSharedLocation, proposal.SeverityHigh, ev, nil, rep)
}

func sameTenants(a, b []ForeignTenant) bool {
	ids := func(fs []ForeignTenant) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.TableUUID+"|"+f.Error)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(ids(a), ids(b))
}
