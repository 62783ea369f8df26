package cleanup

// Purge proposals: a served table dropped with purgeRequested asks for its files to go. The drop
// already removed the metadata pointer (the metadata step); the bot proposes exactly which files
// go, found from what Tidemark recorded (the write-path inventory and the table's last metadata,
// read by key: no listing), and a person approves them like every other deletion.

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
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
)

// PurgeEvidence is the drop a purge proposal carries out, and where its file list came from.
type PurgeEvidence struct {
	DropCommit uuid.UUID `json:"drop_commit"` // the drop's commit record: one proposal per purge
	DroppedBy  string    `json:"dropped_by"`
	DroppedAt  time.Time `json:"dropped_at"`
	Warehouse  string    `json:"warehouse"`
	Table      string    `json:"table"` // its name in the warehouse when dropped
	// FilesDueAt is the end of the retire grace after the drop: no file is deleted before.
	FilesDueAt time.Time `json:"files_due_at"`
	// Where the list came from: files the inventory recorded, files the last metadata
	// references (a key may be both), and the manifests and manifest lists read to find them.
	FromInventory int64 `json:"from_inventory"`
	FromMetadata  int64 `json:"from_metadata"`
	MetadataRead  int   `json:"manifests_read"`
	// LastMetadataGone: the last metadata file was gone already; the inventory alone listed.
	LastMetadataGone bool `json:"last_metadata_gone,omitempty"`
	// Left out of the list: files another table references, files outside the table's
	// location (never deleted), and files already gone.
	KeptReferenced int64 `json:"kept_referenced"`
	KeptOutside    int64 `json:"kept_outside"`
	AlreadyGone    int64 `json:"already_gone"`
	// SharedWith are the other known tables whose location overlaps the dropped one's.
	SharedWith []uuid.UUID `json:"shared_with,omitempty"`
}

// proposePurges opens a purge proposal for every drop with purgeRequested that has none, and
// re-evaluates the open ones. Derived from the recorded drops each round, so a crash right after
// a drop still leads to its proposal, and a drop leads to one proposal however often this runs.
func (s *Service) proposePurges(ctx context.Context, rep *ProposeReport) error {
	if s.served == nil {
		return nil
	}
	// Within a replica one pass at a time (the lease below is per holder, so it would let this
	// replica's round and an immediate trigger both open one); across replicas, the lease.
	s.purging.Lock()
	defer s.purging.Unlock()
	for after := uuid.Nil; ; {
		reqs, more, err := s.served.PurgeRequests(ctx, after, 200)
		if err != nil {
			return err
		}
		for _, r := range reqs {
			after = r.DropID
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.proposePurge(ctx, r, rep); err != nil {
				return fmt.Errorf("cleanup: purge proposal for the drop %s of asset %s: %w", r.DropID, r.AssetID, err)
			}
		}
		if !more {
			return nil
		}
	}
}

// ProposePurges runs the purge part of a proposer round now: an immediate trigger after a drop
// with purgeRequested (the round finds the drop anyway, so a crash before this costs nothing).
func (s *Service) ProposePurges(ctx context.Context) (ProposeReport, error) {
	var rep ProposeReport
	err := s.proposePurges(catalog.WithActor(ctx, BotActor), &rep)
	return rep, err
}

// purgeProposals are the asset's purge proposals of one drop, newest first.
func (s *Service) purgeProposals(ctx context.Context, asset, drop uuid.UUID) ([]*ent.Proposal, error) {
	all, err := s.db.Proposal.Query().Where(proposal.AssetID(asset), proposal.KindEQ(proposal.KindPurge)).Order(ent.Desc(proposal.FieldID)).All(ctx)
	if err != nil {
		return nil, err
	}
	var out []*ent.Proposal
	for _, p := range all {
		var ev Evidence
		if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
			return nil, fmt.Errorf("cleanup: proposal %s: evidence: %w", p.ID, err)
		}
		if ev.Purge != nil && ev.Purge.DropCommit == drop {
			out = append(out, p)
		}
	}
	return out, nil
}

