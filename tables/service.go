package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/versions"
)

// Service registers, syncs and inspects Iceberg tables.
type Service struct {
	db      *ent.Client
	cat     *catalog.Catalog
	now     func() time.Time
	log     *slog.Logger
	small   int64
	ioProps iceberg.Properties
	conns   []*Connection
	gap     time.Duration // between the two listings that must both lack a table before it is gone

	rootLocs []string // warehouse roots as configured
	roots    roots    // where tables registered by metadata location may be; empty refuses all
	ambient  bool     // object store locations may use the machine's own credentials
	limit    int64    // largest table file read
	timeout  time.Duration
	partials *partials // manifests' health figures, kept across refreshes
	lz4      *lz4Probe

	warehouses []Warehouse // served over the Iceberg REST protocol (by package warehouse)
	served     Served      // the service serving them, once it registered (SetServed)

	versions *versions.Service // records the versions each read of a table shows (nil: none)
}

// DefaultConfirmGap is how far apart two complete catalog listings that both lack a table must
// be before the sync marks it deleted.
const DefaultConfirmGap = time.Hour

// WithConfirmGap sets how far apart two complete listings lacking a table must be (default 1 h).
func WithConfirmGap(d time.Duration) Option { return func(s *Service) { s.gap = d } }

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithSmallFile sets the size under which a data file counts as small (default 32 MiB).
func WithSmallFile(bytes int64) Option { return func(s *Service) { s.small = bytes } }

// WithIOProperties sets the iceberg-go IO properties (s3.endpoint, credentials, ...) used for
// tables registered by metadata location.
func WithIOProperties(p iceberg.Properties) Option { return func(s *Service) { s.ioProps = p } }

// WithConnections sets the Iceberg catalog connections the sync reads.
func WithConnections(c ...*Connection) Option {
	return func(s *Service) { s.conns = append(s.conns, c...) }
}

// WithWarehouseRoots sets the locations under which tables may be registered by metadata
// location (local paths or URIs such as s3://bucket/warehouse). The warehouses of the configured
// catalog connections are roots too. Without any, registration by metadata location is refused.
func WithWarehouseRoots(locs ...string) Option {
	return func(s *Service) { s.rootLocs = append(s.rootLocs, locs...) }
}

// WithAmbientCredentials lets registered tables on object stores use the credentials of the
// machine (environment, profiles, instance metadata) when io_properties name none.
func WithAmbientCredentials(on bool) Option { return func(s *Service) { s.ambient = on } }

// WithFileLimit sets the largest metadata, manifest list or manifest file read (default 256 MiB).
func WithFileLimit(bytes int64) Option { return func(s *Service) { s.limit = bytes } }

// WithRegisterTimeout bounds one registration (reading and inspecting the table; default 2 min).
func WithRegisterTimeout(d time.Duration) Option { return func(s *Service) { s.timeout = d } }

// New returns a Service.
func New(store *storage.DB, cat *catalog.Catalog, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, errors.New("tables: no database")
	}
	if cat == nil {
		return nil, errors.New("tables: no catalog")
	}
	s := &Service{db: store.Client, cat: cat, now: time.Now, log: slog.New(slog.DiscardHandler), small: DefaultSmallFile, gap: DefaultConfirmGap,
		limit: DefaultFileLimit, timeout: 2 * time.Minute, partials: newPartials(DefaultPartialCache), lz4: &lz4Probe{}}
	for _, o := range opts {
		o(s)
	}
	if s.limit <= 0 || s.timeout <= 0 {
		return nil, fmt.Errorf("tables: the file size limit (%d) and the registration timeout (%s) must be positive", s.limit, s.timeout)
	}
	s.roots = roots{}
	for _, l := range s.rootLocs {
		r, err := parseRoot(strings.TrimSpace(l))
		if err != nil {
			return nil, fmt.Errorf("tables: warehouse root: %w", err)
		}
		s.roots = append(s.roots, r)
	}
	for _, c := range s.conns {
		// A REST catalog's warehouse is often a name, not a location: only locations are roots.
		if w := c.Props["warehouse"]; strings.Contains(w, "://") || strings.HasPrefix(w, "/") {
			if r, err := parseRoot(w); err == nil {
				s.roots = append(s.roots, r)
			}
		}
	}
	if err := s.checkWarehouses(); err != nil {
		return nil, err
	}
	if s.gap < 0 {
		return nil, fmt.Errorf("tables: the confirmation gap must not be negative, not %s", s.gap)
	}
	if s.small <= 0 {
		return nil, fmt.Errorf("tables: small-file size must be positive, not %d", s.small)
	}
	seen := map[string]bool{}
	for _, c := range s.conns {
		if seen[c.Name] {
			return nil, fmt.Errorf("tables: two Iceberg catalog connections are named %q", c.Name)
		}
		seen[c.Name] = true
	}
	return s, nil
}

