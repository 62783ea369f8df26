package cleanup

// The proposer: each round re-evaluates the open proposals and opens new ones, kind by kind
// (proposal_<kind>.go), under the policy; what every kind shares is here: the evidence, how a
// proposal opens and closes, and how long a rejection holds.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/internal/words"
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
	KindPurge           = "purge" // a served table dropped with purgeRequested: its files
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

	// Purge (purge): the drop that asked for it and where its file list came from.
	Purge *PurgeEvidence `json:"purge,omitempty"`

	// Kept (expire_snapshots): snapshots old enough to expire that it keeps because they are
	// still needed (read by time travel between From and To, or an input version a downstream
	// keeps), with why; none of them is in Snapshots.
	Kept []KeptSnapshot `json:"kept,omitempty"`
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
// expiring those nobody decided) and opens new ones, for every known table and every recorded
// drop with purgeRequested.
func (s *Service) Propose(ctx context.Context) (ProposeReport, error) {
	ctx = catalog.WithActor(ctx, BotActor)
	var rep ProposeReport
	if err := s.expireOpen(ctx, &rep); err != nil {
		return rep, err
	}
	// Purges first: they need neither usage nor lineage, so nothing those wait on delays them.
	if err := s.proposePurges(ctx, &rep); err != nil {
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
		if err := s.close(ctx, p, proposal.StateExpired, "nobody decided within "+words.Duration(s.policy.OpenFor)); err != nil {
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

func days(d time.Duration) string { return words.Count(int64(d.Hours()/24), "day") }

// durationWords says a Go duration string in words for prose (as it is when it does not parse).
func durationWords(d string) string {
	v, err := time.ParseDuration(d)
	if err != nil {
		return d
	}
	return words.Duration(v)
}

// declinedOn says how and when a person declined a proposal: rejected, or its approval
// cancelled.
func declinedOn(p *ent.Proposal) string {
	if p.State == proposal.StateCancelled {
		return "whose approval was cancelled on " + words.Time(p.UpdatedAt)
	}
	at := p.UpdatedAt
	if p.DecidedAt != nil {
		at = *p.DecidedAt
	}
	return "rejected on " + words.Time(at)
}

// rejection returns the newest decline of a kind for the asset that still holds (within the
// quiet period), with its evidence: a rejection, or an approval a person cancelled (a cancel
// says "not this", as a rejection does, so the bot does not propose the same again at its next
// round; only what the evidence adds beyond it).
func (s *Service) rejection(ctx context.Context, asset uuid.UUID, kind proposal.Kind) (*ent.Proposal, Evidence, error) {
	var ev Evidence
	if s.policy.RejectQuiet <= 0 {
		return nil, ev, nil
	}
	since := s.clock().Add(-s.policy.RejectQuiet)
	p, err := s.db.Proposal.Query().Where(proposal.AssetID(asset), proposal.KindEQ(kind), proposal.Or(
		proposal.And(proposal.StateEQ(proposal.StateRejected), proposal.DecidedAtGT(since)),
		proposal.And(proposal.StateEQ(proposal.StateCancelled), proposal.UpdatedAtGT(since)))).Order(ent.Desc(proposal.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, ev, nil
	}
	if err != nil {
		return nil, ev, err
	}
	return p, ev, json.Unmarshal([]byte(p.Evidence), &ev)
}
