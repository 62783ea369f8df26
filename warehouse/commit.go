package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/internal/clip"
	"github.com/tidemark/tidemark/tables"
)

// maxReason bounds a commit's stored reason (a requirement's error, a storage error).
const maxReason = 2000

// Commit states.
const (
	statePending   = "pending"
	stateCommitted = "committed"
	stateConflict  = "conflict"
	stateAbandoned = "abandoned"
)

// CommitOptions go with a commit.
type CommitOptions struct {
	// IdempotencyKey makes a retried request return the first request's outcome.
	IdempotencyKey string
	// RequestHash fingerprints the request (method, path, body, principal): a key reused for a
	// request with another fingerprint is refused.
	RequestHash string
	claim       *keyClaim
}

// CommitChange is one table's part of a commit: requirements checked against the current
// metadata, and updates applied to it.
type CommitChange struct {
	Ident        TableIdent
	Requirements []table.Requirement
	Updates      []table.Update
}

// plan is one table's commit, staged: what it read, what it will write.
type plan struct {
	ident   TableIdent
	kind    string // create, commit, register
	row     *ent.IcebergTable
	base    table.Metadata // nil for a create
	updated table.Metadata
	newLoc  string            // the metadata file to write (given for a register: not written)
	adopt   *ent.IcebergTable // a register of a table Tidemark knew: its row becomes served
	files   []inventoryFile   // what the new snapshots added and removed
	assetID uuid.UUID         // for a create or register
	created bool              // the asset was created by this commit (deleted again if it fails)
	adopted bool              // the table-uuid was bound to an existing asset by this commit (unbound if it fails)
	commit  uuid.UUID         // its commit row
	noop    bool              // the updates changed nothing
	ground  *tables.Ground    // where its files may be
	size    int64             // bytes of the metadata file written
}

// self is the asset of the table the plan commits to (nil for a new one).
func (p *plan) self() uuid.UUID {
	switch {
	case p.row != nil:
		return p.row.ID
	case p.adopt != nil:
		return p.adopt.ID
	}
	return uuid.Nil
}

// Commit applies changes to one or several served tables, all or nothing: every table's
// requirements are checked against its current metadata, the new metadata files are written
// (data first, then metadata), and the pointers are swapped in one database transaction that
// expects each table's pointer where the commit read it. A failed requirement or a pointer that
// moved is ErrCommitFailed and changes nothing; ErrCommitUnknown only when the store failed
// while committing the swap.
func (s *Service) Commit(ctx context.Context, wh string, changes []CommitChange, opt CommitOptions) ([]ServedTable, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, invalid("table-changes", "a commit needs at least one table change")
	}
	cl, err := s.claimKey(ctx, wh, opt)
	if err != nil {
		return nil, err
	}
	if cl.replaying() {
		return s.replayCommits(ctx, w, cl.rows)
	}
	defer cl.release(ctx)
	opt.claim = cl
	seen := map[string]bool{}
	plans := make([]*plan, 0, len(changes))
	for _, ch := range changes {
		if err := ch.Ident.valid(); err != nil {
			return nil, err
		}
		if k := tableKey(wh, ch.Ident.Namespace, ch.Ident.Name); seen[k] {
			return nil, invalid("table-changes", "table %s appears twice in one commit: merge its changes", ch.Ident)
		} else {
			seen[k] = true
		}
		p, err := s.stage(ctx, w, ch, opt)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return s.commit(ctx, w, plans, opt)
}