// Connections returns the configured connections.
func (s *Service) Connections() []*Connection { return s.conns }

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func (s *Service) connection(name string) *Connection {
	for _, c := range s.conns {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// RegisterInput registers one table by its metadata location.
type RegisterInput struct {
	MetadataLocation string
	// Namespace and Name name the asset; empty means the storage location named the way
	// OpenLineage names datasets (namespace "file" or "s3://bucket", name the path).
	Namespace, Name string
	// Force registers a metadata file older than the one the table is registered at (moving the
	// table back in time); only an admin may ask for it.
	Force bool
}

// Register loads the table at a metadata location, binds it to an asset (the one already
// bound to its table-uuid, else a new one) and inspects it. Registering a newer metadata
// location of a known table moves it forward.
func (s *Service) Register(ctx context.Context, in RegisterInput) (Table, RefreshReport, error) {
	loc := strings.TrimSpace(in.MetadataLocation)
	if loc == "" {
		return Table{}, RefreshReport{}, invalid("metadata_location", "metadata_location is empty: give the URI of a table's metadata JSON file, e.g. s3://bucket/db/orders/metadata/00003-....metadata.json")
	}
	if (in.Namespace == "") != (in.Name == "") {
		return Table{}, RefreshReport{}, invalid("name", "give both namespace and name, or neither")
	}
	if in.Name != "" {
		if err := catalog.ValidateName(in.Namespace, in.Name); err != nil {
			return Table{}, RefreshReport{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// One reading of a path (see ground.go): what the checks read is what storage opens.
	if err := CheckLocation(loc); err != nil {
		return Table{}, RefreshReport{}, invalid("metadata_location", "metadata_location %v", err)
	}
	if err := s.roots.check(loc); err != nil {
		return Table{}, RefreshReport{}, invalid("metadata_location", "%v: tables are registered only from the configured warehouse roots", err)
	}
	if err := checkCredentials(loc, s.ioProps, s.ambient); err != nil {
		return Table{}, RefreshReport{}, invalid("metadata_location", "%v", err)
	}
	tbl, err := s.loadLocation(ctx, loc)
	if err != nil {
		return Table{}, RefreshReport{}, invalid("metadata_location", "could not load Iceberg table metadata from %s: %s", loc, s.loadProblem(ctx, loc, err))
	}
	if err := CheckLocation(tbl.Metadata().Location()); err != nil {
		return Table{}, RefreshReport{}, invalid("metadata_location", "the table's location %v; Tidemark would read and clean it one way and storage another", err)
	}
	if err := s.roots.check(tbl.Metadata().Location()); err != nil {
		return Table{}, RefreshReport{}, invalid("metadata_location", "the table's location %v: its files would be read and cleaned outside the warehouse", err)
	}
	if err := s.notOlder(ctx, tbl, in.Force); err != nil {
		return Table{}, RefreshReport{}, err
	}
	ns, name := in.Namespace, in.Name
	rename := name != ""
	if !rename {
		ns, name = LocationName(tbl.Metadata().Location())
	}
	id, _, err := s.bind(ctx, tbl, "", "", ns, name, rename, time.Time{})
	if err != nil {
		return Table{}, RefreshReport{}, err
	}
	rep, err := s.inspectAndStore(ctx, id, tbl, versions.SourceInspection)
	if err != nil {
		return Table{}, rep, err
	}
	t, err := s.Get(ctx, id)
	return t, rep, err
}

// loadLocation reads a registered table: under the warehouse roots only.
func (s *Service) loadLocation(ctx context.Context, loc string) (*table.Table, error) {
	return s.loadLocationWith(ctx, loc, s.ioProps, s.roots)
}

func (s *Service) loadLocationWith(ctx context.Context, loc string, props iceberg.Properties, rs roots) (*table.Table, error) {
	return table.NewFromLocation(ctx, table.Identifier{"registered"}, loc, s.locationFS(props, loc, rs), nil)
}

// loadProblem says why a client's metadata location could not be loaded without echoing what
// the file holds (a parse error quotes bytes of it); the full error goes to the log.
func (s *Service) loadProblem(ctx context.Context, loc string, err error) string {
	s.log.InfoContext(ctx, "register: load failed", "metadata_location", loc, "err", err)
	for _, known := range []error{ErrOutsideRoots, ErrNotRegular, ErrTooLarge, ErrNoCredentials} {
		if errors.Is(err, known) {
			return err.Error()
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("reading it took longer than %s", s.timeout)
	}
	return "it is not a readable Iceberg table metadata file (details are in the server log)"
}

// bind finds or creates the asset for a loaded table and records the table row. A known
// table-uuid under another name is a rename of the same asset when rename is set. It returns
// what it did: "added", "renamed", "restored" or "". listedAt is when a sync's listing showed the
// table (zero for a registration): the next sync that finds it renamed knows the rename came
// after the previous listing.
func (s *Service) bind(ctx context.Context, tbl *table.Table, conn, ident, ns, name string, rename bool, listedAt time.Time) (uuid.UUID, string, error) {
	meta := tbl.Metadata()
	tuuid := meta.TableUUID().String()
	uuidID := catalog.ExternalIDInput{System: catalog.SystemIcebergTable, Value: tuuid}
	locNS, locName := LocationName(meta.Location())
	locID := catalog.SymlinkID(locNS, locName)

	var id uuid.UUID
	var action string
	var bound []catalog.ExternalID // the asset's, when it was read
	ref, ok, err := s.cat.LookupExternal(ctx, uuidID.System, uuidID.Value)
	if err != nil {
		return uuid.Nil, "", err
	}
	if ok {
		id = ref.ID
		a, err := s.cat.Get(ctx, id)
		if err != nil {
			return uuid.Nil, "", err
		}
		if a.Status == catalog.StatusDeleted {
			if _, err := s.cat.Restore(ctx, id, catalog.AnyVersion); err != nil {
				return uuid.Nil, "", fmt.Errorf("tables: restore asset %s of table %s: %w", id, tuuid, err)
			}
			action = "restored"
			if a, err = s.cat.Get(ctx, id); err != nil {
				return uuid.Nil, "", err
			}
		}
		bound = a.ExternalIDs
		if rename && (a.Namespace != ns || a.Name != name) {
			since, err := s.lastListed(ctx, tuuid, conn)
			if err != nil {
				return uuid.Nil, "", err
			}
			if since != nil {
				_, err = s.cat.RenameFound(ctx, id, ns, name, *since)
			} else {
				_, err = s.cat.Rename(ctx, id, catalog.AnyVersion, ns, name)
			}
			if err != nil {
				return uuid.Nil, "", fmt.Errorf("tables: rename asset %s to %s.%s: %w", id, ns, name, err)
			}
			if action == "" {
				action = "renamed"
			}
		}
	} else {
		// Adopt an asset that lineage or a person created under the table's name or location
		// before the catalog knew the table, unless it is bound to another Iceberg table.
		if id, err = s.Adoptable(ctx, ns, name); err == nil && id == uuid.Nil && (ns != locNS || name != locName) {
			id, err = s.Adoptable(ctx, locNS, locName)
		}
		if err != nil {
			return uuid.Nil, "", err
		}
		if id == uuid.Nil {
			create := func(ids ...catalog.ExternalIDInput) (catalog.CreateResult, error) {
				return s.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: ns, Name: name, ExternalIDs: ids})
			}
			// The location's ID goes with the table-uuid into the new asset, saving a bind
			// transaction. Create returns the asset either ID is bound to already: when that is
			// not the table's (the location is bound elsewhere), the asset is created with the
			// table-uuid alone and the location bound below, as it may.
			res, err := create(uuidID, locID)
			if (errors.Is(err, catalog.ErrConflict) && !errors.Is(err, catalog.ErrNameTaken)) || (err == nil && !hasExternalID(res.Asset.ExternalIDs, uuidID)) {
				res, err = create(uuidID)
			}
			if err != nil {
				return uuid.Nil, "", fmt.Errorf("tables: create asset %s.%s for table %s: %w", ns, name, tuuid, err)
			}
			id, bound = res.Asset.ID, res.Asset.ExternalIDs
		} else if rename {
			if _, err := s.cat.Rename(ctx, id, catalog.AnyVersion, ns, name); err != nil {
				return uuid.Nil, "", fmt.Errorf("tables: rename asset %s to %s.%s: %w", id, ns, name, err)
			}
		}
		action = "added"
	}
	// Binding an ID the asset already has changes nothing but costs a transaction of about ten
	// statements (every refresh of a known table would pay two).
	if !hasExternalID(bound, uuidID) {
		if _, err := s.cat.BindExternalID(ctx, id, uuidID); err != nil {
			return uuid.Nil, "", err
		}
	}
	if !hasExternalID(bound, locID) {
		if _, err := s.cat.BindExternalID(ctx, id, locID); err != nil {
			if !errors.Is(err, catalog.ErrConflict) {
				return uuid.Nil, "", err
			}
			s.log.Warn("table location already bound to another asset", "asset_id", id, "location", meta.Location(), "err", err)
		}
	}
	return id, action, s.upsertRow(ctx, id, tbl, conn, ident, listedAt, true)
}

func hasExternalID(ids []catalog.ExternalID, x catalog.ExternalIDInput) bool {
	for _, b := range ids {
		if b.System == x.System && b.Value == x.Value {
			return true
		}
	}
	return false
}

// Adoptable returns the live asset holding a name when no Iceberg table is bound to it.
func (s *Service) Adoptable(ctx context.Context, ns, name string) (uuid.UUID, error) {
	ref, ok, err := s.cat.Lookup(ctx, catalog.SpaceDataset, ns, name)
	if err != nil || !ok || ref.Former || ref.Deleted {
		return uuid.Nil, err
	}
	a, err := s.cat.Get(ctx, ref.ID)
	if err != nil {
		return uuid.Nil, err
	}
	for _, x := range a.ExternalIDs {
		if x.System == catalog.SystemIcebergTable {
			return uuid.Nil, nil
		}
	}
	if a.Kind == catalog.KindJob || a.Kind == catalog.KindView {
		return uuid.Nil, nil // a job is no dataset; a view's name is never a table's
	}
	return a.ID, nil
}

// lastListed is when a listing of connection conn last showed the table under its identifier,
// or nil (not synced from conn, or never listed).
func (s *Service) lastListed(ctx context.Context, tuuid, conn string) (*time.Time, error) {
	if conn == "" {
		return nil, nil
	}
	row, err := s.db.IcebergTable.Query().Where(icebergtable.TableUUID(tuuid)).Select(rowFields...).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tables: read table %s: %w", tuuid, err)
	}
	if row.Connection != conn {
		return nil, nil
	}
	return row.ListedAt, nil
}

// upsertRow records what tbl's metadata says of table id. revive: the table is seen alive (listed
// by its catalog, or registered again), so a row marked gone is live again; a refresh never
// revives one, since it may read a table a drop is removing at the same moment.
func (s *Service) upsertRow(ctx context.Context, id uuid.UUID, tbl *table.Table, conn, ident string, listedAt time.Time, revive bool) error {
	meta := tbl.Metadata()
	now := s.clock()
	var cur *int64
	if c := meta.CurrentSnapshot(); c != nil {
		v := c.SnapshotID
		cur = &v
	}
	last := time.UnixMilli(meta.LastUpdatedMillis()).UTC()
	row, err := s.db.IcebergTable.Query().Where(icebergtable.ID(id)).Select(rowFields...).Only(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return err
	}
	var recorded *int // the schema whose columns the catalog has
	if row != nil {
		recorded = row.ColumnsSchemaID
		// A served table's pointer moves only by its commits: a load or registration of another
		// metadata file must not move it (back).
		if row.Warehouse != "" && row.GoneAt == nil && row.MetadataLocation != tbl.MetadataLocation() {
			return &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf(
				"table %s is served by Tidemark's warehouse %s at %s: its metadata moves only by commits through /iceberg/v1", row.Identifier, row.Warehouse, row.MetadataLocation)}
		}
	}
	if recorded, err = s.SyncColumns(ctx, id, meta, recorded); err != nil {
		return err
	}
	if row == nil {
		err = s.db.IcebergTable.Create().SetID(id).SetConnection(conn).SetIdentifier(ident).
			SetTableUUID(meta.TableUUID().String()).SetLocation(meta.Location()).
			SetMetadataLocation(tbl.MetadataLocation()).SetFormatVersion(meta.Version()).
			SetNillableCurrentSnapshotID(cur).SetLastUpdatedAt(last).SetNillableListedAt(nonZero(listedAt)).
			SetNillableColumnsSchemaID(recorded).SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
		if !ent.IsConstraintError(err) {
			return err
		}
		// Another replica's sync or registration created the row first: update it instead.
		if row, err = s.db.IcebergTable.Query().Where(icebergtable.ID(id)).Select(rowFields...).Only(ctx); err != nil {
			return err
		}
	}
	// One UPDATE: ent's UpdateOne wraps it in a transaction with a SELECT of the row, four
	// round trips where one does.
	u := s.db.IcebergTable.Update().Where(icebergtable.ID(id)).SetTableUUID(meta.TableUUID().String()).SetLocation(meta.Location()).
		SetMetadataLocation(tbl.MetadataLocation()).SetFormatVersion(meta.Version()).
		SetNillableCurrentSnapshotID(cur).SetLastUpdatedAt(last).SetNillableColumnsSchemaID(recorded).
		ClearMissingAt().SetUpdatedAt(now)
	if revive {
		u.ClearGoneAt()
	}
	if cur == nil {
		u.ClearCurrentSnapshotID()
	}
	if !listedAt.IsZero() {
		u.SetListedAt(listedAt)
	}
	// A dropped table registered again by metadata location is a registered table from now on:
	// its catalog no longer has it, and a sync must not mark it gone again.
	if row.Warehouse != "" {
		// Served: the pointer moves only by commits. Guarded by the location this load read, so
		// a refresh that raced a commit changes nothing (the commit marked the table for the
		// next inspection round) instead of moving the pointer back.
		_, err := u.Where(icebergtable.MetadataLocation(tbl.MetadataLocation())).Save(ctx)
		return err
	}
	if conn != "" || row.Connection == "" || row.GoneAt != nil {
		u.SetConnection(conn).SetIdentifier(ident)
	}
	return updated(u.Save(ctx))
}

// updated turns the rows an UPDATE of one table row changed into an error when it found none.
func updated(n int, err error) error {
	if err == nil && n == 0 {
		return &catalog.Error{Kind: catalog.ErrNotFound, Message: "the Iceberg table was removed meanwhile"}
	}
	return err
}

// inspectAndStore records the versions the loaded table shows (learned from source), inspects
// it and stores inspection and health on its row, or records the error on the row and returns
// it.
func (s *Service) inspectAndStore(ctx context.Context, id uuid.UUID, tbl *table.Table, source string) (RefreshReport, error) {
	start := time.Now()
	rep := RefreshReport{AssetID: id, MetadataLocation: tbl.MetadataLocation()}
	// From the metadata alone, so a table whose manifests cannot be read still has its versions.
	// A failure is the table's, recorded on it: the next sync reads it again instead of passing
	// over its unchanged metadata.
	if err := s.recordVersions(ctx, id, tbl.Metadata(), source); err != nil {
		return rep, s.recordError(ctx, id, fmt.Errorf("tables: record the versions: %w", err))
	}
	r := newReader(s.db, s.guardFS(tbl.FS, nil), s.clock, &rep)
	r.partials, r.lz4 = s.partials, s.lz4
	in, h, err := inspect(ctx, r, tbl.Metadata(), tbl.MetadataLocation(), s.small, s.clock())
	rep.Duration = time.Since(start).Round(time.Millisecond).String()
	if err != nil {
		return rep, s.recordError(ctx, id, err)
	}
	inJSON, err := json.Marshal(in)
	if err != nil {
		return rep, err
	}
	hJSON, err := json.Marshal(h)
	if err != nil {
		return rep, err
	}
	now := s.clock()
	return rep, updated(s.db.IcebergTable.Update().Where(icebergtable.ID(id)).SetInspection(string(inJSON)).SetHealth(string(hJSON)).
		SetRefreshedAt(now).SetError("").ClearErrorAt().SetUpdatedAt(now).Save(ctx))
}

// recordError stores a load or inspection error on the table row (when there is one) and
// returns the error, marked as the table's.
func (s *Service) recordError(ctx context.Context, id uuid.UUID, cause error) error {
	msg := cause.Error()
	if len(msg) > 4000 {
		msg = msg[:4000] + "..."
	}
	now := s.clock()
	if err := s.db.IcebergTable.UpdateOneID(id).SetError(msg).SetErrorAt(now).SetUpdatedAt(now).Exec(ctx); err != nil && !ent.IsNotFound(err) {
		return errors.Join(cause, err)
	}
	return &TableError{AssetID: id, Err: cause}
}

// TableError is a load or inspection failure of one table; it is recorded on the table.
type TableError struct {
	AssetID uuid.UUID
	Err     error
}

func (e *TableError) Error() string { return fmt.Sprintf("table %s: %v", e.AssetID, e.Err) }
func (e *TableError) Unwrap() error { return e.Err }

// Refresh reloads a table's metadata (through its catalog connection, else from its metadata
// location) and inspects it, reading only manifests it has not read before.
func (s *Service) Refresh(ctx context.Context, id uuid.UUID) (RefreshReport, error) {
	row, err := s.row(ctx, id)
	if err != nil {
		return RefreshReport{}, err
	}
	tbl, err := s.load(ctx, row)
	if err != nil {
		return RefreshReport{}, err
	}
	if err := s.upsertRow(ctx, id, tbl, row.Connection, row.Identifier, time.Time{}, false); err != nil {
		return RefreshReport{}, err
	}
	return s.inspectAndStore(ctx, id, tbl, versions.SourceInspection)
}

// load reads the table's current metadata: through its catalog connection, else from its
// registered metadata location. Failures are recorded on the table.
func (s *Service) load(ctx context.Context, row *ent.IcebergTable) (*table.Table, error) {
	var tbl *table.Table
	var err error
	if row.GoneAt != nil {
		// Dropped from its catalog: what is left is its last metadata (a drop does not purge).
		if tbl, err = s.loadLocationWith(ctx, row.MetadataLocation, s.propsFor(row), s.rootsFor(row)); err != nil {
			return nil, s.recordError(ctx, row.ID, fmt.Errorf("tables: load the dropped table's last metadata %s: %w", row.MetadataLocation, err))
		}
	} else if row.Connection != "" {
		c := s.connection(row.Connection)
		if c == nil {
			return nil, s.recordError(ctx, row.ID, fmt.Errorf("tables: the Iceberg catalog connection %q is no longer configured", row.Connection))
		}
		cat, err := c.Catalog(ctx)
		if err != nil {
			return nil, s.recordError(ctx, row.ID, err)
		}
		if tbl, err = cat.LoadTable(ctx, splitIdent(row.Identifier)); err != nil {
			return nil, s.recordError(ctx, row.ID, fmt.Errorf("tables: load %s from %s: %w", row.Identifier, c.Name, err))
		}
	} else if tbl, err = s.loadLocationWith(ctx, row.MetadataLocation, s.propsFor(row), s.roots); err != nil { // a served table: its warehouse's IO properties
		return nil, s.recordError(ctx, row.ID, fmt.Errorf("tables: load %s: %w", row.MetadataLocation, err))
	}
	if tbl.Metadata().TableUUID().String() != row.TableUUID {
		return nil, s.recordError(ctx, row.ID, fmt.Errorf("tables: the table at %s now has table-uuid %s, not %s: it was replaced; sync or register it again", tbl.MetadataLocation(), tbl.Metadata().TableUUID(), row.TableUUID))
	}
	return tbl, nil
}

// rowFields are the table row's columns but the inspection and health JSON, which only
// Inspection and Health need (tens of KiB for a table of many snapshots, read and sent again by
// every other read of the row).
var rowFields = slices.DeleteFunc(slices.Clone(icebergtable.Columns), func(f string) bool {
	return f == icebergtable.FieldInspection || f == icebergtable.FieldHealth
})

// row reads a table row: rowFields and the given columns.
func (s *Service) row(ctx context.Context, id uuid.UUID, with ...string) (*ent.IcebergTable, error) {
	row, err := s.db.IcebergTable.Query().Where(icebergtable.ID(id)).Select(slices.Concat(rowFields, with)...).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("asset %s is not a known Iceberg table", id)}
	}
	return row, err
}

