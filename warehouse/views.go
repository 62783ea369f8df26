package warehouse

// Served views: an Iceberg view's metadata file is written to the warehouse first, then its
// pointer moves in Tidemark's store by compare-and-swap, as a table's does. A view is an asset of
// kind view bound to its view-uuid; it shares the namespace's names with the tables (one name,
// one table or one view: the catalog's current-name index is the guard, the checks here say it
// clearly).
//
// A view's metadata files go under <location>/metadata, unless that directory overlaps a live
// table's location: a table's walk would find them there and, knowing only table metadata, take
// them for the table's orphans. Then they go under the view's default location instead, and the
// view's stated location is kept as given (engines read it, nobody writes there). A table is in
// turn refused a location overlapping a live view's metadata directory (checkLocation).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/ent/icebergview"
	"github.com/tidemark/tidemark/tables"
)

// SystemIcebergView binds an Iceberg view's view-uuid, which survives renames.
const SystemIcebergView = "iceberg-view-uuid"

// ErrNoSuchView is a view that is not served under that name.
var ErrNoSuchView = fmt.Errorf("warehouse: no such view: %w", catalog.ErrNotFound)

// ServedView is a view served over the Iceberg REST protocol at its current pointer.
type ServedView struct {
	AssetID          uuid.UUID
	Ident            TableIdent
	MetadataLocation string
	Metadata         view.Metadata
}

func (s *Service) viewRow(ctx context.Context, db *ent.Client, wh string, id TableIdent) (*ent.IcebergView, error) {
	if err := id.valid(); err != nil {
		return nil, err
	}
	row, err := db.IcebergView.Query().Where(icebergview.RestKey(tableKey(wh, id.Namespace, id.Name))).Only(ctx)
	if ent.IsNotFound(err) {
		if _, err := s.namespaceRow(ctx, db, wh, id.Namespace); err != nil {
			return nil, err
		}
		return nil, serveErr(ErrNoSuchView, "view %s does not exist in warehouse %s", id, wh)
	}
	if err != nil {
		return nil, fmt.Errorf("warehouse: read view %s: %w", id, err)
	}
	return row, nil
}

// nameClash refuses a table or view name the other kind holds in the namespace (kind is what is
// being named: "table" or "view").
func nameClash(ctx context.Context, db *ent.Client, wh string, id TableIdent, kind string) error {
	key := tableKey(wh, id.Namespace, id.Name)
	if kind == "table" {
		if ok, err := db.IcebergView.Query().Where(icebergview.RestKey(key)).Exist(ctx); err != nil {
			return fmt.Errorf("warehouse: read views: %w", err)
		} else if ok {
			return serveErr(ErrAlreadyExists, "a view named %s exists in warehouse %s: a table and a view may not share a name in one namespace; pick another name or drop the view", id, wh)
		}
		return nil
	}
	if ok, err := db.IcebergTable.Query().Where(icebergtable.RestKey(key)).Exist(ctx); err != nil {
		return fmt.Errorf("warehouse: read tables: %w", err)
	} else if ok {
		return serveErr(ErrAlreadyExists, "a table named %s exists in warehouse %s: a view and a table may not share a name in one namespace; pick another name or drop the table", id, wh)
	}
	return nil
}

// viewDirClash refuses a table location overlapping a live view's metadata directory.
func viewDirClash(ctx context.Context, db *ent.Client, wh, loc string) error {
	rows, err := db.IcebergView.Query().Where(icebergview.Warehouse(wh), icebergview.GoneAtIsNil()).
		Select(icebergview.FieldID, icebergview.FieldMetadataDir, icebergview.FieldIdentifier).All(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: read view locations: %w", err)
	}
	overlaps := tables.OverlapsWith(loc)
	for _, r := range rows {
		if overlaps(r.MetadataDir) {
			return serveErr(ErrAlreadyExists, "location %s overlaps %s, where view %s (asset %s) keeps its metadata: a table's files and a view's must not share a directory; use another location or leave it empty for a unique one", loc, r.MetadataDir, r.Identifier, r.ID)
		}
	}
	return nil
}

