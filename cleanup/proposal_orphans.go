package cleanup

// Orphan-file proposals: the files two complete walks (or two inventory passes) agreed no table
// references.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupshardwalk"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/tables"
)

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
		reopens = fmt.Sprintf("proposes only the %d confirmed orphans beyond the %d files %s", len(obs), len(files), declinedOn(rej))
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
	ev.Assumption = fmt.Sprintf("No write takes longer than %s to commit: a file older than that which no metadata references is not part of a write in flight.", words.Duration(threshold))
	ev.MonthlyCost = float64(ev.Bytes) / 1e9 * s.prices.StorageGBMonth
	ev.Summary = fmt.Sprintf("%s (%s) in %s of %s are referenced by no retained snapshot and are older than %s; two consecutive complete walks of their shards (or, for files the write-path inventory recorded as staged by commits that did not happen, two inventory passes), at least %s apart, agreed (%s), and no other table known to live there references them. They cost about $%.2f a month.",
		words.Count(ev.Files, "file"), BytesText(ev.Bytes), words.Count(int64(len(ev.Shards)), "shard"), t.Location, words.Duration(threshold),
		durationWords(ev.MinGap), words.Count(int64(len(ev.Scans)), "scan"), ev.MonthlyCost)
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