// stage reads one table's current metadata, checks the requirements and applies the updates.
func (s *Service) stage(ctx context.Context, w tables.Warehouse, ch CommitChange, opt CommitOptions) (*plan, error) {
	p := &plan{ident: ch.Ident, kind: "commit"}
	row, err := s.servedRow(ctx, s.db, w.Name, ch.Ident)
	if err != nil && !errors.Is(err, ErrNoSuchTable) {
		return nil, err
	}
	creates := false
	for _, r := range ch.Requirements {
		if r.GetType() == "assert-create" {
			creates = true
		}
	}
	if row == nil && !creates {
		return nil, err
	}
	baseLoc := ""
	if row != nil {
		p.row = row
		baseLoc = row.MetadataLocation
		if p.base, err = s.readMetadata(ctx, w, row.MetadataLocation); err != nil {
			return nil, err
		}
	}
	for _, r := range ch.Requirements {
		if err := r.Validate(p.base); err != nil {
			s.recordConflict(ctx, w, p, ch, err, opt)
			return nil, serveErr(ErrCommitFailed, "table %s: %v; refresh the table and retry", ch.Ident, err)
		}
	}
	base := p.base
	if base == nil {
		p.kind = "create"
		if base, err = table.NewMetadata(iceberg.NewSchema(0), nil, table.UnsortedSortOrder, "", nil); err != nil {
			return nil, err
		}
	}
	if p.updated, err = table.UpdateTableMetadata(base, ch.Updates, baseLoc); err != nil {
		return nil, invalid("updates", "table %s: the updates cannot be applied: %v", ch.Ident, err)
	}
	if p.base != nil && p.updated.Equals(p.base) {
		p.noop = true
	}
	if err := checkMetadataBounds(p.base, p.updated); err != nil {
		return nil, err
	}
	for _, u := range ch.Updates {
		// A table keeps its UUID: the asset, the inventory and the bot's approvals are bound to it.
		if u.Action() == "assign-uuid" && p.base != nil && p.updated.TableUUID() != p.base.TableUUID() {
			return nil, invalid("updates", "table %s: assign-uuid would change the table's UUID from %s; a table keeps its UUID (create a new table instead)", ch.Ident, p.base.TableUUID())
		}
	}
	return p, nil
}

// recordConflict records a rejected commit for the table's commit health, with the files its
// writer staged for it (its snapshots' manifest lists, known leftovers unless a retry commits
// them).
func (s *Service) recordConflict(ctx context.Context, w tables.Warehouse, p *plan, ch CommitChange, cause error, opt CommitOptions) {
	if p.row == nil {
		return
	}
	now := s.clock()
	var snap *int64
	var staged []inventoryFile
	for _, u := range ch.Updates {
		if u.Action() != "add-snapshot" {
			continue
		}
		// iceberg-go keeps the update's type unexported: its JSON names the snapshot.
		var a struct {
			Snapshot *table.Snapshot `json:"snapshot"`
		}
		if b, err := json.Marshal(u); err != nil || json.Unmarshal(b, &a) != nil || a.Snapshot == nil {
			continue
		}
		v := a.Snapshot.SnapshotID
		snap = &v
		if a.Snapshot.ManifestList != "" {
			staged = append(staged, s.rejectedFiles(ctx, w, p, *a.Snapshot)...)
		}
	}
	err := s.tx(ctx, func(tx *ent.Tx) error {
		if err := opt.claim.mark(ctx, tx, p.row.ID); err != nil {
			return err
		}
		c, err := tx.IcebergCommit.Create().SetAssetID(p.row.ID).SetWarehouse(w.Name).SetKind("commit").SetState(stateConflict).
			SetBaseLocation(p.row.MetadataLocation).SetNillableSnapshotID(snap).SetReason(clip.String(cause.Error(), maxReason)).
			SetIdempotencyKey(opt.IdempotencyKey).SetActor(catalog.ActorFrom(ctx)).SetStartedAt(now).SetFinishedAt(now).Save(ctx)
		if err != nil {
			return err
		}
		return s.insertFiles(ctx, tx, p.row.ID, c.ID, staged, now)
	})
	if err == nil {
		opt.claim.recorded()
	}
	if err != nil {
		s.log.Warn("could not record a rejected commit", "asset_id", p.row.ID, "err", err)
	}
}