// LoadView returns a served view at its current pointer.
func (s *Service) LoadView(ctx context.Context, wh string, id TableIdent) (ServedView, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedView{}, err
	}
	row, err := s.viewRow(ctx, s.db, wh, id)
	if err != nil {
		return ServedView{}, err
	}
	meta, err := s.readViewMetadata(ctx, w, row.MetadataLocation)
	if err != nil {
		return ServedView{}, err
	}
	return ServedView{AssetID: row.ID, Ident: id, MetadataLocation: row.MetadataLocation, Metadata: meta}, nil
}

// ViewPointer returns a served view's asset ID and metadata location without reading the file.
func (s *Service) ViewPointer(ctx context.Context, wh string, id TableIdent) (uuid.UUID, string, error) {
	if _, err := s.warehouse(wh); err != nil {
		return uuid.Nil, "", err
	}
	row, err := s.viewRow(ctx, s.db, wh, id)
	if err != nil {
		return uuid.Nil, "", err
	}
	return row.ID, row.MetadataLocation, nil
}

// ListViews lists the names of the views in a namespace after a cursor (a name returned as next).
func (s *Service) ListViews(ctx context.Context, wh string, ns []string, after string, limit int) ([]string, string, error) {
	if _, err := s.warehouse(wh); err != nil {
		return nil, "", err
	}
	if _, err := s.namespaceRow(ctx, s.db, wh, ns); err != nil {
		return nil, "", err
	}
	q := s.db.IcebergView.Query().Where(icebergview.RestNamespace(nsKey(wh, ns)))
	if after != "" {
		q.Where(icebergview.RestKeyGT(tableKey(wh, ns, after)))
	}
	var keys []string
	if err := q.Order(ent.Asc(icebergview.FieldRestKey)).Limit(limit+1).Select(icebergview.FieldRestKey).Scan(ctx, &keys); err != nil {
		return nil, "", fmt.Errorf("warehouse: list views: %w", err)
	}
	names, next := namesPage(keys, wh, ns, limit)
	return names, next, nil
}

// CreateViewInput is a view to create in a served warehouse.
type CreateViewInput struct {
	Ident   TableIdent
	Schema  *iceberg.Schema
	Version *view.Version
	// Location, when set, must be under the warehouse; empty gives
	// <warehouse>/<namespace>/<name>-<view-uuid>.
	Location   string
	Properties iceberg.Properties
}

// CreateView creates a view: its first metadata file is written, then its pointer recorded,
// bound to a new asset of kind view (or a view asset lineage created under its name before).
func (s *Service) CreateView(ctx context.Context, wh string, in CreateViewInput) (ServedView, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedView{}, err
	}
	if err := in.Ident.valid(); err != nil {
		return ServedView{}, err
	}
	if in.Schema == nil {
		return ServedView{}, invalid("schema", "a view needs a schema: the columns its query returns")
	}
	if err := checkSchema("schema", in.Schema); err != nil {
		return ServedView{}, err
	}
	if in.Version == nil {
		return ServedView{}, invalid("view-version", "a view needs a view-version with at least one SQL representation")
	}
	if len(in.Version.Representations) == 0 {
		return ServedView{}, invalid("view-version", "view-version.representations is empty: give at least one {\"type\":\"sql\",\"sql\":...,\"dialect\":...}")
	}
	if err := checkProperties("properties", in.Properties); err != nil {
		return ServedView{}, err
	}
	if _, err := s.namespaceRow(ctx, s.db, wh, in.Ident.Namespace); err != nil {
		return ServedView{}, err
	}
	if err := s.viewNameFree(ctx, wh, in.Ident); err != nil {
		return ServedView{}, err
	}
	vuuid := uuid.New()
	loc := strings.TrimRight(in.Location, "/")
	if loc == "" {
		loc = s.defaultLocation(w, in.Ident, vuuid)
	}
	if in.Version.TimestampMS == 0 {
		in.Version.TimestampMS = s.clock().UnixMilli()
	}
	meta, err := view.NewMetadataWithUUID(in.Version, in.Schema, loc, in.Properties, vuuid)
	if err != nil {
		return ServedView{}, invalid("view-version", "the view cannot be created as asked: %v", err)
	}
	return s.placeView(ctx, w, in.Ident, meta, "")
}

