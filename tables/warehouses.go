package tables

// The warehouses Tidemark serves, as tables sees them: their configuration (a warehouse's
// location is a root tables may read under) and what package warehouse, which serves them and
// is built on tables, asks of tables. tables never imports warehouse: where tables itself changes
// a served table (Drop, RemoveSnapshots), it goes through the Served the warehouse registered.

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/ent"
)

// Warehouse is a place Tidemark serves Iceberg tables from over the REST catalog protocol:
// engines create and commit tables through Tidemark, which keeps each table's metadata pointer
// in its own store and swaps it by compare-and-swap (package warehouse).
type Warehouse struct {
	// Name is the warehouse clients ask for and the REST path prefix.
	Name string
	// Location is where new tables go: <location>/<namespace levels>/<name>-<uuid>.
	Location string
	// Namespace is the asset namespace served tables get (default "iceberg://<name>").
	Namespace string
	// Props are the iceberg-go IO properties for the location (s3.endpoint, credentials, ...).
	Props iceberg.Properties
	// Layout is where a new table goes under the location: "uuid" (the default,
	// <location>/<levels>/<name>-<uuid>) or "name" (<location>/<levels>/<name>).
	Layout string
	// Storage is how clients reach the location, answered in every table load and create.
	Storage StorageSettings
	// Access is how storage access is handed out per table (vended credentials, remote signing).
	Access Access
}

// Warehouse layouts.
const (
	// LayoutUUID puts a new table at <location>/<namespace levels>/<name>-<uuid>: no two tables
	// ever share a directory, even a table re-created under a dropped one's name.
	LayoutUUID = "uuid"
	// LayoutName puts it at <location>/<namespace levels>/<name> (the reference catalogs'
	// layout): a table re-created under a dropped, unpurged table's name shares its directory.
	LayoutName = "name"
)

// StorageSettings are what a client needs to reach an S3 location itself, without settings of
// its own: the endpoint as clients reach it (it may differ from the one Tidemark uses, behind a
// proxy or in another network), the region and the addressing style. None is a secret.
type StorageSettings struct {
	// Endpoint is the S3 endpoint clients use (default: the IO properties' s3.endpoint).
	Endpoint string
	// Region is the S3 region (default: the IO properties' s3.region or client.region).
	Region string
	// PathStyle is path-style addressing (default: on when an endpoint is set, as iceberg-go
	// does, unless the IO properties set s3.force-virtual-addressing).
	PathStyle *bool
}

// Vending modes.
const (
	VendNone = ""
	// VendSTS hands out temporary credentials from STS AssumeRole with a session policy that
	// limits them to the table's location.
	VendSTS = "sts"
	// VendKeys hands out the warehouse's own keys: they cannot be scoped to a table or to reading.
	VendKeys = "keys"
)

// Session duration bounds of STS credentials: AssumeRole's own limits are 15 min to 12 h.
const (
	MinSessionDuration     = 15 * time.Minute
	MaxSessionDuration     = 12 * time.Hour
	DefaultSessionDuration = time.Hour
)

// Access is how a warehouse hands out storage access per table.
type Access struct {
	// Vend is VendNone, VendSTS or VendKeys.
	Vend string
	// RoleARN is the role STS AssumeRole assumes (VendSTS).
	RoleARN string
	// STSEndpoint is the STS endpoint (VendSTS; default: AWS's for the region).
	STSEndpoint string
	// SessionDuration bounds vended STS credentials' lifetime (15 min to 12 h, default 1 h).
	SessionDuration time.Duration
	// RemoteSigning offers POST .../tables/{table}/sign: Tidemark signs a client's S3 requests
	// with the warehouse's keys after checking them.
	RemoteSigning bool
}

// WithWarehouses sets the warehouses served over the Iceberg REST protocol. Their locations are
// warehouse roots too.
func WithWarehouses(ws ...Warehouse) Option {
	return func(s *Service) { s.warehouses = append(s.warehouses, ws...) }
}

// Warehouses returns the served warehouses, checked and completed (a location as a URI, the
// default namespace, the configured IO properties).
func (s *Service) Warehouses() []Warehouse { return slices.Clone(s.warehouses) }

