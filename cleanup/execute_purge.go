package cleanup

// Executing purge proposals: the drop already removed the metadata pointer; after the retire
// grace the listed files go, metadata files first, through the deletion loop (delete.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/tidemark/tidemark/ent"
)

// executePurge deletes exactly the files the approved purge listed. Metadata before data: the
// drop removed the pointer (the catalog's metadata step), and the list is journaled metadata
// files first, then manifest lists, manifests, and data and delete files, so a crash part way
// leaves files no metadata points to, never metadata pointing to missing files. Nothing is
// deleted before the retire grace after the drop has passed; before each batch it re-verifies
// that the purge still stands (the table still dropped at the same metadata, not registered
// again, its asset not restored) and re-reads every table sharing the location (their
// references are kept, and a table nobody told Tidemark about stops it), and each file is
// deleted only on the table's own ground, unreferenced, unchanged and older than the threshold.
func (s *Service) executePurge(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, fmt.Errorf("cleanup: read the evidence of proposal %s: %w", p.ID, err)
	}
	if ev.Purge == nil || ev.TableUUID == "" || ev.Location == "" {
		return false, stop("the proposal does not record which drop and table it purges")
	}
	if err := s.verifyPurge(ctx, p, ev); err != nil {
		return false, err
	}
	// The retire grace runs from the drop, as for a retired table's files.
	if due := ev.Purge.DroppedAt.Add(s.policy.Grace); s.clock().Before(due) {
		if err := s.db.Proposal.UpdateOneID(p.ID).SetDueAt(due).SetUpdatedAt(s.clock()).Exec(ctx); err != nil {
			return false, fmt.Errorf("cleanup: update proposal %s: %w", p.ID, err)
		}
		p.DueAt = &due
		return false, nil
	}
	threshold, err := time.ParseDuration(ev.AgeThreshold)
	if err != nil || threshold < MinAgeThreshold {
		threshold = DefaultAgeThreshold
	}
	g := func(ctx context.Context) (*refSet, icebergio.IO, string, error) {
		if err := s.verifyPurge(ctx, p, ev); err != nil {
			return nil, nil, "", err
		}
		t, err := s.tables.Get(ctx, p.AssetID)
		if err != nil {
			return nil, nil, "", err
		}
		fsys, err := s.purgeIO(ctx, t)
		if err != nil {
			return nil, nil, "", err
		}
		// Every other table there; the purged table's own metadata is not a stranger's.
		keep, err := s.keepAt(ctx, p.AssetID, ev.Location, nil, fsys, ev.TableUUID)
		if err != nil {
			return nil, nil, "", err
		}
		return keep, fsys, ev.Location, nil
	}
	finished, err := s.deletePending(ctx, p, held, rep, progress, threshold, g)
	if err != nil || !finished {
		return false, err
	}
	err = s.db.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepFiles).SetDoneAt(s.clock()).SetDetail("{}").Exec(ctx)
	if err != nil && !ent.IsConstraintError(err) {
		return false, err
	}
	return true, nil
}

// verifyPurge re-checks that an approved purge still stands: the drop is still the table's last
// change (nothing registered it again since, nor is registering it), the table is still dropped
// at the metadata the drop removed and bound to the same table-uuid, and its asset is still
// deleted.
func (s *Service) verifyPurge(ctx context.Context, p *ent.Proposal, ev Evidence) error {
	if s.served == nil {
		return fmt.Errorf("cleanup: proposal %s purges a served table, and the bot was built without the served warehouses (WithWarehouse)", p.ID)
	}
	r, err := s.served.PurgeRequestOf(ctx, ev.Purge.DropCommit)
	if err != nil {
		return err
	}
	if r.AssetID != p.AssetID {
		return stop("the drop %s is of asset %s, not %s", r.DropID, r.AssetID, p.AssetID)
	}
	why, err := s.purgeNoLonger(ctx, r)
	if err != nil {
		return err
	}
	if why != "" {
		return stop("%s", why)
	}
	t, err := s.tables.Get(ctx, p.AssetID)
	if err != nil {
		return err
	}
	if t.TableUUID != ev.TableUUID {
		return stop("the asset is now bound to table-uuid %s, not the approved %s", t.TableUUID, ev.TableUUID)
	}
	if t.MetadataLocation != ev.MetadataLocation {
		return stop("the table's metadata is now %s, not the approved %s", t.MetadataLocation, ev.MetadataLocation)
	}
	if t.Location != ev.Location {
		return stop("the table's location is now %s, not the approved %s", t.Location, ev.Location)
	}
	return nil
}