// viewNameFree refuses a name a live view or table holds.
func (s *Service) viewNameFree(ctx context.Context, wh string, id TableIdent) error {
	if ok, err := s.db.IcebergView.Query().Where(icebergview.RestKey(tableKey(wh, id.Namespace, id.Name))).Exist(ctx); err != nil {
		return err
	} else if ok {
		return serveErr(ErrAlreadyExists, "view %s already exists in warehouse %s", id, wh)
	}
	return nameClash(ctx, s.db, wh, id, "view")
}

// placeView records a new view's pointer (a create: newLoc "" and the file written first; a
// register: the file at newLoc exists).
func (s *Service) placeView(ctx context.Context, w tables.Warehouse, id TableIdent, meta view.Metadata, newLoc string) (ServedView, error) {
	if live, err := s.db.IcebergView.Query().Where(icebergview.ViewUUID(meta.ViewUUID().String()), icebergview.GoneAtIsNil()).Only(ctx); err == nil {
		return ServedView{}, serveErr(ErrAlreadyExists, "view-uuid %s is already live as view %s (asset %s): drop it there first", meta.ViewUUID(), live.Identifier, live.ID)
	} else if !ent.IsNotFound(err) {
		return ServedView{}, err
	}
	dir, err := s.viewMetadataDir(ctx, s.db, w, id, meta)
	if err != nil {
		return ServedView{}, err
	}
	asset, undo, err := s.viewAsset(ctx, w, id, meta.ViewUUID())
	if err != nil {
		return ServedView{}, err
	}
	if newLoc == "" {
		newLoc = viewFileLocation(dir, 0)
		if err := s.writeViewMetadata(ctx, w, meta, newLoc); err != nil {
			undo()
			return ServedView{}, serveErr(ErrNotCommitted, "could not write the view's metadata file %s: %v; nothing was created", newLoc, err)
		}
	}
	now := s.clock()
	key := tableKey(w.Name, id.Namespace, id.Name)
	err = s.tx(ctx, func(tx *ent.Tx) error {
		if err := lockLocations(ctx, tx); err != nil {
			return err
		}
		if err := nameClash(ctx, tx.Client(), w.Name, id, "view"); err != nil {
			return err
		}
		// A register of a view served before (then dropped) takes its old row back.
		old, err := tx.IcebergView.Query().Where(icebergview.ViewUUID(meta.ViewUUID().String())).Only(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return err
		}
		if old != nil {
			if old.GoneAt == nil {
				return serveErr(ErrAlreadyExists, "view-uuid %s is already live as view %s (asset %s): drop it there first", meta.ViewUUID(), old.Identifier, old.ID)
			}
			return tx.IcebergView.UpdateOne(old).SetRestKey(key).SetRestNamespace(nsKey(w.Name, id.Namespace)).SetIdentifier(id.String()).
				SetLocation(meta.Location()).SetMetadataDir(dir).SetMetadataLocation(newLoc).SetCurrentVersionID(meta.CurrentVersionID()).
				ClearGoneAt().SetUpdatedAt(now).Exec(ctx)
		}
		return tx.IcebergView.Create().SetID(asset).SetWarehouse(w.Name).SetViewUUID(meta.ViewUUID().String()).SetIdentifier(id.String()).
			SetRestKey(key).SetRestNamespace(nsKey(w.Name, id.Namespace)).SetLocation(meta.Location()).SetMetadataDir(dir).
			SetMetadataLocation(newLoc).SetCurrentVersionID(meta.CurrentVersionID()).SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
	})
	if ent.IsConstraintError(err) {
		err = serveErr(ErrAlreadyExists, "view %s was created meanwhile in warehouse %s", id, w.Name)
	}
	if err != nil {
		undo()
		return ServedView{}, err
	}
	s.viewLineage(ctx, w, id, meta)
	return ServedView{AssetID: asset, Ident: id, MetadataLocation: newLoc, Metadata: meta}, nil
}