// proposePurge handles one drop with purgeRequested: it keeps or withdraws its open proposal,
// and opens one when it has none. A purge is proposed once: a proposal rejected, withdrawn,
// expired, stopped, failed or executed ends it; only a cancelled approval is proposed again
// (as every kind is), since the request still stands.
func (s *Service) proposePurge(ctx context.Context, r warehouse.PurgeRequest, rep *ProposeReport) error {
	ps, err := s.purgeProposals(ctx, r.AssetID, r.DropID)
	if err != nil {
		return err
	}
	if len(ps) > 0 && ps[0].State != proposal.StateCancelled {
		if ps[0].State != proposal.StateOpen {
			return nil // decided: the executor re-verifies before every batch
		}
		why, err := s.purgeNoLonger(ctx, r)
		if err != nil {
			return err
		}
		if why == "" {
			rep.Kept++
			return nil
		}
		if err := s.close(ctx, ps[0], proposal.StateWithdrawn, why); err != nil {
			return err
		}
		rep.Withdrawn++
		return nil
	}
	if why, err := s.purgeNoLonger(ctx, r); err != nil || why != "" {
		return err
	}
	// One proposer at a time per drop across replicas; then look again under the lease.
	held, err := s.claim(ctx, r.AssetID, "purge:"+r.DropID.String(), s.leaseTTL)
	if err != nil || held == nil {
		return err
	}
	defer s.release(ctx, held)
	again, err := s.purgeProposals(ctx, r.AssetID, r.DropID)
	if err != nil {
		return err
	}
	if len(again) > len(ps) {
		return nil // another worker opened it meanwhile
	}
	t, err := s.tables.Get(ctx, r.AssetID)
	if err != nil {
		return err
	}
	files, pe, err := s.purgeFiles(ctx, t, r)
	if err != nil {
		// Without its list nobody could review what it deletes: not proposed this round.
		s.log.Warn("cleanup: the files of a purged table could not be listed; not proposed this round", "asset_id", r.AssetID, "drop", r.DropID, "err", err)
		return nil
	}
	if len(files) == 0 {
		return nil // nothing of it is left to delete
	}
	ev := Evidence{FileList: true, Files: int64(len(files)), AgeThreshold: DefaultAgeThreshold.String(), Location: t.Location,
		TableUUID: t.TableUUID, MetadataLocation: r.MetadataLocation, Purge: pe}
	for _, f := range files {
		ev.Bytes += f.size
	}
	ev.MonthlyCost = float64(ev.Bytes) / 1e9 * s.prices.StorageGBMonth
	ev.Summary = purgeSummary(ev, pe)
	return s.open(ctx, r.AssetID, proposal.KindPurge, proposal.SeverityHigh, ev, files, rep)
}

func purgeSummary(ev Evidence, pe *PurgeEvidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Table %s (table-uuid %s) was dropped from warehouse %s with purgeRequested by %s at %s; the drop removed its metadata pointer. "+
		"Purging deletes the %d files (%s) listed here, metadata files first, then manifest lists, manifests, and data and delete files, "+
		"each only if right before its deletion it lies under %s, no other table references it, and it is unchanged and older than %s; none before %s (the retire grace after the drop). "+
		"The list comes from what Tidemark recorded, without listing storage: %d files from the write-path inventory, %d referenced by the table's last metadata (%d manifests and manifest lists read).",
		pe.Table, ev.TableUUID, pe.Warehouse, orUnknown(pe.DroppedBy), words.Time(pe.DroppedAt), ev.Files, BytesText(ev.Bytes),
		ev.Location, durationWords(ev.AgeThreshold), words.Time(pe.FilesDueAt), pe.FromInventory, pe.FromMetadata, pe.MetadataRead)
	if pe.LastMetadataGone {
		b.WriteString(" Its last metadata file was gone already: the inventory alone listed them.")
	}
	if pe.KeptReferenced > 0 {
		fmt.Fprintf(&b, " %d of its files are kept: other tables reference them.", pe.KeptReferenced)
	}
	if len(pe.SharedWith) > 0 {
		fmt.Fprintf(&b, " %d other known tables share the location; their files are not listed and are re-read before every batch.", len(pe.SharedWith))
	}
	if pe.KeptOutside > 0 {
		fmt.Fprintf(&b, " %d files it referenced lie outside its location and are never deleted.", pe.KeptOutside)
	}
	fmt.Fprintf(&b, " They cost about $%.2f a month.", ev.MonthlyCost)
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown principal"
	}
	return s
}

// purgeNoLonger says why a drop's purge no longer stands ("" while it does): the table is live
// again (registered again, or being), or its asset was restored.
func (s *Service) purgeNoLonger(ctx context.Context, r warehouse.PurgeRequest) (string, error) {
	if r.Superseded {
		return "the table was registered again after the drop (or is being): its files stay", nil
	}
	t, err := s.tables.Get(ctx, r.AssetID)
	if err != nil {
		return "", err
	}
	if t.GoneAt == nil {
		return "the table is live again: its files stay", nil
	}
	if t.MetadataLocation != r.MetadataLocation {
		return fmt.Sprintf("the table's metadata is now %s, not %s which the drop removed: its files stay", t.MetadataLocation, r.MetadataLocation), nil
	}
	a, err := s.cat.Get(ctx, r.AssetID)
	if err != nil {
		return "", err
	}
	if a.Status != catalog.StatusDeleted {
		return "the asset was restored after the drop: its files stay", nil
	}
	return "", nil
}