// Get returns a table.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Table, error) {
	row, err := s.row(ctx, id)
	if err != nil {
		return Table{}, err
	}
	return toTable(row), nil
}

// List returns tables in asset-ID order after a cursor.
func (s *Service) List(ctx context.Context, after uuid.UUID, limit int) ([]Table, bool, error) {
	q := s.db.IcebergTable.Query().Select(rowFields...).Order(ent.Asc(icebergtable.FieldID)).Limit(limit + 1)
	if after != uuid.Nil {
		q.Where(icebergtable.IDGT(after))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, false, err
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out := make([]Table, len(rows))
	for i, r := range rows {
		out[i] = toTable(r)
	}
	return out, more, nil
}

// Inspection returns the stored inspection of a table; ErrNotFound when it was never inspected.
func (s *Service) Inspection(ctx context.Context, id uuid.UUID) (Inspection, error) {
	row, err := s.row(ctx, id, icebergtable.FieldInspection)
	if err != nil {
		return Inspection{}, err
	}
	var in Inspection
	if row.Inspection == "" {
		return in, notInspected(row)
	}
	return in, json.Unmarshal([]byte(row.Inspection), &in)
}

// Health returns the stored health of a table.
func (s *Service) Health(ctx context.Context, id uuid.UUID) (Health, error) {
	row, err := s.row(ctx, id, icebergtable.FieldHealth)
	if err != nil {
		return Health{}, err
	}
	var h Health
	if row.Health == "" {
		return h, notInspected(row)
	}
	return h, json.Unmarshal([]byte(row.Health), &h)
}

func notInspected(row *ent.IcebergTable) error {
	msg := fmt.Sprintf("table %s has not been inspected yet", row.ID)
	if row.Error != "" {
		msg += "; the last attempt failed: " + row.Error
	}
	return &catalog.Error{Kind: catalog.ErrNotFound, Message: msg}
}

func toTable(r *ent.IcebergTable) Table {
	return Table{AssetID: r.ID, Connection: r.Connection, Warehouse: r.Warehouse, Identifier: r.Identifier, TableUUID: r.TableUUID,
		Location: r.Location, MetadataLocation: r.MetadataLocation, FormatVersion: r.FormatVersion,
		CurrentSnapshotID: r.CurrentSnapshotID, LastUpdatedAt: r.LastUpdatedAt, RefreshedAt: r.RefreshedAt,
		Error: r.Error, ErrorAt: r.ErrorAt, GoneAt: r.GoneAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func invalid(field, format string, args ...any) error {
	return &catalog.Error{Kind: catalog.ErrInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// LocationName names a storage location the way OpenLineage names datasets: namespace "file"
// and the path for local files; otherwise "scheme://authority" and the path without its
// leading slash (kept for hdfs). s3a and s3n are s3. It never fails: a location is text from
// table metadata, named as written.
func LocationName(loc string) (string, string) {
	i := strings.Index(loc, "://")
	if i < 0 {
		loc = strings.TrimRight(loc, "/")
		if p, ok := strings.CutPrefix(loc, "file:"); ok {
			return "file", p
		}
		return "file", loc
	}
	scheme, rest := strings.ToLower(loc[:i]), strings.TrimRight(loc[i+3:], "/")
	switch scheme {
	case "file":
		return "file", rest
	case "s3a", "s3n":
		scheme = "s3"
	}
	auth, path, _ := strings.Cut(rest, "/")
	if scheme == "hdfs" {
		path = "/" + path
	}
	return scheme + "://" + auth, path
}

func splitIdent(s string) table.Identifier { return strings.Split(s, ".") }

// Dropped is what is left of a table after Drop: where its files are and how to reach them.
type Dropped struct {
	Location string
	Props    iceberg.Properties
}

// Drop removes a table from its Iceberg catalog without purging its files (iceberg-go's drop
// leaves data and metadata in place) and marks it gone. A table registered by metadata location
// has no catalog entry to drop. Dropping a table already gone succeeds.
func (s *Service) Drop(ctx context.Context, id uuid.UUID) (Dropped, error) {
	row, err := s.row(ctx, id)
	if err != nil {
		return Dropped{}, err
	}
	out := Dropped{Location: row.Location, Props: s.propsFor(row)}
	if row.GoneAt != nil {
		return out, nil
	}
	if row.Warehouse != "" {
		w, err := s.servedThrough(row)
		if err != nil {
			return out, err
		}
		return out, w.DropServedRow(ctx, row)
	}
	if row.Connection != "" {
		c := s.connection(row.Connection)
		if c == nil {
			return out, fmt.Errorf("tables: the Iceberg catalog connection %q is no longer configured", row.Connection)
		}
		cat, err := c.Catalog(ctx)
		if err != nil {
			return out, err
		}
		if err := cat.DropTable(ctx, splitIdent(row.Identifier)); err != nil {
			if ok, cerr := cat.CheckTableExists(ctx, splitIdent(row.Identifier)); cerr != nil || ok {
				return out, fmt.Errorf("tables: drop %s from %s: %w", row.Identifier, c.Name, err)
			}
		}
	}
	now := s.clock()
	return out, s.db.IcebergTable.UpdateOneID(id).SetGoneAt(now).SetUpdatedAt(now).Exec(ctx)
}

// IO opens storage at a location with the given IO properties.
func IO(ctx context.Context, location string, props iceberg.Properties) (icebergio.IO, error) {
	return icebergio.LoadFS(ctx, props, location)
}

// notOlder refuses a metadata file of a known table that was last updated before the one the
// table is at now: registering it would move the table back in time (its newer snapshots would
// look unreferenced to the cleanup bot). force allows it.
func (s *Service) notOlder(ctx context.Context, tbl *table.Table, force bool) error {
	row, err := s.db.IcebergTable.Query().Where(icebergtable.TableUUID(tbl.Metadata().TableUUID().String())).Select(rowFields...).Only(ctx)
	if ent.IsNotFound(err) || force {
		return nil
	}
	if err != nil {
		return err
	}
	newer := tbl.Metadata().LastUpdatedMillis()
	if row.LastUpdatedAt != nil && newer < row.LastUpdatedAt.UnixMilli() && row.MetadataLocation != tbl.MetadataLocation() {
		return &catalog.Error{Kind: catalog.ErrConflict, Field: "metadata_location", Message: fmt.Sprintf(
			"%s was last updated at %s, before %s which table %s is registered at (%s): registering it would move the table back in time; an admin may force it",
			tbl.MetadataLocation(), time.UnixMilli(newer).UTC().Format(time.RFC3339), row.MetadataLocation, row.ID, row.LastUpdatedAt.UTC().Format(time.RFC3339))}
	}
	return nil
}

func nonZero(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