// viewAsset finds or creates the asset of a view about to be served: the one bound to its
// view-uuid (restored and renamed if need be), else a live view asset of the same name bound to
// no view (lineage named it first), else a new one. undo reverses what it did.
func (s *Service) viewAsset(ctx context.Context, w tables.Warehouse, id TableIdent, vuuid uuid.UUID) (uuid.UUID, func(), error) {
	nothing := func() {}
	bind := catalog.ExternalIDInput{System: SystemIcebergView, Value: vuuid.String()}
	ref, ok, err := s.cat.LookupExternal(ctx, SystemIcebergView, vuuid.String())
	if err != nil {
		return uuid.Nil, nothing, err
	}
	if ok {
		a, err := s.cat.Get(ctx, ref.ID)
		if err != nil {
			return uuid.Nil, nothing, err
		}
		undo := nothing
		if a.Status == catalog.StatusDeleted {
			if _, err := s.cat.Restore(ctx, a.ID, catalog.AnyVersion); err != nil && !errors.Is(err, catalog.ErrNameTaken) {
				return uuid.Nil, nothing, err
			}
			// A register that fails leaves the asset deleted again (under its new name).
			undo = func() {
				if _, err := s.cat.Delete(context.WithoutCancel(ctx), a.ID, catalog.AnyVersion); err != nil {
					s.log.Warn("could not delete again the asset of a failed view register", "asset_id", a.ID, "err", err)
				}
			}
		}
		if a.Namespace != w.Namespace || a.Name != id.String() {
			if _, err := s.cat.Rename(ctx, a.ID, catalog.AnyVersion, w.Namespace, id.String()); err != nil {
				undo()
				return uuid.Nil, nothing, s.nameHeld(ctx, err, w, id)
			}
		}
		return a.ID, undo, nil
	}
	if held, ok, err := s.cat.Lookup(ctx, catalog.SpaceDataset, w.Namespace, id.String()); err != nil {
		return uuid.Nil, nothing, err
	} else if ok && !held.Former && !held.Deleted {
		a, err := s.cat.Get(ctx, held.ID)
		if err != nil {
			return uuid.Nil, nothing, err
		}
		bound := false
		for _, x := range a.ExternalIDs {
			bound = bound || x.System == SystemIcebergView || x.System == catalog.SystemIcebergTable
		}
		if a.Kind == catalog.KindView && !bound {
			if _, err := s.cat.BindOnlyExternalID(ctx, a.ID, bind); err != nil {
				if errors.Is(err, catalog.ErrConflict) {
					return uuid.Nil, nothing, serveErr(ErrAlreadyExists, "view %s is being created by another request", id)
				}
				return uuid.Nil, nothing, err
			}
			return a.ID, func() {
				if err := s.cat.UnbindExternalID(context.WithoutCancel(ctx), a.ID, bind); err != nil {
					s.log.Warn("could not unbind the view-uuid of a failed create", "asset_id", a.ID, "err", err)
				}
			}, nil
		}
	}
	res, err := s.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindView, Namespace: w.Namespace, Name: id.String(), ExternalIDs: []catalog.ExternalIDInput{bind}})
	if err != nil {
		return uuid.Nil, nothing, s.nameHeld(ctx, err, w, id)
	}
	return res.Asset.ID, func() {
		if _, err := s.cat.Delete(context.WithoutCancel(ctx), res.Asset.ID, catalog.AnyVersion); err != nil {
			s.log.Warn("could not delete the asset of a failed view create", "asset_id", res.Asset.ID, "err", err)
		}
	}, nil
}

// nameHeld words the catalog's refusal of a name another asset holds.
func (s *Service) nameHeld(ctx context.Context, err error, w tables.Warehouse, id TableIdent) error {
	if !errors.Is(err, catalog.ErrNameTaken) {
		return err
	}
	if clash := nameClash(ctx, s.db, w.Name, id, "view"); clash != nil {
		return clash
	}
	var ce *catalog.Error
	if errors.As(err, &ce) {
		return serveErr(ErrAlreadyExists, "view %s cannot take its name: %s", id, ce.Message)
	}
	return serveErr(ErrAlreadyExists, "view %s cannot take its name: %v", id, err)
}

