package warehouse

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/tables"
)

// TableIdent names a served table: its namespace levels and its name.
type TableIdent struct {
	Namespace []string
	Name      string
}

func (t TableIdent) String() string {
	return strings.Join(append(append([]string{}, t.Namespace...), t.Name), ".")
}

func (t TableIdent) valid() error {
	if err := validLevels(t.Namespace); err != nil {
		return err
	}
	return validPart("name", t.Name)
}

// ServedTable is a table served over the Iceberg REST protocol at its current pointer.
type ServedTable struct {
	AssetID          uuid.UUID
	Ident            TableIdent
	MetadataLocation string
	Metadata         table.Metadata
	// MetadataJSON is Metadata as a commit wrote it to MetadataLocation (nil otherwise): an
	// answer can send it without encoding the metadata again.
	MetadataJSON []byte
	// Props are the IO properties a client needs to read and write its files.
	Props iceberg.Properties
}

func (s *Service) servedRow(ctx context.Context, db *ent.Client, wh string, id TableIdent) (*ent.IcebergTable, error) {
	if err := id.valid(); err != nil {
		return nil, err
	}
	row, err := db.IcebergTable.Query().Where(icebergtable.RestKey(tableKey(wh, id.Namespace, id.Name))).Select(tables.RowFields()...).Only(ctx)
	if ent.IsNotFound(err) {
		if _, err := s.namespaceRow(ctx, db, wh, id.Namespace); err != nil {
			return nil, err
		}
		return nil, serveErr(ErrNoSuchTable, "table %s does not exist in warehouse %s", id, wh)
	}
	if err != nil {
		return nil, fmt.Errorf("warehouse: read table %s: %w", id, err)
	}
	return row, nil
}

// LoadServed returns a served table at its current pointer.
func (s *Service) LoadServed(ctx context.Context, wh string, id TableIdent) (ServedTable, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedTable{}, err
	}
	row, err := s.servedRow(ctx, s.db, wh, id)
	if err != nil {
		return ServedTable{}, err
	}
	meta, err := s.readMetadata(ctx, w, row.MetadataLocation)
	if err != nil {
		return ServedTable{}, err
	}
	return ServedTable{AssetID: row.ID, Ident: id, MetadataLocation: row.MetadataLocation, Metadata: meta, Props: w.Props}, nil
}

// ServedPointer returns a served table's asset ID and current metadata location without
// reading the metadata (a conditional load answers 304 from it).
func (s *Service) ServedPointer(ctx context.Context, wh string, id TableIdent) (uuid.UUID, string, error) {
	if _, err := s.warehouse(wh); err != nil {
		return uuid.Nil, "", err
	}
	row, err := s.servedRow(ctx, s.db, wh, id)
	if err != nil {
		return uuid.Nil, "", err
	}
	return row.ID, row.MetadataLocation, nil
}

// ListServed lists the names of the tables in a namespace after a cursor (a name returned as
// next).
func (s *Service) ListServed(ctx context.Context, wh string, ns []string, after string, limit int) ([]string, string, error) {
	if _, err := s.namespaceRow(ctx, s.db, wh, ns); err != nil {
		return nil, "", err
	}
	q := s.db.IcebergTable.Query().Where(icebergtable.RestNamespace(nsKey(wh, ns)))
	if after != "" {
		q.Where(icebergtable.RestKeyGT(tableKey(wh, ns, after)))
	}
	var keys []string
	if err := q.Order(ent.Asc(icebergtable.FieldRestKey)).Limit(limit+1).Select(icebergtable.FieldRestKey).Scan(ctx, &keys); err != nil {
		return nil, "", fmt.Errorf("warehouse: list tables: %w", err)
	}
	names, next := namesPage(keys, wh, ns, limit)
	return names, next, nil
}

// namesPage turns a page of keys in a namespace (limit+1 read, to know whether more follow)
// into names and the cursor of the next page ("" at the end).
func namesPage(keys []string, wh string, ns []string, limit int) ([]string, string) {
	more := len(keys) > limit
	if more {
		keys = keys[:limit]
	}
	out := make([]string, len(keys))
	prefix := nsKey(wh, ns) + sep
	for i, k := range keys {
		out[i] = strings.TrimPrefix(k, prefix)
	}
	if !more {
		return out, ""
	}
	return out, out[len(out)-1]
}