func (s *Service) checkWarehouses() error {
	seen := map[string]bool{}
	for i, w := range s.warehouses {
		if w.Name == "" || strings.ContainsAny(w.Name, "/?#%\x1f") || strings.TrimSpace(w.Name) != w.Name {
			return fmt.Errorf("tables: warehouse name %q: use letters, digits, '-', '_' or '.'", w.Name)
		}
		if seen[w.Name] {
			return fmt.Errorf("tables: two warehouses are named %q", w.Name)
		}
		seen[w.Name] = true
		w.Location = strings.TrimRight(strings.TrimSpace(w.Location), "/")
		if strings.HasPrefix(w.Location, "/") {
			w.Location = "file://" + w.Location
		}
		if w.Location == "" {
			return fmt.Errorf("tables: warehouse %s has no location", w.Name)
		}
		if w.Namespace == "" {
			w.Namespace = "iceberg://" + w.Name
		}
		if len(w.Props) == 0 {
			w.Props = maps.Clone(s.ioProps) // the configured IO properties (s3.endpoint, credentials)
			if w.Props == nil {
				w.Props = iceberg.Properties{}
			}
		}
		r, err := parseRoot(w.Location)
		if err != nil {
			return fmt.Errorf("tables: warehouse %s: %w", w.Name, err)
		}
		if err := completeAccess(&w); err != nil {
			return err
		}
		s.roots = append(s.roots, r)
		s.warehouses[i] = w
	}
	return nil
}

// WarehouseIO is the IO to read a served table's files with: only files under the warehouse
// are read (a manifest list path is the client's to name), only regular files, none larger than
// the file size limit.
func (s *Service) WarehouseIO(ctx context.Context, w Warehouse, location string) (icebergio.IO, error) {
	fsys, err := IO(ctx, location, w.Props)
	if err != nil {
		return nil, err
	}
	root, err := parseRoot(w.Location)
	if err != nil {
		return nil, fmt.Errorf("tables: warehouse %s: %w", w.Name, err)
	}
	return guard(fsys, roots{root}, s.limit), nil
}

// FileLimit is the largest metadata, manifest list or manifest file the service reads.
func (s *Service) FileLimit() int64 { return s.limit }

// CheckRoots refuses a location under none of the warehouse roots.
func (s *Service) CheckRoots(loc string) error { return s.roots.check(loc) }

// UnderDir reports whether loc lies strictly under dir, both normalised as warehouse roots are
// (cleaned, so ".." cannot climb out by a prefix test; local symbolic links resolved).
func UnderDir(loc, dir string) bool {
	l, err := parseRoot(loc)
	if err != nil {
		return false
	}
	d, err := parseRoot(dir)
	return err == nil && d.contains(l) && l.path != d.path
}

// Overlaps reports whether one location holds the other (or they are the same).
func Overlaps(a, b string) bool { return OverlapsWith(a)(b) }

// OverlapsWith returns Overlaps(a, b) for every b, made to be asked of many: local paths are
// resolved once per directory (a create compares its location with every live table's).
func OverlapsWith(a string) func(b string) bool {
	res := newResolver()
	ra, err := parseRootWith(a, res, false)
	if err != nil {
		return func(string) bool { return false }
	}
	return func(b string) bool {
		rb, err := parseRootWith(b, res, true)
		return err == nil && (ra.contains(rb) || rb.contains(ra))
	}
}

// RowFields are the table row's columns but the inspection and health JSON (see rowFields):
// what a read of a served table's row selects. The slice is shared: do not change it.
func RowFields() []string { return rowFields }

// Served is what tables asks of the warehouse serving a table: a served table's pointer moves
// only by the warehouse's commits, so dropping it (Drop) and removing its snapshots
// (RemoveSnapshots) go through them. Package warehouse implements it and registers it with
// SetServed.
type Served interface {
	// DropServedRow removes a served table's pointer and records the drop.
	DropServedRow(ctx context.Context, row *ent.IcebergTable) error
	// CommitServedRow commits requirements and updates to a served table by compare-and-swap.
	// A commit refused because the table moved meanwhile is (wraps) table.ErrCommitFailed.
	CommitServedRow(ctx context.Context, row *ent.IcebergTable, reqs []table.Requirement, updates []table.Update) error
}

// SetServed registers the service that serves the warehouses (package warehouse does, when it
// is built over this service).
func (s *Service) SetServed(w Served) { s.served = w }

// servedThrough is the registered Served, or an error naming the table when none is.
func (s *Service) servedThrough(row *ent.IcebergTable) (Served, error) {
	if s.served == nil {
		return nil, fmt.Errorf("tables: table %s is served by warehouse %s, and no service serves the warehouses here", row.Identifier, row.Warehouse)
	}
	return s.served, nil
}