// commit writes the plans' metadata files and swaps the pointers.
func (s *Service) commit(ctx context.Context, w tables.Warehouse, plans []*plan, opt CommitOptions) ([]ServedTable, error) {
	if err := s.prepare(ctx, w, plans); err != nil {
		s.undoAssets(ctx, plans)
		return nil, err
	}
	now := s.clock()
	var txID *uuid.UUID
	if len(plans) > 1 {
		v := uuid.Must(uuid.NewV7())
		txID = &v
	}
	// Recorded before any file is written: a crash after the write leaves a pending commit
	// naming the file, never an unrecorded one.
	err := s.tx(ctx, func(tx *ent.Tx) error {
		marked := false
		for _, p := range plans {
			if p.noop {
				continue
			}
			if !marked {
				if err := opt.claim.mark(ctx, tx, p.assetOrRow()); err != nil {
					return err
				}
				marked = true
			}
			c, err := tx.IcebergCommit.Create().SetAssetID(p.assetOrRow()).SetWarehouse(w.Name).SetKind(p.kind).SetState(statePending).
				SetBaseLocation(p.baseLocation()).SetNewLocation(p.newLoc).SetNillableSnapshotID(lastSnapshot(p)).
				SetIdempotencyKey(opt.IdempotencyKey).SetNillableTransactionID(txID).SetActor(catalog.ActorFrom(ctx)).SetStartedAt(now).Save(ctx)
			if err != nil {
				return err
			}
			p.commit = c.ID
		}
		return nil
	})
	if err != nil {
		s.undoAssets(ctx, plans)
		var se *ServeError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fmt.Errorf("warehouse: record the commit: %w", err)
	}
	opt.claim.recorded()
	var written []string
	for _, p := range plans {
		if p.noop || p.kind == "register" {
			continue
		}
		if p.size, err = s.writeMetadata(ctx, w, p.updated, p.newLoc); err != nil {
			s.settle(ctx, plans, stateAbandoned, "the metadata file could not be written: "+err.Error())
			s.undoAssets(ctx, plans)
			return nil, serveErr(ErrNotCommitted, "could not write the new metadata file %s: %v; nothing was committed", p.newLoc, err)
		}
		written = append(written, p.newLoc)
	}
	if s.faults.BeforeSwap != nil {
		if err := s.faults.BeforeSwap(ctx, written); err != nil {
			return nil, serveErr(ErrCommitUnknown, "the commit stopped before the swap: %v", err)
		}
	}
	swapErr := s.swap(ctx, w, plans)
	if swapErr != nil {
		var se *ServeError
		if errors.As(swapErr, &se) && errors.Is(se.Kind, ErrCommitUnknown) {
			return nil, swapErr // pending until ResolvePending knows
		}
		state := stateAbandoned
		if errors.Is(swapErr, ErrCommitFailed) || errors.Is(swapErr, ErrAlreadyExists) {
			state = stateConflict
		}
		s.settle(ctx, plans, state, swapErr.Error())
		s.undoAssets(ctx, plans)
		if errors.As(swapErr, &se) {
			return nil, swapErr
		}
		return nil, serveErr(ErrNotCommitted, "the pointer could not be swapped: %v; nothing was committed", swapErr)
	}
	out := make([]ServedTable, len(plans))
	for i, p := range plans {
		loc := p.newLoc
		meta := p.updated
		if p.noop {
			loc, meta = p.row.MetadataLocation, p.base
		}
		s.metaCache.Add(loc, meta, p.size)
		out[i] = ServedTable{AssetID: p.assetOrRow(), Ident: p.ident, MetadataLocation: loc, Metadata: meta, Props: w.Props}
		if !p.noop {
			s.afterCommit(ctx, p)
		}
	}
	return out, nil
}

func (p *plan) assetOrRow() uuid.UUID {
	if p.row != nil {
		return p.row.ID
	}
	return p.assetID
}

