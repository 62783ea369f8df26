package cleanup

// Executing unused_asset proposals: metadata retired first, files after the grace period.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/proposalstep"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/tables"
)

// executeUnused retires an asset metadata first: it marks the asset deleted and drops the
// table from its Iceberg catalog (no purge), journals that, and only after the grace period
// deletes the files. Both steps first re-verify what was approved: the asset is still unused
// (no read under any name since the evidence window began, late arrivals included), not
// exempt, and its table is the one approved (same table-uuid and metadata location, not
// restored or re-registered). The file step deletes only what the retired table's last
// metadata referenced and its confirmed orphans, never a file another table references or one
// younger than the threshold, journaled file by file like an orphan proposal. A crash between
// the steps leaves files no metadata points to (orphans), never metadata pointing to missing
// files.
func (s *Service) executeUnused(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, fmt.Errorf("cleanup: read the evidence of proposal %s: %w", p.ID, err)
	}
	if ev.TableUUID == "" || ev.MetadataLocation == "" || ev.From == nil {
		return false, stop("the proposal does not record which table (table-uuid and metadata location) was approved; it was opened by an older version: let the bot propose it again")
	}
	steps, err := s.db.ProposalStep.Query().Where(proposalstep.ProposalID(p.ID)).All(ctx)
	if err != nil {
		return false, err
	}
	done := map[string]*ent.ProposalStep{}
	for _, st := range steps {
		done[st.Step] = st
	}
	if done[stepMetadata] == nil {
		if err := s.verifyUnused(ctx, p, ev, false); err != nil {
			return false, err
		}
		live, err := s.tables.Open(ctx, p.AssetID)
		if err != nil {
			return false, err
		}
		if got := live.Table.Metadata().TableUUID().String(); got != ev.TableUUID {
			return false, stop("the table now has table-uuid %s, not the approved %s", got, ev.TableUUID)
		}
		if live.Refs.MetadataLocation != ev.MetadataLocation {
			return false, stop("the table was written since the proposal: its metadata is now %s, not the approved %s", live.Refs.MetadataLocation, ev.MetadataLocation)
		}
		a, err := s.cat.Get(ctx, p.AssetID)
		if err != nil {
			return false, err
		}
		if a.Status != catalog.StatusDeleted {
			if _, err := s.cat.Delete(ctx, p.AssetID, catalog.AnyVersion); err != nil {
				return false, err
			}
		}
		dropped, err := s.tables.Drop(ctx, p.AssetID)
		if err != nil {
			return false, err
		}
		if err := s.crash("after_metadata"); err != nil {
			return false, err
		}
		due := s.clock().Add(s.policy.Grace)
		detail, _ := json.Marshal(map[string]any{"location": dropped.Location, "metadata_location": ev.MetadataLocation, "files_due_at": due})
		err = s.tx(ctx, func(tx *ent.Tx) error {
			if err := tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepMetadata).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil {
				return fmt.Errorf("cleanup: record a step of proposal %s: %w", p.ID, err)
			}
			if err := tx.Proposal.UpdateOneID(p.ID).SetDueAt(due).SetUpdatedAt(s.clock()).Exec(ctx); err != nil {
				return fmt.Errorf("cleanup: update proposal %s: %w", p.ID, err)
			}
			return s.cat.RecordAudit(ctx, tx, "cleanup.retire_asset", p.AssetID, nil, map[string]any{"proposal_id": p.ID,
				"approved_by": p.DecidedBy, "dropped_from_catalog": true, "location": dropped.Location, "files_due_at": due})
		})
		if err != nil {
			return false, err
		}
		p.DueAt = &due
		return false, nil // the files wait for the grace period
	}
	if p.DueAt != nil && s.clock().Before(*p.DueAt) {
		return false, nil
	}
	var meta struct {
		Location string `json:"location"`
	}
	if err := json.Unmarshal([]byte(done[stepMetadata].Detail), &meta); err != nil || meta.Location == "" {
		return false, fmt.Errorf("cleanup: the journal of proposal %s lost the table location", p.ID)
	}
	if err := s.verifyUnused(ctx, p, ev, true); err != nil {
		return false, err
	}
	if done[stepPlan] == nil {
		if err := s.planRetirement(ctx, p, meta.Location); err != nil {
			return false, err
		}
	}
	g := func(ctx context.Context) (*refSet, icebergio.IO, string, error) {
		if err := s.verifyUnused(ctx, p, ev, true); err != nil {
			return nil, nil, "", err
		}
		dropped, err := s.tables.Drop(ctx, p.AssetID) // already dropped: where and how to reach it
		if err != nil {
			return nil, nil, "", err
		}
		fsys, err := tables.IO(ctx, meta.Location, dropped.Props)
		if err != nil {
			return nil, nil, "", err
		}
		// Every other table there; the retired table's own older metadata is not a tenant.
		keep, err := s.keepAt(ctx, p.AssetID, meta.Location, nil, fsys, ev.TableUUID)
		if err != nil {
			return nil, nil, "", err
		}
		return keep, fsys, meta.Location, nil
	}
	finished, err := s.deletePending(ctx, p, held, rep, progress, s.threshold(ctx, p.AssetID), g)
	if err != nil || !finished {
		return false, err
	}
	err = s.db.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepFiles).SetDoneAt(s.clock()).SetDetail("{}").Exec(ctx)
	if err != nil && !ent.IsConstraintError(err) {
		return false, err
	}
	return true, nil
}

