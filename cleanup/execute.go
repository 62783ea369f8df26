package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/ent/proposalstep"
	"github.com/tidemark/tidemark/tables"
)

// Execution steps journaled for an unused asset.
const (
	stepMetadata = "retire_metadata" // asset marked deleted, table dropped from its catalog (no purge)
	stepFiles    = "delete_files"    // after the grace period: the table location's files deleted
	stepExpire   = "expire_snapshots"
)

// ExecuteReport says what one executor run did.
type ExecuteReport struct {
	Proposals int   `json:"proposals"` // proposals worked on
	Executed  int   `json:"executed"`  // finished
	Waiting   int   `json:"waiting"`   // in their grace period
	Deleted   int64 `json:"files_deleted"`
	Bytes     int64 `json:"bytes_deleted"`
	Skipped   int64 `json:"files_skipped"`
	Failed    int   `json:"failed"`
}

// OrphanOutcome is what executing an orphan-files proposal did.
type OrphanOutcome struct {
	Deleted int64          `json:"deleted"`
	Bytes   int64          `json:"bytes"`
	Gone    int64          `json:"already_gone"`
	Skipped map[string]int `json:"skipped,omitempty"` // reason -> files
}

// Execute runs approved proposals (one, or all when id is uuid.Nil) and continues executing
// ones a crash interrupted or whose grace period has passed. Every step is idempotent and
// journaled, so running it again after a crash finishes the job and does nothing twice.
func (s *Service) Execute(ctx context.Context, id uuid.UUID, progress func(string)) (ExecuteReport, error) {
	var rep ExecuteReport
	q := s.db.Proposal.Query().Where(proposal.StateIn(proposal.StateApproved, proposal.StateExecuting)).Order(ent.Asc(proposal.FieldID))
	if id != uuid.Nil {
		p, err := s.row(ctx, id)
		if err != nil {
			return rep, err
		}
		if p.State != proposal.StateApproved && p.State != proposal.StateExecuting {
			return rep, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("proposal %s is %s: only approved proposals are executed", id, p.State)}
		}
		q.Where(proposal.ID(id))
	}
	ps, err := q.All(ctx)
	if err != nil {
		return rep, err
	}
	for _, p := range ps {
		if p.State == proposal.StateExecuting && p.DueAt != nil && s.clock().Before(*p.DueAt) {
			rep.Waiting++
			continue
		}
		rep.Proposals++
		if progress != nil {
			progress(fmt.Sprintf("executing %s proposal %s", p.Kind, p.ID))
		}
		ctx := catalog.WithActor(ctx, BotActor+" for "+p.DecidedBy)
		if p.State == proposal.StateApproved {
			n, err := s.db.Proposal.Update().Where(proposal.ID(p.ID), proposal.Version(p.Version)).SetState(proposal.StateExecuting).
				SetUpdatedAt(s.clock()).AddVersion(1).Save(ctx)
			if err != nil {
				return rep, err
			}
			if n == 0 {
				continue // another worker took it
			}
			p.State, p.Version = proposal.StateExecuting, p.Version+1
		}
		var done bool
		switch p.Kind {
		case proposal.KindOrphanFiles:
			done, err = s.executeOrphans(ctx, p, &rep, progress)
		case proposal.KindUnusedAsset:
			done, err = s.executeUnused(ctx, p, &rep)
		case proposal.KindExpireSnapshots:
			done, err = s.executeExpiry(ctx, p)
		default:
			err = fmt.Errorf("%s proposals are never executed", p.Kind)
		}
		var fault *faultError
		switch {
		case errors.As(err, &fault) || ctx.Err() != nil:
			return rep, err // a crash: the journal lets the next run resume
		case err != nil:
			rep.Failed++
			if uerr := s.db.Proposal.UpdateOneID(p.ID).SetState(proposal.StateFailed).SetReason(err.Error()).SetUpdatedAt(s.clock()).AddVersion(1).Exec(ctx); uerr != nil {
				return rep, uerr
			}
			s.log.Warn("cleanup proposal failed", "proposal_id", p.ID, "err", err)
		case done:
			rep.Executed++
			now := s.clock()
			if err := s.db.Proposal.UpdateOneID(p.ID).SetState(proposal.StateExecuted).SetExecutedAt(now).SetUpdatedAt(now).AddVersion(1).Exec(ctx); err != nil {
				return rep, err
			}
		default:
			rep.Waiting++
		}
	}
	return rep, nil
}

type faultError struct{ point string }

func (e *faultError) Error() string { return "injected crash at " + e.point }

func (s *Service) crash(point string) error {
	if s.fault != nil {
		if err := s.fault(point); err != nil {
			return &faultError{point: point + ": " + err.Error()}
		}
	}
	return nil
}