// CreateServedInput is a table to create in a served warehouse.
type CreateServedInput struct {
	Ident     TableIdent
	Schema    *iceberg.Schema
	Spec      *iceberg.PartitionSpec // nil: unpartitioned
	SortOrder *table.SortOrder       // nil: unsorted
	// Location, when set, must be under the warehouse and overlap no live table; empty gives
	// <warehouse>/<namespace>/<name>-<uuid>.
	Location   string
	Properties iceberg.Properties
	// Stage returns the table's first metadata without creating it: a commit asserting
	// create makes it.
	Stage bool
}

// CreateServed creates a table (or stages it): its first metadata file is written, then the
// pointer is recorded, bound to a new asset (or one lineage created under its name before).
func (s *Service) CreateServed(ctx context.Context, wh string, in CreateServedInput, opt CommitOptions) (ServedTable, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedTable{}, err
	}
	if err := in.Ident.valid(); err != nil {
		return ServedTable{}, err
	}
	if in.Schema == nil {
		return ServedTable{}, invalid("schema", "a table needs a schema")
	}
	if err := checkSchema("schema", in.Schema); err != nil {
		return ServedTable{}, err
	}
	if err := checkProperties("properties", in.Properties); err != nil {
		return ServedTable{}, err
	}
	if in.Stage {
		opt.IdempotencyKey = "" // nothing is committed: nothing to replay
	}
	if first, err := s.claimServed(ctx, w, &opt); err != nil || first != nil {
		if err != nil {
			return ServedTable{}, err
		}
		return *first, nil
	}
	defer opt.claim.release(ctx)
	if _, err := s.namespaceRow(ctx, s.db, wh, in.Ident.Namespace); err != nil {
		return ServedTable{}, err
	}
	if exists, err := s.db.IcebergTable.Query().Where(icebergtable.RestKey(tableKey(wh, in.Ident.Namespace, in.Ident.Name))).Exist(ctx); err != nil {
		return ServedTable{}, err
	} else if exists {
		return ServedTable{}, serveErr(ErrAlreadyExists, "table %s already exists in warehouse %s", in.Ident, wh)
	}
	spec := iceberg.UnpartitionedSpec
	if in.Spec != nil {
		spec = in.Spec
	}
	order := table.UnsortedSortOrder
	if in.SortOrder != nil {
		order = *in.SortOrder
	}
	tuuid := uuid.New()
	loc := strings.TrimRight(in.Location, "/")
	if loc == "" {
		loc = s.defaultLocation(w, in.Ident, tuuid)
	}
	meta, err := table.NewMetadataWithUUID(in.Schema, spec, order, loc, in.Properties, tuuid)
	if err != nil {
		return ServedTable{}, invalid("schema", "the table cannot be created as asked: %v", err)
	}
	if in.Stage {
		if err := s.checkLocation(ctx, s.db, w, loc, uuid.Nil); err != nil {
			return ServedTable{}, err
		}
		return ServedTable{Ident: in.Ident, Metadata: meta, Props: w.Props}, nil
	}
	out, err := s.commit(ctx, w, []*plan{{ident: in.Ident, kind: "create", updated: meta}}, opt)
	if err != nil {
		return ServedTable{}, err
	}
	return out[0], nil
}

// claimServed claims the key of a create or register (see claimKey); a replay returns the first
// request's outcome.
func (s *Service) claimServed(ctx context.Context, w tables.Warehouse, opt *CommitOptions) (*ServedTable, error) {
	cl, err := s.claimKey(ctx, w.Name, *opt)
	if err != nil {
		return nil, err
	}
	if cl.replaying() {
		out, err := s.replayCommits(ctx, w, cl.rows)
		if err != nil {
			return nil, err
		}
		return &out[0], nil
	}
	opt.claim = cl
	return nil, nil
}