// completeAccess checks a warehouse's layout, storage and access settings and fills in their
// defaults from its IO properties.
func completeAccess(w *Warehouse) error {
	switch w.Layout {
	case "":
		w.Layout = LayoutUUID
	case LayoutUUID, LayoutName:
	default:
		return fmt.Errorf("tables: warehouse %s: layout %q: use uuid (<name>-<uuid>, the default) or name", w.Name, w.Layout)
	}
	s3 := strings.HasPrefix(w.Location, "s3://") || strings.HasPrefix(w.Location, "s3a://")
	st := &w.Storage
	if st.Endpoint == "" {
		st.Endpoint = w.Props[icebergio.S3EndpointURL]
	}
	if st.Endpoint != "" {
		u, err := url.Parse(st.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("tables: warehouse %s: storage endpoint %q: give an http:// or https:// URL with a host and no path, such as https://s3.example.com", w.Name, st.Endpoint)
		}
		st.Endpoint = strings.TrimRight(st.Endpoint, "/")
	}
	if st.Region == "" {
		st.Region = w.Props[icebergio.S3Region]
	}
	if st.Region == "" {
		st.Region = w.Props[icebergio.S3ClientRegion]
	}
	if st.PathStyle == nil {
		path := st.Endpoint != ""
		if v, err := strconv.ParseBool(w.Props[icebergio.S3ForceVirtualAddressing]); err == nil {
			path = !v
		}
		st.PathStyle = &path
	}
	a := &w.Access
	switch a.Vend {
	case VendNone:
		if a.RoleARN != "" || a.STSEndpoint != "" {
			return fmt.Errorf("tables: warehouse %s: a role or STS endpoint is set but vend is not sts: set vend to sts to use them", w.Name)
		}
	case VendSTS:
		if a.RoleARN == "" {
			return fmt.Errorf("tables: warehouse %s: vend sts needs the role to assume (role_arn)", w.Name)
		}
		if a.STSEndpoint != "" {
			if u, err := url.Parse(a.STSEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("tables: warehouse %s: sts endpoint %q: give an http:// or https:// URL", w.Name, a.STSEndpoint)
			}
		}
	case VendKeys:
	default:
		return fmt.Errorf("tables: warehouse %s: vend %q: use sts (temporary credentials for the table's location), keys (the warehouse's own keys, unscoped) or leave it empty", w.Name, a.Vend)
	}
	if a.SessionDuration == 0 {
		a.SessionDuration = DefaultSessionDuration
	}
	if a.SessionDuration < MinSessionDuration || a.SessionDuration > MaxSessionDuration {
		return fmt.Errorf("tables: warehouse %s: session duration %s: give 15m to 12h", w.Name, a.SessionDuration)
	}
	if (a.Vend != VendNone || a.RemoteSigning) && !s3 {
		return fmt.Errorf("tables: warehouse %s: vending credentials and remote signing are for S3 locations (s3://), not %s", w.Name, w.Location)
	}
	if (a.Vend == VendKeys || a.RemoteSigning) && (w.Props[icebergio.S3AccessKeyID] == "" || w.Props[icebergio.S3SecretAccessKey] == "") {
		return fmt.Errorf("tables: warehouse %s: vending its keys or signing requests needs s3.access-key-id and s3.secret-access-key in its io_properties", w.Name)
	}
	if a.Vend == VendSTS && (w.Props[icebergio.S3AccessKeyID] == "" || w.Props[icebergio.S3SecretAccessKey] == "") {
		return fmt.Errorf("tables: warehouse %s: vend sts calls AssumeRole with the profile's keys: set s3.access-key-id and s3.secret-access-key in its io_properties", w.Name)
	}
	return nil
}

// ClientConfig is the storage part of a table load's config: what a client needs to reach the
// warehouse's location itself (endpoint, region, addressing), under the property names both the
// Iceberg spec (s3.path-style-access, client.region) and iceberg-go (s3.region,
// s3.force-virtual-addressing) read. It holds no secret.
func (w Warehouse) ClientConfig() map[string]string {
	out := map[string]string{}
	if !strings.HasPrefix(w.Location, "s3://") && !strings.HasPrefix(w.Location, "s3a://") {
		return out
	}
	if w.Storage.Endpoint != "" {
		out[icebergio.S3EndpointURL] = w.Storage.Endpoint
	}
	if w.Storage.Region != "" {
		out[icebergio.S3Region] = w.Storage.Region
		out[icebergio.S3ClientRegion] = w.Storage.Region
	}
	if w.Storage.PathStyle != nil {
		out["s3.path-style-access"] = strconv.FormatBool(*w.Storage.PathStyle)
		out[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!*w.Storage.PathStyle)
	}
	return out
}