func (p *plan) baseLocation() string {
	if p.row != nil {
		return p.row.MetadataLocation
	}
	return ""
}

// lastSnapshot is the newest snapshot a commit adds (to any branch), or nil.
func lastSnapshot(p *plan) *int64 {
	var out *int64
	for _, snap := range p.updated.Snapshots() {
		if p.base == nil || p.base.SnapshotByID(snap.SnapshotID) == nil {
			v := snap.SnapshotID
			out = &v
		}
	}
	return out
}

// prepare checks locations, names the new metadata files, reads what the new snapshots added
// and removed, and finds or creates the assets of new tables.
func (s *Service) prepare(ctx context.Context, w tables.Warehouse, plans []*plan) error {
	for _, p := range plans {
		if p.noop {
			continue
		}
		if p.kind == "create" {
			loc := p.updated.Location()
			if loc == "" {
				loc = s.defaultLocation(w, p.ident, p.updated.TableUUID())
				var err error
				if p.updated, err = table.UpdateTableMetadata(p.updated, []table.Update{table.NewSetLocationUpdate(loc)}, ""); err != nil {
					return err
				}
			}
			if err := s.checkLocation(ctx, s.db, w, loc, uuid.Nil); err != nil {
				return err
			}
		} else if p.kind == "commit" && p.updated.Location() != p.base.Location() {
			if err := s.checkLocation(ctx, s.db, w, p.updated.Location(), p.row.ID); err != nil {
				return err
			}
		}
		g, err := tables.GroundOf(ctx, s.db, p.updated.Location(), p.self())
		if err != nil {
			return invalid("location", "table %s: %v", p.ident, err)
		}
		p.ground = g
		if p.kind != "register" {
			// A register keeps the layout it was written with; what is committed afterwards
			// names only the table's own files.
			if err := checkOwnFiles(p); err != nil {
				return err
			}
		}
		if p.newLoc == "" {
			loc, err := s.metadataFileLocation(p)
			if err != nil {
				return err
			}
			// write.metadata.path may name any place: Tidemark writes only on the table's ground.
			if err := g.Check(loc, false); err != nil || !tables.UnderDir(loc, w.Location) {
				return invalid("properties", "table %s: its metadata would be written to %s, which is not under the table's location %s inside warehouse %s; unset write.metadata.path or point it under the table's location", p.ident, loc, p.updated.Location(), w.Name)
			}
			p.newLoc = loc
		}
		if err := s.readAdded(ctx, w, p); err != nil {
			if errors.Is(err, tables.ErrOutsideRoots) || errors.Is(err, tables.ErrNotOwnGround) || errors.Is(err, tables.ErrUnclearPath) {
				return invalid("updates", "table %s: %v: a commit names only its own table's files, under the table's location", p.ident, err)
			}
			return serveErr(ErrNotCommitted, "table %s: %v; nothing was committed (a pointer is never swapped to a snapshot whose files cannot be read)", p.ident, err)
		}
		if p.row == nil {
			if p.adopt != nil {
				p.assetID = p.adopt.ID
			}
			id, created, adopted, err := s.servedAsset(ctx, w, p.ident, p.updated)
			if err != nil {
				return err
			}
			p.adopted = adopted
			if p.adopt != nil && id != p.adopt.ID {
				return serveErr(ErrAlreadyExists, "table-uuid %s is bound to asset %s but its table row to %s", p.updated.TableUUID(), id, p.adopt.ID)
			}
			p.assetID, p.created = id, created
		}
	}
	return nil
}

// metadataFileLocation names the next metadata file: <location>/metadata/<version>-<uuid>.metadata.json.
func (s *Service) metadataFileLocation(p *plan) (string, error) {
	version := 0
	if p.row != nil {
		base := path.Base(p.row.MetadataLocation)
		if v, err := strconv.Atoi(strings.SplitN(base, "-", 2)[0]); err == nil && v >= 0 {
			version = v + 1
		} else {
			version = 1
			for range p.base.PreviousFiles() {
				version++
			}
		}
	}
	lp, err := table.LoadLocationProvider(p.updated.Location(), p.updated.Properties())
	if err != nil {
		return "", invalid("location", "table %s: %v", p.ident, err)
	}
	return lp.NewTableMetadataFileLocation(version)
}

