package cleanup

// The journal of an execution: its steps, and its files as approval or planning writes them (the
// fenced moves of files out of pending are in delete.go, beside their one caller).

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
)

// Execution steps journaled for an unused asset.
const (
	stepMetadata = "retire_metadata"  // asset marked deleted, table dropped from its catalog (no purge)
	stepFiles    = "delete_files"     // after the grace period: the journaled files deleted
	stepExpire   = "expire_snapshots" // the approved snapshots removed in one metadata commit
	stepPlan     = "plan_files"       // the retired table's files journaled for deletion
	stepStopped  = "stopped"          // re-verification found the world changed since approval
)

// journalFile is a file a proposal's execution may delete, as its journal starts it: pending.
type journalFile struct {
	path     string
	size     int64
	modified time.Time // zero: what the scans observed, looked up by journalFiles
}

// journalFiles writes a proposal's file journal in batches. A file given without its
// modification time gets the one the confirming scans observed (its cleanup observation), so
// the person approving sees it.
func journalFiles(ctx context.Context, tx *ent.Tx, proposalID uuid.UUID, files []journalFile) error {
	var asset uuid.UUID
	for len(files) > 0 {
		n := min(len(files), 500)
		var unknown []string
		for _, f := range files[:n] {
			if f.modified.IsZero() {
				unknown = append(unknown, f.path)
			}
		}
		observed := map[string]time.Time{}
		if len(unknown) > 0 {
			if asset == uuid.Nil {
				p, err := tx.Proposal.Get(ctx, proposalID)
				if err != nil {
					return err
				}
				asset = p.AssetID
			}
			obs, err := tx.CleanupObservation.Query().Where(cleanupobservation.AssetID(asset), cleanupobservation.PathIn(unknown...)).All(ctx)
			if err != nil {
				return err
			}
			for _, o := range obs {
				observed[o.Path] = o.ModifiedAt
			}
		}
		bulk := make([]*ent.ProposalFileCreate, n)
		for i, f := range files[:n] {
			c := tx.ProposalFile.Create().SetProposalID(proposalID).SetPath(f.path).SetSize(f.size)
			if !f.modified.IsZero() {
				c.SetModifiedAt(f.modified.UTC())
			} else if t, ok := observed[f.path]; ok {
				c.SetModifiedAt(t)
			}
			bulk[i] = c
		}
		if err := tx.ProposalFile.CreateBulk(bulk...).Exec(ctx); err != nil {
			return err
		}
		files = files[n:]
	}
	return nil
}