// executeOrphans deletes the proposal's pending files in batches. Before each batch it re-reads
// the table's current metadata; each file is deleted only if that metadata does not reference
// it, it is still there, and it is still older than the threshold the proposal states.
func (s *Service) executeOrphans(ctx context.Context, p *ent.Proposal, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, err
	}
	threshold, err := time.ParseDuration(ev.AgeThreshold)
	if err != nil {
		threshold = DefaultAgeThreshold
	}
	var limiter *rate.Limiter
	if s.statRate > 0 { // stat and delete requests share the storage request pacing
		limiter = rate.NewLimiter(rate.Limit(s.statRate), 1)
	}
	for {
		pending, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(p.ID), proposalfile.StateEQ(proposalfile.StatePending)).
			Order(ent.Asc(proposalfile.FieldID)).Limit(500).All(ctx)
		if err != nil || len(pending) == 0 {
			if err == nil {
				err = s.orphanOutcome(ctx, p)
			}
			return err == nil, err
		}
		live, err := s.tables.Open(ctx, p.AssetID)
		if err != nil {
			return false, err
		}
		refs := &refSet{}
		if _, err := s.tables.WalkReferences(ctx, live, func(path string, _ tables.RefKind) error { refs.add(path); return nil }); err != nil {
			return false, fmt.Errorf("re-read the table's metadata: %w", err)
		}
		refs.seal()
		var deleted []string
		var bytes int64
		for _, f := range pending {
			if err := s.crash("orphan_file"); err != nil {
				s.auditDeletion(ctx, p, deleted, bytes)
				return false, err
			}
			if limiter != nil {
				if err := limiter.Wait(ctx); err != nil {
					return false, err
				}
			}
			state, detail, err := s.deleteOrphan(ctx, live, refs, f, threshold)
			if err != nil {
				return false, err
			}
			now := s.clock()
			if err := s.db.ProposalFile.UpdateOne(f).SetState(state).SetDetail(detail).SetDoneAt(now).Exec(ctx); err != nil {
				return false, err
			}
			if !strings.HasPrefix(detail, "could not check") {
				// Deleted, gone, referenced again or rewritten: the observation no longer holds,
				// and the next proposal must not list the file again before a scan confirms it anew.
				if _, err := s.db.CleanupObservation.Delete().Where(cleanupobservation.AssetID(p.AssetID), cleanupobservation.Path(f.Path)).Exec(ctx); err != nil {
					return false, err
				}
			}
			switch state {
			case proposalfile.StateDeleted:
				deleted = append(deleted, f.Path)
				bytes += f.Size
				rep.Deleted++
				rep.Bytes += f.Size
			case proposalfile.StateSkipped:
				rep.Skipped++
			}
		}
		s.auditDeletion(ctx, p, deleted, bytes)
		if progress != nil {
			progress(fmt.Sprintf("proposal %s: %d files deleted so far", p.ID, rep.Deleted))
		}
	}
}

// deleteOrphan re-verifies and deletes one file: ("deleted"|"gone"|"skipped", why).
func (s *Service) deleteOrphan(ctx context.Context, live *tables.Live, refs *refSet, f *ent.ProposalFile, threshold time.Duration) (proposalfile.State, string, error) {
	key, _ := normalize(f.Path)
	if refs.has(key) {
		return proposalfile.StateSkipped, "referenced by the table's current metadata (committed after the proposal was confirmed)", nil
	}
	info, err := stat(live.IO, f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return proposalfile.StateGone, "already gone", nil
	}
	if err != nil {
		return proposalfile.StateSkipped, "could not check it: " + err.Error(), nil
	}
	if age := s.clock().Sub(info.ModTime()); age < threshold {
		return proposalfile.StateSkipped, fmt.Sprintf("modified %s ago, younger than the %s threshold (rewritten since it was confirmed)", age.Round(time.Second), threshold), nil
	}
	if info.Size() != f.Size {
		return proposalfile.StateSkipped, fmt.Sprintf("its size changed from %d to %d bytes since it was confirmed", f.Size, info.Size()), nil
	}
	if err := live.IO.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("delete %s: %w", f.Path, err)
	}
	return proposalfile.StateDeleted, "deleted", nil
}