func (s *Service) writeMetadata(ctx context.Context, w tables.Warehouse, meta table.Metadata, loc string) (int64, error) {
	fsys, err := tables.IO(ctx, loc, w.Props)
	if err != nil {
		return 0, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return 0, fmt.Errorf("warehouse: the file IO for %s cannot write", loc)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return 0, err
	}
	return int64(len(b)), wfs.WriteFile(loc, b)
}

// swap moves every pointer in one transaction, each guarded by the location its commit read.
func (s *Service) swap(ctx context.Context, w tables.Warehouse, plans []*plan) error {
	now := s.clock()
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: begin the swap: %w", err)
	}
	if err := s.swapIn(ctx, tx, w, plans, now); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		// The commit may or may not have reached the store: read the pointers back.
		return s.outcome(ctx, plans, err)
	}
	return nil
}

func (s *Service) swapIn(ctx context.Context, tx *ent.Tx, w tables.Warehouse, plans []*plan, now time.Time) error {
	locked := false
	for _, p := range plans {
		if p.noop {
			continue
		}
		if p.row == nil || p.base == nil || p.updated.Location() != p.base.Location() {
			// Checked again inside the swap, serialised with every other swap that places a
			// table: two racing creates or set-locations cannot both take one location.
			if !locked {
				if err := lockLocations(ctx, tx); err != nil {
					return err
				}
				locked = true
			}
			if err := s.checkLocation(ctx, tx.Client(), w, p.updated.Location(), p.self()); err != nil {
				return err
			}
		}
		var cur *int64
		if c := p.updated.CurrentSnapshot(); c != nil {
			v := c.SnapshotID
			cur = &v
		}
		last := time.UnixMilli(p.updated.LastUpdatedMillis()).UTC()
		key := tableKey(w.Name, p.ident.Namespace, p.ident.Name)
		switch {
		case p.row != nil:
			u := tx.IcebergTable.Update().Where(icebergtable.ID(p.row.ID), icebergtable.MetadataLocation(p.row.MetadataLocation), icebergtable.RestKey(key)).
				SetMetadataLocation(p.newLoc).SetLocation(p.updated.Location()).SetFormatVersion(p.updated.Version()).
				SetNillableCurrentSnapshotID(cur).SetLastUpdatedAt(last).SetUpdatedAt(now)
			if cur == nil {
				u.ClearCurrentSnapshotID()
			}
			n, err := u.Save(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				return serveErr(ErrCommitFailed, "table %s changed since this commit read it at %s; refresh the table and retry", p.ident, p.row.MetadataLocation)
			}
		case p.adopt != nil:
			n, err := tx.IcebergTable.Update().Where(icebergtable.ID(p.adopt.ID), icebergtable.Or(icebergtable.GoneAtNotNil(), icebergtable.And(icebergtable.Connection(""), icebergtable.Warehouse("")))).
				SetWarehouse(w.Name).SetConnection("").SetIdentifier(p.ident.String()).SetRestKey(key).SetRestNamespace(nsKey(w.Name, p.ident.Namespace)).
				SetMetadataLocation(p.newLoc).SetLocation(p.updated.Location()).SetFormatVersion(p.updated.Version()).
				SetNillableCurrentSnapshotID(cur).SetLastUpdatedAt(last).ClearGoneAt().ClearMissingAt().SetUpdatedAt(now).Save(ctx)
			if ent.IsConstraintError(err) {
				return serveErr(ErrAlreadyExists, "table %s already exists in warehouse %s", p.ident, w.Name)
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return serveErr(ErrAlreadyExists, "table-uuid %s became live elsewhere meanwhile", p.updated.TableUUID())
			}
		default:
			err := tx.IcebergTable.Create().SetID(p.assetID).SetWarehouse(w.Name).SetIdentifier(p.ident.String()).SetRestKey(key).
				SetRestNamespace(nsKey(w.Name, p.ident.Namespace)).SetTableUUID(p.updated.TableUUID().String()).SetLocation(p.updated.Location()).
				SetMetadataLocation(p.newLoc).SetFormatVersion(p.updated.Version()).SetNillableCurrentSnapshotID(cur).
				SetLastUpdatedAt(last).SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
			if ent.IsConstraintError(err) {
				if p.kind == "create" && p.row == nil {
					return serveErr(ErrAlreadyExists, "table %s already exists in warehouse %s (or its table-uuid is known)", p.ident, w.Name)
				}
				return serveErr(ErrCommitFailed, "table %s was created meanwhile", p.ident)
			}
			if err != nil {
				return err
			}
		}
		var added, removed, bytes int64
		for _, f := range p.files {
			switch f.change {
			case changeAdded:
				if f.kind == kindData || f.kind == kindDelete {
					added++
					bytes += f.size
				}
			case changeRemoved:
				if f.kind == kindData || f.kind == kindDelete {
					removed++
				}
			}
		}
		// Only a commit still pending may swap: one settled as abandoned meanwhile has a file
		// the cleanup bot may already treat as a leftover.
		n, err := tx.IcebergCommit.Update().Where(icebergcommit.ID(p.commit), icebergcommit.State(statePending)).SetState(stateCommitted).
			SetFinishedAt(now).SetAddedFiles(added).SetRemovedFiles(removed).SetAddedBytes(bytes).Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return serveErr(ErrNotCommitted, "table %s: the commit was settled as abandoned before its swap; nothing was committed", p.ident)
		}
		files := append([]inventoryFile{{path: p.newLoc, kind: kindMetadata, change: changeAdded}}, p.files...)
		if p.kind == "register" {
			files = files[:1]
		}
		if err := s.insertFiles(ctx, tx, p.assetOrRow(), p.commit, files, now); err != nil {
			return err
		}
	}
	return nil
}