// verifyUnused re-checks an unused-asset approval: still unused since the evidence window
// began, not exempt, the same table; after the metadata step, still dropped and deleted.
func (s *Service) verifyUnused(ctx context.Context, p *ent.Proposal, ev Evidence, retired bool) error {
	now := s.clock()
	if s.usage != nil {
		real, err := s.usage.Real(ctx, p.AssetID, *ev.From, now, s.downstream)
		if err != nil {
			return err
		}
		if real.Reads > 0 {
			return stop("the asset was read %d times since %s (last at %s), after the evidence was gathered: it is in use", real.Reads, words.Time(*ev.From), words.Time(*real.LastRead))
		}
		if real.DownstreamRead {
			return stop("%d assets downstream of it were read since %s: it is in use", len(real.ReadDownstream), words.Time(*ev.From))
		}
	}
	if ok, err := s.exempt(ctx, p.AssetID, KindUnusedAsset); err != nil || ok {
		if err == nil {
			err = stop("the asset was exempted from cleanup after the approval")
		}
		return err
	}
	if s.migrations != nil {
		ok, _, why, err := s.migrations(ctx, p.AssetID)
		if err != nil {
			return err
		}
		if !ok {
			return stop("%s", why)
		}
	}
	t, err := s.tables.Get(ctx, p.AssetID)
	if err != nil {
		return err
	}
	if t.TableUUID != ev.TableUUID {
		return stop("the asset is now bound to table-uuid %s, not the approved %s", t.TableUUID, ev.TableUUID)
	}
	if !retired {
		return nil
	}
	if t.GoneAt == nil {
		return stop("the table was restored or registered again during the grace period (it is live in its catalog): its files stay")
	}
	if t.MetadataLocation != ev.MetadataLocation {
		return stop("the table's metadata is now %s, not the approved %s: it was re-registered or written during the grace period", t.MetadataLocation, ev.MetadataLocation)
	}
	a, err := s.cat.Get(ctx, p.AssetID)
	if err != nil {
		return err
	}
	if a.Status != catalog.StatusDeleted {
		return stop("the asset was restored during the grace period: its files stay")
	}
	return nil
}

// threshold is the age threshold of the table's last finished scan, else the default.
// A database error falls back to the default, which is never below an override.
func (s *Service) threshold(ctx context.Context, asset uuid.UUID) time.Duration {
	last, err := s.lastFinishedScan(ctx, asset)
	if err != nil || last == nil || last.AgeThresholdSeconds <= 0 {
		return DefaultAgeThreshold
	}
	return max(time.Duration(last.AgeThresholdSeconds)*time.Second, MinAgeThreshold)
}

// planRetirement journals the files the retirement may delete, metadata first: what the
// retired table's last metadata referenced and its confirmed orphans, as listed under its
// location now. Everything else there stays.
func (s *Service) planRetirement(ctx context.Context, p *ent.Proposal, loc string) error {
	live, err := s.tables.Open(ctx, p.AssetID) // a dropped table loads from its last metadata
	if err != nil {
		return fmt.Errorf("cleanup: read the retired table's last metadata: %w", err)
	}
	rank := map[string]int{}
	_, err = s.tables.WalkReferences(ctx, live, func(path string, kind tables.RefKind) error {
		k, _ := normalize(path)
		r := 3
		switch kind {
		case tables.RefMetadata, tables.RefVersionHint, tables.RefStatistics:
			r = 0
		case tables.RefManifestList:
			r = 1
		case tables.RefManifest:
			r = 2
		}
		if old, ok := rank[k]; !ok || r < old {
			rank[k] = r
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cleanup: read the retired table's last metadata: %w", err)
	}
	obs, err := s.db.CleanupObservation.Query().Where(cleanupobservation.AssetID(p.AssetID), cleanupobservation.StreakGTE(2)).All(ctx)
	if err != nil {
		return err
	}
	for _, o := range obs {
		if _, ok := rank[o.Path]; !ok {
			rank[o.Path] = 4
		}
	}
	lister, ok := live.IO.(icebergio.ListableIO)
	if !ok {
		return fmt.Errorf("cleanup: the storage of %s cannot be listed", loc)
	}
	type planned struct {
		journalFile
		rank int
	}
	var plan []planned
	inPage := 0
	err = lister.WalkDir(strings.TrimRight(loc, "/"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		// Paced like a scan's walk: a LIST a directory and one for each further page.
		if d.IsDir() {
			inPage = 0
			return s.wait(ctx, s.lists)
		}
		if inPage++; inPage > s.pageSize {
			inPage = 1
			if err := s.wait(ctx, s.lists); err != nil {
				return err
			}
		}
		k, _ := normalize(path)
		r, ok := rank[k]
		if !ok {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		plan = append(plan, planned{journalFile{path: k, size: info.Size(), modified: info.ModTime()}, r})
		return nil
	})
	if err != nil {
		return fmt.Errorf("cleanup: list %s: %w", loc, err)
	}
	slices.SortStableFunc(plan, func(a, b planned) int { return a.rank - b.rank })
	detail, _ := json.Marshal(map[string]any{"files": len(plan)})
	journal := make([]journalFile, len(plan))
	for i, f := range plan {
		journal[i] = f.journalFile
	}
	return s.tx(ctx, func(tx *ent.Tx) error {
		if err := journalFiles(ctx, tx, p.ID, journal); err != nil {
			return err
		}
		return tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepPlan).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx)
	})
}
