package warehouse

// Step 2 of a commit: where its files may be. A new or moved table's location must be inside the
// warehouse and overlap no live table's; every path the commit names must lie on the table's
// own ground; the new snapshots' files are read for the inventory; a new table gets its asset.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/tables"
)

// prepare checks locations, names the new metadata files, reads what the new snapshots added
// and removed, and finds or creates the assets of new tables.
func (s *Service) prepare(ctx context.Context, w tables.Warehouse, plans []*plan) error {
	for _, p := range plans {
		if p.noop {
			continue
		}
		if p.row == nil {
			if err := nameClash(ctx, s.db, w.Name, p.ident, "table"); err != nil {
				return err
			}
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
		done := phase(ctx, "read-manifests")
		err = s.readAdded(ctx, w, p)
		done()
		if err != nil {
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

// checkLocation refuses a location outside the warehouse or overlapping a live table's (other
// than self): two tables under one location is how orphan cleanup deletes live files.
func (s *Service) checkLocation(ctx context.Context, db *ent.Client, w tables.Warehouse, loc string, self uuid.UUID) error {
	if err := tables.CheckLocation(loc); err != nil {
		return invalid("location", "location %v", err)
	}
	if !tables.UnderDir(loc, w.Location) {
		return invalid("location", "location %s is not under warehouse %s's location %s", loc, w.Name, w.Location)
	}
	// An unregistered table's files stay where they are, maybe served by another catalog now:
	// its location stays taken, so no table here ever walks (and proposes) its files.
	var unregistered []uuid.UUID
	err := db.IcebergCommit.Query().Where(icebergcommit.Kind(kindUnregister)).Unique(true).Select(icebergcommit.FieldAssetID).Scan(ctx, &unregistered)
	if err != nil {
		return fmt.Errorf("warehouse: read unregistered tables: %w", err)
	}
	rows, err := db.IcebergTable.Query().Where(icebergtable.Or(icebergtable.GoneAtIsNil(), icebergtable.IDIn(unregistered...))).Select(icebergtable.FieldID, icebergtable.FieldLocation, icebergtable.FieldIdentifier, icebergtable.FieldGoneAt).All(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: read table locations: %w", err)
	}
	overlaps := tables.OverlapsWith(loc)
	for _, r := range rows {
		if r.ID == self || !overlaps(r.Location) {
			continue
		}
		if r.GoneAt != nil {
			return serveErr(ErrAlreadyExists, "location %s overlaps the location %s of table %s (asset %s), unregistered: its files stay there and may be another catalog's now; use another location or leave it empty for a unique one", loc, r.Location, r.Identifier, r.ID)
		}
		return serveErr(ErrAlreadyExists, "location %s overlaps the location %s of live table %s (asset %s): tables must not share files; use another location or leave it empty for a unique one", loc, r.Location, r.Identifier, r.ID)
	}
	return viewDirClash(ctx, db, w.Name, loc)
}

// defaultLocation is where a new table goes by the warehouse's layout: by default a location no
// other table can have (the table-uuid is in it); with the name layout, its name's directory
// (a live table there still refuses the create: locations never overlap).
func (s *Service) defaultLocation(w tables.Warehouse, id TableIdent, tuuid uuid.UUID) string {
	parts := []string{w.Location}
	parts = append(parts, id.Namespace...)
	if w.Layout == tables.LayoutName {
		return strings.Join(parts, "/") + "/" + id.Name
	}
	return strings.Join(parts, "/") + "/" + id.Name + "-" + strings.ReplaceAll(tuuid.String(), "-", "")
}

// dataPathProps are the table properties that say where a writer puts the table's files.
var dataPathProps = []string{"write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"}

// checkOwnFiles refuses a commit whose write paths or new statistics files are off the table's
// ground (its manifest lists, manifests and data files are checked as they are read).
func checkOwnFiles(p *plan) error {
	props := p.updated.Properties()
	for _, k := range dataPathProps {
		v, ok := props[k]
		if !ok {
			continue
		}
		if err := p.ground.Check(strings.TrimRight(v, "/"), false); err != nil {
			return invalid("properties", "table %s: %s = %v; point it under the table's location %s, or remove it", p.ident, k, err, p.updated.Location())
		}
	}
	known := map[string]bool{}
	if p.base != nil {
		for st := range p.base.Statistics() {
			known[st.StatisticsPath] = true
		}
		for st := range p.base.PartitionStatistics() {
			known[st.StatisticsPath] = true
		}
	}
	var paths []string
	for st := range p.updated.Statistics() {
		paths = append(paths, st.StatisticsPath)
	}
	for st := range p.updated.PartitionStatistics() {
		paths = append(paths, st.StatisticsPath)
	}
	for _, sp := range paths {
		if known[sp] {
			continue
		}
		if err := p.ground.Check(sp, false); err != nil {
			return invalid("updates", "table %s: statistics file %v; write statistics under the table's location %s", p.ident, err, p.updated.Location())
		}
	}
	return nil
}

// servedAsset finds or creates the asset for a table about to be served: the one bound to its
// table-uuid, else a live asset of the same name with no table (adopted: its table-uuid is bound
// to it now, and unbound again if the commit fails), else a new one.
func (s *Service) servedAsset(ctx context.Context, w tables.Warehouse, id TableIdent, meta table.Metadata) (asset uuid.UUID, created, adopted bool, err error) {
	tuuid := meta.TableUUID().String()
	ref, ok, err := s.cat.LookupExternal(ctx, catalog.SystemIcebergTable, tuuid)
	if err != nil {
		return uuid.Nil, false, false, err
	}
	if ok {
		a, err := s.cat.Get(ctx, ref.ID)
		if err != nil {
			return uuid.Nil, false, false, err
		}
		if a.Status == catalog.StatusDeleted {
			if _, err := s.cat.Restore(ctx, a.ID, catalog.AnyVersion); err != nil && !errors.Is(err, catalog.ErrNameTaken) {
				return uuid.Nil, false, false, err
			}
		}
		if a.Namespace != w.Namespace || a.Name != id.String() {
			if _, err := s.cat.Rename(ctx, a.ID, catalog.AnyVersion, w.Namespace, id.String()); err != nil {
				return uuid.Nil, false, false, err
			}
		}
		return a.ID, false, false, nil
	}
	aid, err := s.tables.Adoptable(ctx, w.Namespace, id.String())
	if err != nil {
		return uuid.Nil, false, false, err
	}
	uuidID := catalog.ExternalIDInput{System: catalog.SystemIcebergTable, Value: tuuid}
	if aid != uuid.Nil {
		// Only if nobody bound it meanwhile: racing creates of one name adopt it once.
		if _, err := s.cat.BindOnlyExternalID(ctx, aid, uuidID); err != nil {
			if errors.Is(err, catalog.ErrConflict) {
				return uuid.Nil, false, false, serveErr(ErrAlreadyExists, "table %s is being created by another request (asset %s was adopted by it)", id, aid)
			}
			return uuid.Nil, false, false, err
		}
		return aid, false, true, nil
	}
	res, err := s.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: w.Namespace, Name: id.String(), ExternalIDs: []catalog.ExternalIDInput{uuidID}})
	if err != nil {
		return uuid.Nil, false, false, err
	}
	return res.Asset.ID, true, false, nil
}