// outcome reads the pointers back after a failed transaction commit: all swapped is success,
// none swapped is known not committed, anything else (or no answer) is unknown.
func (s *Service) outcome(ctx context.Context, plans []*plan, cause error) error {
	ctx = context.WithoutCancel(ctx)
	swapped, checked := 0, 0
	for _, p := range plans {
		if p.noop {
			continue
		}
		checked++
		row, err := s.db.IcebergTable.Query().Where(icebergtable.ID(p.assetOrRow())).Select(icebergtable.FieldMetadataLocation).Only(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return serveErr(ErrCommitUnknown, "the store failed while committing (%v) and could not be read back (%v): the outcome is unknown; do not clean up", cause, err)
		}
		if row != nil && row.MetadataLocation == p.newLoc {
			swapped++
		}
	}
	switch swapped {
	case checked:
		return nil
	case 0:
		return fmt.Errorf("warehouse: commit the swap: %w", cause)
	}
	return serveErr(ErrCommitUnknown, "the store failed while committing (%v): the outcome is unknown; do not clean up", cause)
}

// rejectedFiles is what a rejected commit's writer staged for one snapshot, read while the
// files are fresh (see stagedFiles); the manifest list alone when the table's location is unknown.
func (s *Service) rejectedFiles(ctx context.Context, w tables.Warehouse, p *plan, snap table.Snapshot) []inventoryFile {
	list := []inventoryFile{{snapshot: snap.SnapshotID, path: snap.ManifestList, kind: kindManifestList, change: changeStaged}}
	if p.base == nil {
		return list
	}
	g, err := tables.GroundOf(ctx, s.db, p.base.Location(), p.row.ID)
	if err != nil || g.Check(snap.ManifestList, false) != nil {
		return nil // not this table's file: never its leftover
	}
	fsys, err := s.tables.WarehouseIO(ctx, w, p.base.Location())
	if err != nil {
		return list
	}
	return stagedFiles(fsys, snap, g)
}

