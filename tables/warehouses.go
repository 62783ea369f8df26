package tables

// The warehouses Tidemark serves, as tables sees them: their configuration (a warehouse's
// location is a root tables may read under) and what package warehouse, which serves them and
// is built on tables, asks of tables. tables never imports warehouse: where tables itself changes
// a served table (Drop, RemoveSnapshots), it goes through the Served the warehouse registered.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
func Overlaps(a, b string) bool {
	ra, err := parseRoot(a)
	if err != nil {
		return false
	}
	rb, err := parseRoot(b)
	return err == nil && (ra.contains(rb) || rb.contains(ra))
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