// viewMetadataDir is where a view's metadata files go: <location>/metadata, or under its
// default location when that overlaps a live table (see the file's doc).
func (s *Service) viewMetadataDir(ctx context.Context, db *ent.Client, w tables.Warehouse, id TableIdent, meta view.Metadata) (string, error) {
	loc := meta.Location()
	if err := tables.CheckLocation(loc); err != nil {
		return "", invalid("location", "view location %v", err)
	}
	if !tables.UnderDir(loc, w.Location) {
		return "", invalid("location", "view location %s is not under warehouse %s's location %s; leave it empty for a place inside the warehouse", loc, w.Name, w.Location)
	}
	rows, err := db.IcebergTable.Query().Where(icebergtable.GoneAtIsNil()).Select(icebergtable.FieldLocation).All(ctx)
	if err != nil {
		return "", fmt.Errorf("warehouse: read table locations: %w", err)
	}
	free := func(dir string) bool {
		overlaps := tables.OverlapsWith(dir)
		for _, r := range rows {
			if overlaps(r.Location) {
				return false
			}
		}
		return true
	}
	for _, dir := range []string{strings.TrimRight(loc, "/") + "/metadata", s.defaultLocation(w, id, meta.ViewUUID()) + "/metadata"} {
		if free(dir) {
			return dir, nil
		}
	}
	return "", serveErr(ErrAlreadyExists, "view %s: neither %s/metadata nor its default location is free of live tables' files", id, loc)
}

// viewFileLocation names a view's metadata file: <dir>/<version>-<uuid>.metadata.json.
func viewFileLocation(dir string, version int) string {
	return fmt.Sprintf("%s/%05d-%s.metadata.json", dir, version, uuid.New())
}

// nextViewFile names the metadata file after base in dir.
func nextViewFile(dir, base string) string {
	v := 1
	if n, err := strconv.Atoi(strings.SplitN(path.Base(base), "-", 2)[0]); err == nil && n >= 0 {
		v = n + 1
	}
	return viewFileLocation(dir, v)
}