// RegisterServed serves an existing table from its metadata file under a new name: the
// pointer starts at that file. The write-path inventory covers the commits after it.
//
// With overwrite, a table already served under the name has its pointer moved to the metadata
// file, which must be the same table's (its table-uuid): the asset, its history and its
// inventory stay. Another table's metadata under a live name is refused: the name's table is
// unregistered (or dropped) first, so one name never silently becomes another asset.
func (s *Service) RegisterServed(ctx context.Context, wh string, id TableIdent, metadataLocation string, overwrite bool, opt CommitOptions) (ServedTable, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedTable{}, err
	}
	if err := id.valid(); err != nil {
		return ServedTable{}, err
	}
	if _, err := s.namespaceRow(ctx, s.db, wh, id.Namespace); err != nil {
		return ServedTable{}, err
	}
	if err := tables.CheckLocation(metadataLocation); err != nil {
		return ServedTable{}, invalid("metadata-location", "metadata location %v", err)
	}
	if first, err := s.claimServed(ctx, w, &opt); err != nil || first != nil {
		if err != nil {
			return ServedTable{}, err
		}
		return *first, nil
	}
	defer opt.claim.release(ctx)
	if err := s.tables.CheckRoots(metadataLocation); err != nil || !tables.UnderDir(metadataLocation, w.Location) {
		return ServedTable{}, invalid("metadata-location", "metadata location %s is not under warehouse %s's location %s", metadataLocation, w.Name, w.Location)
	}
	meta, err := s.readMetadata(ctx, w, metadataLocation)
	if err != nil {
		return ServedTable{}, invalid("metadata-location", "could not read an Iceberg metadata file at %s: %v", metadataLocation, err)
	}
	if overwrite {
		row, err := s.servedRow(ctx, s.db, wh, id)
		if err != nil && !errors.Is(err, ErrNoSuchTable) {
			return ServedTable{}, err
		}
		if row != nil {
			return s.moveRegistered(ctx, w, id, row, meta, metadataLocation, opt)
		}
	}
	known, err := s.db.IcebergTable.Query().Where(icebergtable.TableUUID(meta.TableUUID().String())).Select(tables.RowFields()...).Only(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return ServedTable{}, err
	}
	var self uuid.UUID
	if known != nil {
		if known.GoneAt == nil && (known.Warehouse != "" || known.Connection != "") {
			return ServedTable{}, serveErr(ErrAlreadyExists, "table-uuid %s is already live as %s (asset %s): drop it there first", meta.TableUUID(), known.Identifier, known.ID)
		}
		self = known.ID
	}
	if err := s.checkLocation(ctx, s.db, w, meta.Location(), self); err != nil {
		return ServedTable{}, err
	}
	out, err := s.commit(ctx, w, []*plan{{ident: id, kind: "register", updated: meta, newLoc: metadataLocation, adopt: known}}, opt)
	if err != nil {
		return ServedTable{}, err
	}
	return out[0], nil
}

// moveRegistered is a register with overwrite of a table served under the name: its pointer
// moves to the given metadata file by compare-and-swap, like a commit.
func (s *Service) moveRegistered(ctx context.Context, w tables.Warehouse, id TableIdent, row *ent.IcebergTable, meta table.Metadata, loc string, opt CommitOptions) (ServedTable, error) {
	if row.TableUUID != meta.TableUUID().String() {
		return ServedTable{}, serveErr(ErrAlreadyExists, "table %s is served with table-uuid %s and %s is table %s's metadata: overwrite moves a table's own pointer; unregister %s first (its files stay) to put another table under this name", id, row.TableUUID, loc, meta.TableUUID(), id)
	}
	base, err := s.readMetadata(ctx, w, row.MetadataLocation)
	if err != nil {
		return ServedTable{}, err
	}
	if err := s.checkLocation(ctx, s.db, w, meta.Location(), row.ID); err != nil {
		return ServedTable{}, err
	}
	out, err := s.commit(ctx, w, []*plan{{ident: id, kind: "register", row: row, base: base, updated: meta, newLoc: loc}}, opt)
	if err != nil {
		return ServedTable{}, err
	}
	return out[0], nil
}