// settle marks the plans' pending commits with a final state.
func (s *Service) settle(ctx context.Context, plans []*plan, state, reason string) {
	ctx = context.WithoutCancel(ctx)
	now := s.clock()
	for _, p := range plans {
		if p.commit == uuid.Nil {
			continue
		}
		err := s.tx(ctx, func(tx *ent.Tx) error {
			n, err := tx.IcebergCommit.Update().Where(icebergcommit.ID(p.commit), icebergcommit.State(statePending)).SetState(state).
				SetReason(clip.String(reason, maxReason)).SetFinishedAt(now).Save(ctx)
			if err != nil || n == 0 {
				return err
			}
			// What the rejected commit staged: its metadata file and its snapshots' files.
			staged := []inventoryFile{}
			if p.kind != "register" {
				staged = append(staged, inventoryFile{path: p.newLoc, kind: kindMetadata, change: changeStaged})
			}
			for _, f := range p.files {
				if f.change == changeAdded {
					f.change = changeStaged
					staged = append(staged, f)
				}
			}
			return s.insertFiles(ctx, tx, p.assetOrRow(), p.commit, staged, now)
		})
		if err != nil {
			s.log.Warn("could not settle a commit", "commit_id", p.commit, "state", state, "err", err)
		}
	}
}

// undoAssets marks deleted the assets a failed commit created.
func (s *Service) undoAssets(ctx context.Context, plans []*plan) {
	for _, p := range plans {
		if p.created {
			if _, err := s.cat.Delete(context.WithoutCancel(ctx), p.assetID, catalog.AnyVersion); err != nil {
				s.log.Warn("could not delete the asset of a failed create", "asset_id", p.assetID, "err", err)
			}
		}
		if p.adopted {
			in := catalog.ExternalIDInput{System: catalog.SystemIcebergTable, Value: p.updated.TableUUID().String()}
			if err := s.cat.UnbindExternalID(context.WithoutCancel(ctx), p.assetID, in); err != nil {
				s.log.Warn("could not unbind the table-uuid of a failed create from the asset it adopted", "asset_id", p.assetID, "err", err)
			}
		}
	}
}

// afterCommit records the new schema's columns in the catalog (best effort: the commit stands).
func (s *Service) afterCommit(ctx context.Context, p *plan) {
	var prev *int
	if p.row != nil {
		prev = p.row.ColumnsSchemaID
	}
	id := p.assetOrRow()
	s.markStale(id)
	recorded, err := s.tables.SyncColumns(ctx, id, p.updated, prev)
	if err != nil {
		s.log.Warn("could not record the committed schema's columns", "asset_id", id, "err", err)
		return
	}
	if recorded != nil && (prev == nil || *prev != *recorded) {
		if err := s.db.IcebergTable.UpdateOneID(id).SetColumnsSchemaID(*recorded).Exec(ctx); err != nil {
			s.log.Warn("could not record the committed schema's ID", "asset_id", id, "err", err)
		}
	}
}

// lockLocations serialises the swaps that place a table until their transaction ends: a
// PostgreSQL advisory lock (SQLite's transactions take the write lock at BEGIN already).
func lockLocations(ctx context.Context, tx *ent.Tx) error {
	var d string
	if _, err := tx.IcebergTable.Query().Where(func(s *entsql.Selector) { d = s.Dialect(); s.Where(entsql.False()) }).Exist(ctx); err != nil {
		return err
	}
	if d != dialect.Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", locationLockKey)
	return err
}

// locationLockKey is the advisory lock of table placement ("tidemark locations").
const locationLockKey int64 = 0x746d6c6f63