func (s *Service) writeViewMetadata(ctx context.Context, w tables.Warehouse, meta view.Metadata, loc string) error {
	fsys, err := tables.IO(ctx, loc, w.Props)
	if err != nil {
		return err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("warehouse: the file IO for %s cannot write", loc)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	return wfs.WriteFile(loc, b)
}

// readViewMetadata reads and parses a view's metadata file under a warehouse (guarded as a
// table's: only under the warehouse, only regular files, none larger than the limit).
func (s *Service) readViewMetadata(ctx context.Context, w tables.Warehouse, loc string) (view.Metadata, error) {
	fsys, err := s.tables.WarehouseIO(ctx, w, loc)
	if err != nil {
		return nil, fmt.Errorf("warehouse: open %s: %w", loc, err)
	}
	f, err := fsys.Open(loc)
	if err != nil {
		return nil, fmt.Errorf("warehouse: open %s: %w", loc, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, s.limit+1))
	if err != nil {
		return nil, fmt.Errorf("warehouse: read %s: %w", loc, err)
	}
	if int64(len(b)) > s.limit {
		return nil, fmt.Errorf("warehouse: %s: %w", loc, tables.ErrTooLarge)
	}
	m, err := view.ParseMetadata(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("warehouse: parse view metadata %s: %w", loc, err)
	}
	return m, nil
}

// ReplaceView commits requirements and updates to a view: the requirements are checked against
// its current metadata, the updates applied with iceberg-go's view builder, the new metadata
// file written, and the pointer swapped only if it still points where this commit read it
// (ErrCommitFailed otherwise: the writer refreshes and retries).
func (s *Service) ReplaceView(ctx context.Context, wh string, id TableIdent, reqs []view.Requirement, updates []view.Update) (ServedView, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedView{}, err
	}
	row, err := s.viewRow(ctx, s.db, wh, id)
	if err != nil {
		return ServedView{}, err
	}
	base, err := s.readViewMetadata(ctx, w, row.MetadataLocation)
	if err != nil {
		return ServedView{}, err
	}
	for _, r := range reqs {
		if err := r.Validate(base); err != nil {
			return ServedView{}, serveErr(ErrCommitFailed, "view %s: %v; refresh the view and retry", id, err)
		}
	}
	b, err := view.MetadataBuilderFromBase(base)
	if err != nil {
		return ServedView{}, err
	}
	for _, u := range updates {
		if err := u.Apply(b); err != nil {
			return ServedView{}, invalid("updates", "view %s: %s cannot be applied: %v", id, u.Action(), err)
		}
		if u.Action() == view.UpdateAddSchema {
			// The builder keeps the schema it was given: check its bounds as a table's.
			var a struct {
				Schema *iceberg.Schema `json:"schema"`
			}
			if raw, err := json.Marshal(u); err == nil && json.Unmarshal(raw, &a) == nil && a.Schema != nil {
				if err := checkSchema("updates", a.Schema); err != nil {
					return ServedView{}, err
				}
			}
		}
	}
	built, err := b.Build()
	if err != nil {
		return ServedView{}, invalid("updates", "view %s: the updates do not make a valid view: %v", id, err)
	}
	meta := built.Metadata
	if err := checkProperties("updates", meta.Properties()); err != nil {
		return ServedView{}, err
	}
	if meta.Equals(base) && sameProps(meta.Properties(), base.Properties()) {
		return ServedView{AssetID: row.ID, Ident: id, MetadataLocation: row.MetadataLocation, Metadata: base}, nil
	}
	dir := row.MetadataDir
	if meta.Location() != base.Location() {
		if dir, err = s.viewMetadataDir(ctx, s.db, w, id, meta); err != nil {
			return ServedView{}, err
		}
	}
	newLoc := nextViewFile(dir, row.MetadataLocation)
	if err := s.writeViewMetadata(ctx, w, meta, newLoc); err != nil {
		return ServedView{}, serveErr(ErrNotCommitted, "could not write the view's new metadata file %s: %v; nothing was committed", newLoc, err)
	}
	now := s.clock()
	n, err := s.db.IcebergView.Update().Where(icebergview.ID(row.ID), icebergview.MetadataLocation(row.MetadataLocation), icebergview.RestKey(*row.RestKey)).
		SetMetadataLocation(newLoc).SetLocation(meta.Location()).SetMetadataDir(dir).SetCurrentVersionID(meta.CurrentVersionID()).SetUpdatedAt(now).Save(ctx)
	if err != nil {
		// The file is written and the swap's outcome unknown: an orphan at worst, never a
		// dangling pointer.
		return ServedView{}, serveErr(ErrCommitUnknown, "view %s: the pointer could not be swapped (%v): the outcome is unknown", id, err)
	}
	if n == 0 {
		return ServedView{}, serveErr(ErrCommitFailed, "view %s changed since this commit read it at %s; refresh the view and retry", id, row.MetadataLocation)
	}
	if meta.CurrentVersionID() != base.CurrentVersionID() {
		s.viewLineage(ctx, w, id, meta)
	}
	return ServedView{AssetID: row.ID, Ident: id, MetadataLocation: newLoc, Metadata: meta}, nil
}

func sameProps(a, b iceberg.Properties) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// RenameView renames a served view; its asset keeps its ID and is renamed at this instant.
func (s *Service) RenameView(ctx context.Context, wh string, from, to TableIdent) error {
	w, err := s.warehouse(wh)
	if err != nil {
		return err
	}
	row, err := s.viewRow(ctx, s.db, wh, from)
	if err != nil {
		return err
	}
	if err := to.valid(); err != nil {
		return err
	}
	if _, err := s.namespaceRow(ctx, s.db, wh, to.Namespace); err != nil {
		return err
	}
	if err := s.viewNameFree(ctx, wh, to); err != nil {
		return err
	}
	a, err := s.cat.Get(ctx, row.ID)
	if err != nil {
		return err
	}
	renamed := a.Namespace != w.Namespace || a.Name != to.String()
	// The catalog first: a name another asset holds refuses the rename before anything moved.
	if renamed {
		if _, err := s.cat.Rename(ctx, row.ID, catalog.AnyVersion, w.Namespace, to.String()); err != nil {
			return s.nameHeld(ctx, err, w, to)
		}
	}
	key := tableKey(wh, to.Namespace, to.Name)
	err = s.tx(ctx, func(tx *ent.Tx) error {
		if err := lockLocations(ctx, tx); err != nil {
			return err
		}
		if err := nameClash(ctx, tx.Client(), wh, to, "view"); err != nil {
			return err
		}
		n, err := tx.IcebergView.Update().Where(icebergview.ID(row.ID), icebergview.RestKey(*row.RestKey)).
			SetRestKey(key).SetRestNamespace(nsKey(wh, to.Namespace)).SetIdentifier(to.String()).SetUpdatedAt(s.clock()).Save(ctx)
		if ent.IsConstraintError(err) {
			return serveErr(ErrAlreadyExists, "view %s already exists in warehouse %s", to, wh)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return serveErr(ErrNoSuchView, "view %s was renamed or dropped meanwhile", from)
		}
		return nil
	})
	if err != nil && renamed {
		if _, rerr := s.cat.Rename(ctx, row.ID, catalog.AnyVersion, a.Namespace, a.Name); rerr != nil {
			s.log.Error("rename: could not give the view's asset its name back after the rename failed", "asset_id", row.ID, "err", rerr)
		}
	}
	return err
}