// RenameServed renames a served table; the asset keeps its ID and is renamed at this instant.
func (s *Service) RenameServed(ctx context.Context, wh string, from, to TableIdent, opt CommitOptions) error {
	w, err := s.warehouse(wh)
	if err != nil {
		return err
	}
	cl, err := s.claimKey(ctx, wh, opt)
	if err != nil {
		return err
	}
	if cl.replaying() {
		return replayedChange(cl.rows, "rename")
	}
	defer cl.release(ctx)
	row, err := s.servedRow(ctx, s.db, wh, from)
	if err != nil {
		return err
	}
	if err := to.valid(); err != nil {
		return err
	}
	if _, err := s.namespaceRow(ctx, s.db, wh, to.Namespace); err != nil {
		return err
	}
	key := tableKey(wh, to.Namespace, to.Name)
	if exists, err := s.db.IcebergTable.Query().Where(icebergtable.RestKey(key)).Exist(ctx); err != nil {
		return err
	} else if exists {
		return serveErr(ErrAlreadyExists, "table %s already exists in warehouse %s", to, wh)
	}
	if err := nameClash(ctx, s.db, wh, to, "table"); err != nil {
		return err
	}
	a, err := s.cat.Get(ctx, row.ID)
	if err != nil {
		return err
	}
	// The catalog first: a name another asset holds refuses the rename before anything moved.
	if a.Namespace != w.Namespace || a.Name != to.String() {
		if _, err := s.cat.Rename(ctx, row.ID, catalog.AnyVersion, w.Namespace, to.String()); err != nil {
			return err
		}
	}
	now := s.clock()
	err = s.tx(ctx, func(tx *ent.Tx) error {
		n, err := tx.IcebergTable.Update().Where(icebergtable.ID(row.ID), icebergtable.RestKey(*row.RestKey)).
			SetRestKey(key).SetRestNamespace(nsKey(wh, to.Namespace)).SetIdentifier(to.String()).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			if ent.IsConstraintError(err) {
				return serveErr(ErrAlreadyExists, "table %s already exists in warehouse %s", to, wh)
			}
			return err
		}
		if n == 0 {
			return serveErr(ErrNoSuchTable, "table %s was renamed or dropped meanwhile", from)
		}
		if err := cl.mark(ctx, tx, row.ID); err != nil {
			return err
		}
		return tx.IcebergCommit.Create().SetAssetID(row.ID).SetWarehouse(wh).SetKind("rename").SetState(stateCommitted).
			SetBaseLocation(row.MetadataLocation).SetNewLocation(row.MetadataLocation).SetReason(from.String() + " -> " + to.String()).
			SetIdempotencyKey(opt.IdempotencyKey).SetActor(catalog.ActorFrom(ctx)).SetStartedAt(now).SetFinishedAt(now).Exec(ctx)
	})
	if err == nil {
		cl.recorded()
	}
	if err != nil && (a.Namespace != w.Namespace || a.Name != to.String()) {
		if _, rerr := s.cat.Rename(ctx, row.ID, catalog.AnyVersion, a.Namespace, a.Name); rerr != nil {
			s.log.Error("rename: could not give the asset its name back after the table rename failed", "asset_id", row.ID, "err", rerr)
		}
	}
	return err
}

// DropServed drops a served table: the pointer is removed (metadata first) and the asset marked
// deleted. No file is deleted here: a purge is recorded and its files wait for the cleanup
// bot's proposal and a person's approval.
func (s *Service) DropServed(ctx context.Context, wh string, id TableIdent, purge bool, opt CommitOptions) error {
	if _, err := s.warehouse(wh); err != nil {
		return err
	}
	cl, err := s.claimKey(ctx, wh, opt)
	if err != nil {
		return err
	}
	if cl.replaying() {
		return replayedChange(cl.rows, "drop")
	}
	defer cl.release(ctx)
	opt.claim = cl
	row, err := s.servedRow(ctx, s.db, wh, id)
	if err != nil {
		return err
	}
	if err := s.dropServedRow(ctx, row, purge, opt); err != nil {
		return err
	}
	if _, err := s.cat.Delete(ctx, row.ID, catalog.AnyVersion); err != nil {
		return fmt.Errorf("warehouse: the table is dropped; marking asset %s deleted failed: %w", row.ID, err)
	}
	return nil
}