// purgeIO opens the storage of a dropped served table (its warehouse's IO properties), without
// reading its metadata: the executor deletes the metadata files first.
func (s *Service) purgeIO(ctx context.Context, t tables.Table) (icebergio.IO, error) {
	for _, w := range s.tables.Warehouses() {
		if w.Name == t.Warehouse {
			return tables.IO(ctx, t.Location, w.Props)
		}
	}
	return nil, fmt.Errorf("cleanup: table %s was served by warehouse %q, which is no longer configured", t.AssetID, t.Warehouse)
}

// Deletion ranks: metadata before what it points to, down to the data.
const (
	rankMetadata = iota // metadata files, the version hint, statistics files
	rankManifestList
	rankManifest
	rankData // data and delete files
)

// purgeFiles lists what purging a dropped served table deletes: every file its write-path
// inventory recorded (added, removed or staged) and every file its last metadata references
// (which covers what it held before Tidemark served it, if it was registered), on its own
// ground, referenced by no other known table, and there now (with the size and modification
// time the approval covers), metadata first.
func (s *Service) purgeFiles(ctx context.Context, t tables.Table, r warehouse.PurgeRequest) ([]journalFile, *PurgeEvidence, error) {
	pe := &PurgeEvidence{DropCommit: r.DropID, DroppedBy: r.Actor, DroppedAt: r.At, Warehouse: r.Warehouse, Table: t.Identifier,
		FilesDueAt: r.At.Add(s.policy.Grace)}
	type candidate struct {
		path string
		rank int
	}
	byKey := map[string]*candidate{}
	add := func(p string, rank int) bool {
		k, _ := normalize(p)
		if c, ok := byKey[k]; ok {
			c.rank = min(c.rank, rank)
			return false
		}
		byKey[k] = &candidate{path: p, rank: rank}
		return true
	}
	for after := uuid.Nil; ; {
		inv, more, err := s.served.Inventory(ctx, t.AssetID, warehouse.InventoryFilter{After: after, Limit: 1000})
		if err != nil {
			return nil, nil, err
		}
		for _, f := range inv {
			after = f.ID
			rank := rankData
			switch f.Kind {
			case "metadata":
				rank = rankMetadata
			case "manifest_list":
				rank = rankManifestList
			case "manifest":
				rank = rankManifest
			}
			if add(f.Path, rank) {
				pe.FromInventory++
			}
		}
		if !more {
			break
		}
	}
	live, err := s.tables.Open(ctx, t.AssetID) // a dropped table loads from its last metadata
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		pe.LastMetadataGone = true
	case err != nil:
		return nil, nil, fmt.Errorf("cleanup: read the dropped table's last metadata: %w", err)
	default:
		if live.Refs.MetadataLocation != r.MetadataLocation {
			return nil, nil, fmt.Errorf("cleanup: the table's metadata is %s, not %s which the drop removed", live.Refs.MetadataLocation, r.MetadataLocation)
		}
		before := live.Refs.Report.ManifestsRead + live.Refs.Report.ManifestListsRead
		refs, err := s.tables.WalkReferences(ctx, live, func(p string, kind tables.RefKind) error {
			rank := rankData
			switch kind {
			case tables.RefMetadata, tables.RefVersionHint, tables.RefStatistics:
				rank = rankMetadata
			case tables.RefManifestList:
				rank = rankManifestList
			case tables.RefManifest:
				rank = rankManifest
			}
			if add(p, rank) {
				pe.FromMetadata++
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("cleanup: read the dropped table's last metadata: %w", err)
		}
		pe.MetadataRead = refs.Report.ManifestsRead + refs.Report.ManifestListsRead - before
	}
	// Every other table there (and every table's references under the location) keeps its files.
	w, err := s.readWorld(ctx, t.AssetID, t.Location, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, st := range w.shared {
		pe.SharedWith = append(pe.SharedWith, st.AssetID)
	}
	fsys, err := s.purgeIO(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	cands := make([]*candidate, 0, len(byKey))
	for _, c := range byKey {
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b *candidate) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.path, b.path)
	})
	var out []journalFile
	for _, c := range cands {
		if tables.Owns(t.Location, c.path) != nil {
			pe.KeptOutside++
			continue // never deleted: off the table's ground
		}
		if err := s.wait(ctx, s.heads); err != nil {
			return nil, nil, err
		}
		info, err := stat(fsys, c.path)
		if errors.Is(err, fs.ErrNotExist) {
			pe.AlreadyGone++
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("cleanup: look up %s: %w", c.path, err)
		}
		if key, pathOnly := normalize(c.path); w.refs.has(key) || w.refs.hasPath(pathOnly) {
			pe.KeptReferenced++
			continue
		}
		out = append(out, journalFile{path: c.path, size: info.Size(), modified: info.ModTime()})
	}
	return out, pe, nil
}
