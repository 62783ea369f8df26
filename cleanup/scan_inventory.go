package cleanup

// The inventory pass: for a table Tidemark serves, the files its write-path inventory records
// as staged by commits that did not happen are settled from the record, without listing storage.
// They are observed like a walk's candidates (age threshold, two passes at least the confirmation
// gap apart), and the executor re-verifies each against the table's metadata before deleting it.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupshardwalk"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
)

// inventoryShard is the shard name of inventory passes' observations.
const inventoryShard = "@inventory"

// WithWarehouse gives the bot the record of the warehouses Tidemark serves: their tables'
// write-path inventory (known leftovers, the manifests each commit added). Without it no
// inventory is read, and a served table's inventory pass fails.
func WithWarehouse(w *warehouse.Service) Option { return func(s *Service) { s.served = w } }

// leftovers are a served table's known leftovers, from its inventory.
func (s *Service) leftovers(ctx context.Context, asset uuid.UUID) ([]warehouse.Leftover, warehouse.LeftoverStats, error) {
	if s.served == nil {
		return nil, warehouse.LeftoverStats{}, fmt.Errorf("cleanup: table %s is served by Tidemark, and the bot was built without the served warehouses (WithWarehouse) to read its inventory", asset)
	}
	return s.served.Leftovers(ctx, asset)
}

// scanInventory runs one inventory pass of a served table.
func (s *Service) scanInventory(ctx context.Context, scanID uuid.UUID, rep *Report, opt ScanOptions) error {
	asset := rep.AssetID
	live, err := s.tables.Open(ctx, asset)
	if err != nil {
		return err
	}
	rep.Location, rep.MetadataLocation = live.Refs.Location, live.Refs.MetadataLocation
	rep.Planned = []string{inventoryShard}
	left, st, err := s.leftovers(ctx, asset)
	if err != nil {
		return err
	}
	// The record keeps a leftover after the executor deleted it: without this, every pass would
	// observe it again and a person would be asked to approve deleting a file that is gone.
	if left, err = s.notDeleted(ctx, asset, left, rep); err != nil {
		return err
	}
	rep.SettledByInventory, rep.StagedThenCommitted = int64(st.Staged), int64(st.Committed)
	sr := ShardReport{Shard: inventoryShard, StartedAt: s.clock()}
	held, err := s.claim(ctx, asset, inventoryShard, s.leaseTTL)
	if err != nil {
		return err
	}
	if held == nil {
		sr.Outcome, sr.Error = "leased", "another worker holds this table's inventory pass"
		rep.Shards = append(rep.Shards, sr)
		return nil
	}
	defer s.release(ctx, held)
	w, err := s.db.CleanupShardWalk.Create().SetScanID(scanID).SetAssetID(asset).SetShard(inventoryShard).SetStartedAt(sr.StartedAt).
		SetOutcome(cleanupshardwalk.OutcomeRunning).Save(ctx)
	if err != nil {
		return err
	}
	cands, heads, herr := s.leftoverCandidates(ctx, live, left, rep)
	rep.Requests.Head += heads
	fin := s.clock()
	sr.FinishedAt, sr.Entries = &fin, int64(len(left))
	outcome := cleanupshardwalk.OutcomeComplete
	if herr != nil {
		outcome, sr.Error = cleanupshardwalk.OutcomeFailed, herr.Error()
		if ctx.Err() != nil {
			outcome = cleanupshardwalk.OutcomeStopped
		}
	}
	sr.Outcome = string(outcome)
	if err := w.Update().SetFinishedAt(fin).SetOutcome(outcome).SetEntries(int64(len(left))).SetError(sr.Error).
		Exec(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	rep.Shards = append(rep.Shards, sr)
	if herr != nil {
		return herr
	}
	if err := s.renew(ctx, held, s.leaseTTL); err != nil {
		return fmt.Errorf("cleanup: inventory pass lease: %w", err)
	}
	w.Outcome = outcome
	if cands, err = s.observedByWalks(ctx, asset, cands); err != nil {
		return err
	}
	return s.confirmWalks(ctx, rep, []walked{{walk: w, cands: cands, idx: len(rep.Shards) - 1}}, &refSet{}, opt)
}

// leftoverCandidates turns known leftovers into candidates. A leftover whose size the inventory
// does not know (a manifest list or metadata file) is looked up by key, so the executor's size
// check has the true size; one that is gone is dropped. The others are dated by the commit that
// staged them: the file was written before that commit started.
func (s *Service) leftoverCandidates(ctx context.Context, live *tables.Live, left []warehouse.Leftover, rep *Report) ([]candidate, int64, error) {
	var heads int64
	cands := make([]candidate, 0, len(left))
	for _, l := range left {
		key, _ := normalize(l.Path)
		c := candidate{key: key, size: l.Size, modTime: l.StagedAt.UTC().Truncate(time.Microsecond)}
		if l.Size == 0 {
			if err := s.wait(ctx, s.heads); err != nil {
				return nil, heads, err
			}
			heads++
			info, err := stat(live.IO, l.Path)
			if errors.Is(err, fs.ErrNotExist) {
				rep.LeftoversGone++
				continue
			}
			if err != nil {
				return nil, heads, fmt.Errorf("cleanup: look up staged file %s: %w", l.Path, err)
			}
			c.size, c.modTime = info.Size(), info.ModTime().UTC().Truncate(time.Microsecond)
		}
		cands = append(cands, c)
	}
	return cands, heads, nil
}

// settleKnown takes out of a served table's walk candidates the leftovers its inventory knows:
// inventory passes observe and confirm those (one observation of a file, not two). What is left
// is what nobody recorded, which only a walk finds; the report counts both.
func (s *Service) settleKnown(ctx context.Context, rep *Report, complete []walked) error {
	t, err := s.tables.Get(ctx, rep.AssetID)
	if err != nil || t.Warehouse == "" {
		return err
	}
	left, _, err := s.leftovers(ctx, rep.AssetID)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(left))
	for _, l := range left {
		k, _ := normalize(l.Path)
		known[k] = true
	}
	rep.Unrecorded = new(int64)
	for i := range complete {
		cw := &complete[i]
		cw.cands = slices.DeleteFunc(cw.cands, func(c candidate) bool {
			if known[c.key] {
				rep.SettledByInventory++
				return true
			}
			*rep.Unrecorded++
			return false
		})
	}
	return nil
}