// stat looks a file up by key: a HEAD on object stores (their IO has Stat), else open and stat.
func stat(io icebergio.IO, p string) (fs.FileInfo, error) {
	if st, ok := io.(interface {
		Stat(string) (fs.FileInfo, error)
	}); ok {
		return st.Stat(p)
	}
	f, err := io.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

func (s *Service) auditDeletion(ctx context.Context, p *ent.Proposal, files []string, bytes int64) {
	if len(files) == 0 {
		return
	}
	if err := s.cat.RecordAudit(context.WithoutCancel(ctx), nil, "cleanup.delete_files", p.AssetID, nil,
		map[string]any{"proposal_id": p.ID, "kind": p.Kind, "approved_by": p.DecidedBy, "files": files, "count": len(files), "bytes": bytes}); err != nil {
		s.log.Error("could not audit a deletion", "proposal_id", p.ID, "err", err)
	}
}

func (s *Service) orphanOutcome(ctx context.Context, p *ent.Proposal) error {
	files, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(p.ID)).All(ctx)
	if err != nil {
		return err
	}
	out := OrphanOutcome{Skipped: map[string]int{}}
	for _, f := range files {
		switch f.State {
		case proposalfile.StateDeleted:
			out.Deleted++
			out.Bytes += f.Size
		case proposalfile.StateGone:
			out.Gone++
		case proposalfile.StateSkipped:
			out.Skipped[f.Detail]++
		}
	}
	b, _ := json.Marshal(out)
	return s.db.Proposal.UpdateOneID(p.ID).SetOutcome(string(b)).Exec(ctx)
}

// executeUnused retires an asset metadata first: it marks the asset deleted and drops the
// table from its Iceberg catalog (no purge), journals that, and only after the grace period
// deletes the files under the table's location. A crash between the two leaves files no
// metadata points to (orphans), never metadata pointing to missing files.
func (s *Service) executeUnused(ctx context.Context, p *ent.Proposal, rep *ExecuteReport) (bool, error) {
	steps, err := s.db.ProposalStep.Query().Where(proposalstep.ProposalID(p.ID)).All(ctx)
	if err != nil {
		return false, err
	}
	done := map[string]*ent.ProposalStep{}
	for _, st := range steps {
		done[st.Step] = st
	}
	if done[stepMetadata] == nil {
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
		detail, _ := json.Marshal(map[string]any{"location": dropped.Location, "files_due_at": due})
		err = s.tx(ctx, func(tx *ent.Tx) error {
			if err := tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepMetadata).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil {
				return err
			}
			if err := tx.Proposal.UpdateOneID(p.ID).SetDueAt(due).SetUpdatedAt(s.clock()).Exec(ctx); err != nil {
				return err
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
		return false, fmt.Errorf("the journal of proposal %s lost the table location", p.ID)
	}
	dropped, err := s.tables.Drop(ctx, p.AssetID) // already dropped: returns where and how to reach it
	if err != nil {
		return false, err
	}
	fsys, err := tables.IO(ctx, meta.Location, dropped.Props)
	if err != nil {
		return false, err
	}
	lister, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return false, fmt.Errorf("the storage of %s cannot be listed", meta.Location)
	}
	var n, bytes int64
	var files []string
	err = lister.WalkDir(strings.TrimRight(meta.Location, "/"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll // nothing left (a previous run finished the walk)
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if err := s.crash("unused_file"); err != nil {
			return err
		}
		info, ierr := d.Info()
		if rerr := fsys.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		n++
		if ierr == nil {
			bytes += info.Size()
		}
		if len(files) < 1000 {
			files = append(files, path)
		}
		return nil
	})
	if n > 0 {
		rep.Deleted += n
		rep.Bytes += bytes
		s.auditDeletion(ctx, p, files, bytes)
	}
	if err != nil {
		return false, err
	}
	detail, _ := json.Marshal(map[string]any{"files": n, "bytes": bytes})
	err = s.db.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepFiles).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx)
	if err != nil && !ent.IsConstraintError(err) {
		return false, err
	}
	return true, s.db.Proposal.UpdateOneID(p.ID).SetOutcome(string(detail)).Exec(ctx)
}

// executeExpiry expires the proposal's snapshots through iceberg-go: the metadata commit first,
// then iceberg-go deletes the files only those snapshots referenced.
func (s *Service) executeExpiry(ctx context.Context, p *ent.Proposal) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, err
	}
	live, err := s.tables.Open(ctx, p.AssetID)
	if err != nil {
		return false, err
	}
	maxAge, err := time.ParseDuration(ev.MaxAge)
	if err != nil {
		return false, err
	}
	before := len(live.Table.Metadata().Snapshots())
	txn := live.Table.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(maxAge), table.WithRetainLast(ev.KeepLast), table.WithPostCommit(true)); err != nil {
		return false, err
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		return false, fmt.Errorf("commit the expiry: %w", err)
	}
	after := len(tbl.Metadata().Snapshots())
	detail, _ := json.Marshal(map[string]any{"snapshots_before": before, "snapshots_after": after, "metadata_location": tbl.MetadataLocation()})
	if err := s.db.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepExpire).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil && !ent.IsConstraintError(err) {
		return false, err
	}
	if err := s.cat.RecordAudit(ctx, nil, "cleanup.expire_snapshots", p.AssetID, nil, map[string]any{"proposal_id": p.ID,
		"approved_by": p.DecidedBy, "snapshots_expired": before - after}); err != nil {
		return false, err
	}
	return true, s.db.Proposal.UpdateOneID(p.ID).SetOutcome(string(detail)).Exec(ctx)
}
