package cleanup

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupexemption"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupscan"
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
}

// DefaultPolicy is the documented default.
var DefaultPolicy = Policy{UnusedWindow: 90 * 24 * time.Hour, MinAssetAge: 30 * 24 * time.Hour, Grace: 7 * 24 * time.Hour, OpenFor: 30 * 24 * time.Hour}

// WithUsage lets the proposer see real usage (and downstream consumers through lineage).
func WithUsage(u *usage.Service, downstream usage.Downstream) Option {
	return func(s *Service) { s.usage, s.downstream = u, downstream }
}

// WithPolicy sets the proposal and execution policy.
func WithPolicy(p Policy) Option { return func(s *Service) { s.policy = p } }

// WithFault is called at the executor's crash points (tests inject crashes through it).
func WithFault(f func(point string) error) Option { return func(s *Service) { s.fault = f } }

// Evidence is why a proposal exists; each kind fills its part.
type Evidence struct {
	Summary string `json:"summary"`
	// orphan_files
	Scans        []uuid.UUID `json:"scans,omitempty"`
	Shards       []string    `json:"shards,omitempty"`
	Files        int64       `json:"files,omitempty"`
	Bytes        int64       `json:"bytes,omitempty"`
	MonthlyCost  float64     `json:"monthly_cost_usd,omitempty"`
	AgeThreshold string      `json:"age_threshold,omitempty"`
	Assumption   string      `json:"assumption,omitempty"`
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
			for _, fn := range []func(context.Context, tables.Table, *ProposeReport) error{s.proposeOrphans, s.proposeUnused, s.proposeDangling, s.proposeExpiry} {
				if err := fn(ctx, t, &rep); err != nil {
					return rep, fmt.Errorf("proposals for table %s: %w", t.AssetID, err)
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
	confirmed := map[string]*ent.CleanupObservation{}
	for _, o := range obs {
		confirmed[o.Path] = o
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindOrphanFiles)
	if err != nil {
		return err
	}
	if cur != nil {
		if cur.State != proposal.StateOpen {
			return nil // decided: the executor re-verifies every file before deleting it
		}
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
	if len(obs) == 0 {
		return nil
	}
	ev := Evidence{Files: int64(len(obs))}
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
	sort.Strings(ev.Shards)
	// The scans that confirmed them: the walks that saw them last and the complete walks before.
	var ids []uuid.UUID
	for id := range walkIDs {
		ids = append(ids, id)
	}
	walks, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.IDIn(ids...)).All(ctx)
	if err != nil {
		return err
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
	for id := range scans {
		ev.Scans = append(ev.Scans, id)
	}
	slices.SortFunc(ev.Scans, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	last, err := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(t.AssetID), cleanupscan.StateEQ(cleanupscan.StateFinished)).
		Order(ent.Desc(cleanupscan.FieldID)).First(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return err
	}
	threshold := DefaultAgeThreshold
	if last != nil {
		threshold = time.Duration(last.AgeThresholdSeconds) * time.Second
	}
	ev.AgeThreshold = threshold.String()
	ev.Assumption = fmt.Sprintf("No write takes longer than %s to commit: a file older than that which no metadata references is not part of a write in flight.", threshold)
	ev.MonthlyCost = float64(ev.Bytes) / 1e9 * s.prices.StorageGBMonth
	ev.Summary = fmt.Sprintf("%d files (%s) in %d shards of %s are referenced by no retained snapshot and are older than %s; two consecutive complete walks of their shards agreed (scans %d). They cost about $%.2f a month.",
		ev.Files, BytesText(ev.Bytes), len(ev.Shards), t.Location, threshold, len(ev.Scans), ev.MonthlyCost)
	return s.open(ctx, t.AssetID, proposal.KindOrphanFiles, proposal.SeverityNormal, ev, obs, rep)
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
	exempt, err := s.db.CleanupExemption.Query().Where(cleanupexemption.ID(t.AssetID)).Exist(ctx)
	if err != nil {
		return err
	}
	young := now.Sub(a.CreatedAt) < s.policy.MinAssetAge
	used := real.Reads > 0 || real.DownstreamRead
	if cur != nil {
		if cur.State != proposal.StateOpen {
			return nil
		}
		var why string
		switch {
		case a.Status == catalog.StatusDeleted:
			why = "the asset was deleted"
		case exempt:
			why = "the asset was exempted from cleanup"
		case real.Reads > 0:
			why = fmt.Sprintf("it was read %d times in the last %s, last at %s", real.Reads, days(s.policy.UnusedWindow), real.LastRead.Format(time.RFC3339))
			for _, n := range real.NamesSeen {
				if n.LastAt.Equal(*real.LastRead) || n.LastAt.After(*real.LastRead) {
					why += fmt.Sprintf(" (as %s.%s)", n.Namespace, n.Name)
					break
				}
			}
		case real.DownstreamRead:
			why = fmt.Sprintf("%d assets downstream of it were read in the last %s", len(real.ReadDownstream), days(s.policy.UnusedWindow))
		}
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
	if used || young || exempt || a.Status == catalog.StatusDeleted {
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
		Downstream: down, AssetCreatedAt: &a.CreatedAt, Location: t.Location}
	for _, n := range names {
		ne := NameEvidence{Namespace: n.Namespace, Name: n.Name, Current: n.Current()}
		for _, seen := range life.NamesSeen {
			if seen.Namespace == n.Namespace && seen.Name == n.Name {
				at := seen.LastAt
				ne.LastUsedAt = &at
			}
		}
		ev.Names = append(ev.Names, ne)
	}
	for _, o := range a.Owners {
		ev.Owners = append(ev.Owners, o.Principal)
	}
	last := "never"
	if life.LastRead != nil {
		last = life.LastRead.Format(time.RFC3339)
	}
	ev.Summary = fmt.Sprintf("No read of this asset under any of its %d names in the last %s (last read: %s), none of its %d downstream assets read either; created %s. Retiring it drops the table from its catalog first and deletes its files %s later.",
		len(names), days(s.policy.UnusedWindow), last, len(down), a.CreatedAt.Format(time.RFC3339), days(s.policy.Grace))
	return s.open(ctx, t.AssetID, proposal.KindUnusedAsset, proposal.SeverityNormal, ev, nil, rep)
}

func (s *Service) proposeDangling(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	// The newest finished scans: the latest one that checked references decides. Bounded, since
	// every bot run reads them for every table.
	last, err := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(t.AssetID), cleanupscan.StateEQ(cleanupscan.StateFinished)).
		Order(ent.Desc(cleanupscan.FieldID)).Limit(10).All(ctx)
	if err != nil {
		return err
	}
	var latest *Report
	for _, sc := range last {
		r, err := toReport(sc)
		if err != nil {
			return err
		}
		if r.FilesChecked > 0 || r.DanglingCount > 0 {
			latest = &r
			break
		}
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindDanglingReference)
	if err != nil || latest == nil {
		return err
	}
	if cur != nil {
		if latest.DanglingCount == 0 && latest.StartedAt.After(cur.CreatedAt) {
			if err := s.close(ctx, cur, proposal.StateWithdrawn, fmt.Sprintf("scan %s found no dangling reference", latest.ScanID)); err != nil {
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
	id := latest.ScanID
	ev := Evidence{ScanID: &id, Dangling: latest.Dangling, DanglingCount: latest.DanglingCount,
		Remedies: []string{
			"restore the missing files from a backup or object versioning (the paths are listed), then scan again",
			"or roll the table back to a snapshot that does not reference them (rollback to snapshot)",
			"or remove the references with a metadata-only delete of the affected files (e.g. Spark's remove_orphan references / a rewrite that drops them), accepting the data loss",
		},
		Summary: fmt.Sprintf("The current snapshot references %d files that storage did not have on two checks (scan %s): queries reading them fail. Tidemark never repairs this itself.", latest.DanglingCount, latest.ScanID)}
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
	if in.Properties[PropertyExpireSnapshots] != "true" {
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
		if sn.Current || i >= len(snaps)-keep || now.Sub(sn.At) < maxAge {
			continue
		}
		expire = append(expire, sn.ID)
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindExpireSnapshots)
	if err != nil {
		return err
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
	ev := Evidence{Snapshots: expire, KeepLast: keep, MaxAge: maxAge.String(), Location: t.Location,
		Summary: fmt.Sprintf("%d snapshots are older than %s and not among the last %d: expiring them commits new metadata first; iceberg-go then deletes the files only they referenced.", len(expire), maxAge, keep)}
	return s.open(ctx, t.AssetID, proposal.KindExpireSnapshots, proposal.SeverityNormal, ev, nil, rep)
}

// open writes a proposal, its files, and its notifications in one transaction.
func (s *Service) open(ctx context.Context, asset uuid.UUID, kind proposal.Kind, sev proposal.Severity, ev Evidence, files []*ent.CleanupObservation, rep *ProposeReport) error {
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
		for len(files) > 0 {
			n := min(len(files), 500)
			bulk := make([]*ent.ProposalFileCreate, n)
			for i, f := range files[:n] {
				bulk[i] = tx.ProposalFile.Create().SetProposalID(p.ID).SetPath(f.Path).SetSize(f.Size)
			}
			if err := tx.ProposalFile.CreateBulk(bulk...).Exec(ctx); err != nil {
				return err
			}
			files = files[n:]
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

// Exempt sets or clears an asset's exemption from unused-asset proposals.
func (s *Service) Exempt(ctx context.Context, asset uuid.UUID, exempt bool, reason string) error {
	if _, err := s.cat.Get(ctx, asset); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *ent.Tx) error {
		if !exempt {
			if _, err := tx.CleanupExemption.Delete().Where(cleanupexemption.ID(asset)).Exec(ctx); err != nil {
				return err
			}
		} else {
			err := tx.CleanupExemption.Create().SetID(asset).SetReason(reason).SetBy(catalog.ActorFrom(ctx)).SetAt(s.clock()).Exec(ctx)
			if ent.IsConstraintError(err) {
				err = tx.CleanupExemption.UpdateOneID(asset).SetReason(reason).SetBy(catalog.ActorFrom(ctx)).SetAt(s.clock()).Exec(ctx)
			}
			if err != nil {
				return err
			}
		}
		return s.cat.RecordAudit(ctx, tx, "cleanup.exempt", asset, nil, map[string]any{"exempt": exempt, "reason": reason})
	})
}