// observedByWalks drops the candidates a walk already observes (seen before the inventory knew
// them as leftovers): their walk observations confirm them.
func (s *Service) observedByWalks(ctx context.Context, asset uuid.UUID, cands []candidate) ([]candidate, error) {
	keys := make([]string, len(cands))
	for i, c := range cands {
		keys[i] = c.key
	}
	walked := map[string]bool{}
	for chunk := range slices.Chunk(keys, 500) {
		paths, err := s.db.CleanupObservation.Query().Where(cleanupobservation.AssetID(asset), cleanupobservation.PathIn(chunk...),
			cleanupobservation.ShardNEQ(inventoryShard)).Select(cleanupobservation.FieldPath).Strings(ctx)
		if err != nil {
			return nil, fmt.Errorf("cleanup: read the walks' observations: %w", err)
		}
		for _, p := range paths {
			walked[p] = true
		}
	}
	return slices.DeleteFunc(cands, func(c candidate) bool { return walked[c.key] }), nil
}

// notDeleted drops the leftovers an executed orphan_files proposal of the table deleted or found
// gone. Proposal files keep the path as listed, and the inventory as the commit wrote it: both
// are compared in their normalised form.
func (s *Service) notDeleted(ctx context.Context, asset uuid.UUID, left []warehouse.Leftover, rep *Report) ([]warehouse.Leftover, error) {
	ids, err := s.db.Proposal.Query().Where(proposal.AssetID(asset), proposal.KindEQ(proposal.KindOrphanFiles)).IDs(ctx)
	if err != nil || len(ids) == 0 {
		return left, err
	}
	done := map[string]bool{}
	for chunk := range slices.Chunk(ids, 500) {
		paths, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalIDIn(chunk...),
			proposalfile.StateIn(proposalfile.StateDeleted, proposalfile.StateGone)).Select(proposalfile.FieldPath).Strings(ctx)
		if err != nil {
			return nil, fmt.Errorf("cleanup: read the files deleted before: %w", err)
		}
		for _, p := range paths {
			k, _ := normalize(p)
			done[k] = true
		}
	}
	return slices.DeleteFunc(left, func(l warehouse.Leftover) bool {
		k, _ := normalize(l.Path)
		if done[k] {
			rep.LeftoversGone++
			return true
		}
		return false
	}), nil
}