// DropView drops a served view: the pointer is removed and the asset marked deleted. Its
// metadata files stay (nothing reads them once the pointer is gone).
func (s *Service) DropView(ctx context.Context, wh string, id TableIdent) error {
	if _, err := s.warehouse(wh); err != nil {
		return err
	}
	row, err := s.viewRow(ctx, s.db, wh, id)
	if err != nil {
		return err
	}
	now := s.clock()
	n, err := s.db.IcebergView.Update().Where(icebergview.ID(row.ID), icebergview.RestKey(*row.RestKey)).
		ClearRestKey().ClearRestNamespace().SetGoneAt(now).SetUpdatedAt(now).Save(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: drop view %s: %w", id, err)
	}
	if n == 0 {
		return serveErr(ErrNoSuchView, "view %s was renamed or dropped meanwhile", id)
	}
	if _, err := s.cat.Delete(ctx, row.ID, catalog.AnyVersion); err != nil {
		return fmt.Errorf("warehouse: the view is dropped; marking asset %s deleted failed: %w", row.ID, err)
	}
	return nil
}

// RegisterView serves an existing view from its metadata file under a name: the pointer starts
// at that file (not rewritten).
func (s *Service) RegisterView(ctx context.Context, wh string, id TableIdent, metadataLocation string) (ServedView, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedView{}, err
	}
	if err := id.valid(); err != nil {
		return ServedView{}, err
	}
	if _, err := s.namespaceRow(ctx, s.db, wh, id.Namespace); err != nil {
		return ServedView{}, err
	}
	if err := tables.CheckLocation(metadataLocation); err != nil {
		return ServedView{}, invalid("metadata-location", "metadata location %v", err)
	}
	if err := s.tables.CheckRoots(metadataLocation); err != nil || !tables.UnderDir(metadataLocation, w.Location) {
		return ServedView{}, invalid("metadata-location", "metadata location %s is not under warehouse %s's location %s", metadataLocation, w.Name, w.Location)
	}
	if err := s.viewNameFree(ctx, wh, id); err != nil {
		return ServedView{}, err
	}
	meta, err := s.readViewMetadata(ctx, w, metadataLocation)
	if err != nil {
		return ServedView{}, invalid("metadata-location", "could not read an Iceberg view metadata file at %s: %v", metadataLocation, err)
	}
	return s.placeView(ctx, w, id, meta, metadataLocation)
}

// refuseServedView is a conflict when asset id is a served view: as a served table's, its name
// and life are the REST catalog's (RefuseServed).
func (s *Service) refuseServedView(ctx context.Context, id uuid.UUID) error {
	row, err := s.db.IcebergView.Query().Where(icebergview.ID(id), icebergview.RestKeyNotNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("warehouse: is asset %s a served view: %w", id, err)
	}
	return &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf(
		"asset %s is the view %s served by warehouse %s through the Iceberg REST catalog: rename or drop it through the catalog (/iceberg/v1/%s/...)",
		id, row.Identifier, row.Warehouse, row.Warehouse)}
}