// UnregisterServed takes a served table out of the catalog and leaves every file of it in
// place (the opposite of RegisterServed): the asset is marked deleted, no file of it is ever
// proposed for deletion on its account, and it answers the table's last metadata, so the table
// can be registered elsewhere. A commit after it finds no table.
func (s *Service) UnregisterServed(ctx context.Context, wh string, id TableIdent, opt CommitOptions) (ServedTable, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return ServedTable{}, err
	}
	cl, err := s.claimKey(ctx, wh, opt)
	if err != nil {
		return ServedTable{}, err
	}
	if cl.replaying() {
		if err := replayedChange(cl.rows, kindUnregister); err != nil {
			return ServedTable{}, err
		}
		c := cl.rows[0]
		meta, err := s.readMetadata(ctx, w, c.BaseLocation)
		if err != nil {
			return ServedTable{}, err
		}
		return ServedTable{AssetID: c.AssetID, Ident: id, MetadataLocation: c.BaseLocation, Metadata: meta, Props: w.Props}, nil
	}
	defer cl.release(ctx)
	opt.claim = cl
	row, err := s.servedRow(ctx, s.db, wh, id)
	if err != nil {
		return ServedTable{}, err
	}
	meta, err := s.readMetadata(ctx, w, row.MetadataLocation)
	if err != nil {
		return ServedTable{}, err
	}
	if err := s.removeServedRow(ctx, row, kindUnregister, "unregistered: its files stay where they are, and no file of it is deleted on its account", opt); err != nil {
		return ServedTable{}, err
	}
	if _, err := s.cat.Delete(ctx, row.ID, catalog.AnyVersion); err != nil {
		return ServedTable{}, fmt.Errorf("warehouse: the table is unregistered; marking asset %s deleted failed: %w", row.ID, err)
	}
	return ServedTable{AssetID: row.ID, Ident: id, MetadataLocation: row.MetadataLocation, Metadata: meta, Props: w.Props}, nil
}

// kindUnregister is the commit kind of an unregister (a drop that leaves the files).
const kindUnregister = "unregister"

// dropServedRow removes a served table's pointer and records the drop.
func (s *Service) dropServedRow(ctx context.Context, row *ent.IcebergTable, purge bool, opt CommitOptions) error {
	reason := "dropped"
	if purge {
		reason = purgeReason + ": the files wait for a cleanup proposal and approval"
	}
	return s.removeServedRow(ctx, row, "drop", reason, opt)
}

// removeServedRow removes a served table's pointer (only if it is still served under its key)
// and records why as a commit of the kind.
func (s *Service) removeServedRow(ctx context.Context, row *ent.IcebergTable, kind, reason string, opt CommitOptions) error {
	id, wh := row.Identifier, row.Warehouse
	now := s.clock()
	err := s.tx(ctx, func(tx *ent.Tx) error {
		n, err := tx.IcebergTable.Update().Where(icebergtable.ID(row.ID), icebergtable.RestKeyNotNil()).
			ClearRestKey().ClearRestNamespace().SetGoneAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return serveErr(ErrNoSuchTable, "table %s was renamed or dropped meanwhile", id)
		}
		if err := opt.claim.mark(ctx, tx, row.ID); err != nil {
			return err
		}
		return tx.IcebergCommit.Create().SetAssetID(row.ID).SetWarehouse(wh).SetKind(kind).SetState(stateCommitted).
			SetBaseLocation(row.MetadataLocation).SetReason(reason).SetIdempotencyKey(opt.IdempotencyKey).
			SetActor(catalog.ActorFrom(ctx)).SetStartedAt(now).SetFinishedAt(now).Exec(ctx)
	})
	if err == nil {
		opt.claim.recorded()
	}
	return err
}

// servedIdent is a served table's REST identifier, from its key.
func servedIdent(row *ent.IcebergTable) (TableIdent, error) {
	if row.RestKey == nil {
		return TableIdent{}, serveErr(ErrNoSuchTable, "table %s is no longer served (dropped)", row.Identifier)
	}
	parts := strings.Split(*row.RestKey, sep)
	if len(parts) < 3 {
		return TableIdent{}, fmt.Errorf("warehouse: table %s has a malformed key", row.ID)
	}
	return TableIdent{Namespace: parts[1 : len(parts)-1], Name: parts[len(parts)-1]}, nil
}
