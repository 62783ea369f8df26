package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/iceberg-go"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergnamespace"
	"github.com/tidemark/tidemark/ent/icebergtable"
)

// Warehouse is a place Tidemark serves Iceberg tables from over the REST catalog protocol:
// engines create and commit tables through Tidemark, which keeps each table's metadata pointer
// in its own store and swaps it by compare-and-swap.
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

// Warehouses returns the served warehouses.
func (s *Service) Warehouses() []Warehouse { return slices.Clone(s.warehouses) }

// Warehouse returns a served warehouse by name.
func (s *Service) Warehouse(name string) (Warehouse, bool) {
	for _, w := range s.warehouses {
		if w.Name == name {
			return w, true
		}
	}
	return Warehouse{}, false
}

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

// The errors of the served catalog: each wraps the catalog kind the API maps to a status.
var (
	ErrNoSuchWarehouse   = fmt.Errorf("tables: no such warehouse: %w", catalog.ErrNotFound)
	ErrNoSuchNamespace   = fmt.Errorf("tables: no such namespace: %w", catalog.ErrNotFound)
	ErrNoSuchTable       = fmt.Errorf("tables: no such table: %w", catalog.ErrNotFound)
	ErrAlreadyExists     = fmt.Errorf("tables: already exists: %w", catalog.ErrConflict)
	ErrNamespaceNotEmpty = fmt.Errorf("tables: namespace not empty: %w", catalog.ErrConflict)
	// ErrCommitFailed is a commit whose requirements no longer hold (another writer got there
	// first): nothing changed, the writer refreshes and retries.
	ErrCommitFailed = fmt.Errorf("tables: commit failed: %w", catalog.ErrConflict)
	// ErrCommitUnknown is a commit whose outcome is not known (the store failed while swapping):
	// the writer must not clean up what it wrote.
	ErrCommitUnknown = errors.New("commit state unknown")
	// ErrNotCommitted is a commit known not to have happened for a reason other than a conflict
	// (the metadata file could not be written, the snapshot's files could not be read).
	ErrNotCommitted = errors.New("not committed")
)

// ServeError is an error of the served catalog with a message a client can act on.
type ServeError struct {
	Kind    error
	Message string
}

func (e *ServeError) Error() string { return e.Message }
func (e *ServeError) Unwrap() error { return e.Kind }

func serveErr(kind error, format string, args ...any) error {
	return &ServeError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

const sep = "\x1f" // between namespace levels in keys: a control character no level may hold

// validLevels checks namespace levels: at least one, none empty, no control characters.
func validLevels(levels []string) error {
	if len(levels) == 0 {
		return invalid("namespace", "the namespace is empty: give at least one level")
	}
	if len(levels) > 16 {
		return invalid("namespace", "the namespace has %d levels; the limit is 16", len(levels))
	}
	for _, l := range levels {
		if err := validPart("namespace", l); err != nil {
			return err
		}
	}
	return nil
}

func validPart(field, s string) error {
	if s == "" {
		return invalid(field, "a %s level or name is empty", field)
	}
	if len(s) > 255 {
		return invalid(field, "%s %q is %d bytes; the limit is 255", field, s[:32]+"...", len(s))
	}
	if !utf8.ValidString(s) {
		return invalid(field, "%s is not valid UTF-8", field)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return invalid(field, "%s %q holds a control character", field, s)
		}
	}
	if err := catalog.CheckVisible(field, s); err != nil {
		return err
	}
	if strings.Contains(s, ".") {
		// ["p","q"]/r, ["p"]/"q.r" and ["p.q"]/r would all be the asset p.q.r.
		return invalid(field, "%s %q holds a '.': a served table's asset is named <namespace levels>.<name>, so a dot inside a level or a name would give two tables one name; use '_' or '-' instead", field, s)
	}
	return nil
}

func nsKey(wh string, levels []string) string {
	return wh + sep + strings.Join(levels, sep)
}

func tableKey(wh string, levels []string, name string) string {
	return nsKey(wh, levels) + sep + name
}

// Namespace is a namespace of a served warehouse.
type Namespace struct {
	Levels     []string
	Properties map[string]string
}

func (s *Service) warehouse(name string) (Warehouse, error) {
	w, ok := s.Warehouse(name)
	if !ok {
		return w, serveErr(ErrNoSuchWarehouse, "no warehouse is named %q", name)
	}
	return w, nil
}

// CreateNamespace creates a namespace; ErrAlreadyExists when it exists.
func (s *Service) CreateNamespace(ctx context.Context, wh string, levels []string, props map[string]string) (Namespace, error) {
	if _, err := s.warehouse(wh); err != nil {
		return Namespace{}, err
	}
	if err := validLevels(levels); err != nil {
		return Namespace{}, err
	}
	if props == nil {
		props = map[string]string{}
	}
	if err := checkProperties("properties", props); err != nil {
		return Namespace{}, err
	}
	pj, err := json.Marshal(props)
	if err != nil {
		return Namespace{}, err
	}
	lj, _ := json.Marshal(levels)
	now := s.clock()
	err = s.db.IcebergNamespace.Create().SetWarehouse(wh).SetKey(nsKey(wh, levels)).SetLevels(string(lj)).SetDepth(len(levels)).
		SetProperties(string(pj)).SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
	if ent.IsConstraintError(err) {
		return Namespace{}, serveErr(ErrAlreadyExists, "namespace %s already exists", strings.Join(levels, "."))
	}
	if err != nil {
		return Namespace{}, fmt.Errorf("tables: create namespace: %w", err)
	}
	return Namespace{Levels: levels, Properties: props}, nil
}

func (s *Service) namespaceRow(ctx context.Context, db *ent.Client, wh string, levels []string) (*ent.IcebergNamespace, error) {
	if _, err := s.warehouse(wh); err != nil {
		return nil, err
	}
	if err := validLevels(levels); err != nil {
		return nil, err
	}
	row, err := db.IcebergNamespace.Query().Where(icebergnamespace.Key(nsKey(wh, levels))).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, serveErr(ErrNoSuchNamespace, "namespace %s does not exist in warehouse %s", strings.Join(levels, "."), wh)
	}
	if err != nil {
		return nil, fmt.Errorf("tables: read namespace: %w", err)
	}
	return row, nil
}

// LoadNamespace returns a namespace and its properties.
func (s *Service) LoadNamespace(ctx context.Context, wh string, levels []string) (Namespace, error) {
	row, err := s.namespaceRow(ctx, s.db, wh, levels)
	if err != nil {
		return Namespace{}, err
	}
	return toNamespace(row)
}

func toNamespace(row *ent.IcebergNamespace) (Namespace, error) {
	var ns Namespace
	if err := json.Unmarshal([]byte(row.Levels), &ns.Levels); err != nil {
		return ns, fmt.Errorf("tables: namespace %s: %w", row.Key, err)
	}
	ns.Properties = map[string]string{}
	if err := json.Unmarshal([]byte(row.Properties), &ns.Properties); err != nil {
		return ns, fmt.Errorf("tables: namespace %s: %w", row.Key, err)
	}
	return ns, nil
}

// ListNamespaces lists the namespaces directly under parent (the top level when parent is
// empty), in key order after the cursor (a key returned as next).
func (s *Service) ListNamespaces(ctx context.Context, wh string, parent []string, after string, limit int) ([][]string, string, error) {
	if _, err := s.warehouse(wh); err != nil {
		return nil, "", err
	}
	q := s.db.IcebergNamespace.Query().Where(icebergnamespace.Warehouse(wh), icebergnamespace.Depth(len(parent)+1))
	if len(parent) > 0 {
		if _, err := s.namespaceRow(ctx, s.db, wh, parent); err != nil {
			return nil, "", err
		}
		q.Where(icebergnamespace.KeyHasPrefix(nsKey(wh, parent) + sep))
	}
	if after != "" {
		q.Where(icebergnamespace.KeyGT(after))
	}
	rows, err := q.Order(ent.Asc(icebergnamespace.FieldKey)).Limit(limit + 1).All(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("tables: list namespaces: %w", err)
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].Key
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		ns, err := toNamespace(r)
		if err != nil {
			return nil, "", err
		}
		out = append(out, ns.Levels)
	}
	return out, next, nil
}

// DropNamespace drops an empty namespace: ErrNamespaceNotEmpty while it holds tables or
// namespaces.
func (s *Service) DropNamespace(ctx context.Context, wh string, levels []string) error {
	return s.tx(ctx, func(tx *ent.Tx) error {
		row, err := s.namespaceRow(ctx, tx.Client(), wh, levels)
		if err != nil {
			return err
		}
		key := nsKey(wh, levels)
		n, err := tx.IcebergTable.Query().Where(icebergtable.RestNamespace(key)).Count(ctx)
		if err != nil {
			return err
		}
		children, err := tx.IcebergNamespace.Query().Where(icebergnamespace.KeyHasPrefix(key + sep)).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 || children > 0 {
			return serveErr(ErrNamespaceNotEmpty, "namespace %s holds %d tables and %d namespaces: drop them first", strings.Join(levels, "."), n, children)
		}
		return tx.IcebergNamespace.DeleteOneID(row.ID).Exec(ctx)
	})
}

// NamespaceUpdate is what UpdateNamespaceProperties did.
type NamespaceUpdate struct {
	Updated, Removed, Missing []string
}

// UpdateNamespaceProperties removes and sets properties of a namespace in one step; a key both
// removed and set is refused.
func (s *Service) UpdateNamespaceProperties(ctx context.Context, wh string, levels []string, removals []string, updates map[string]string) (NamespaceUpdate, error) {
	for _, k := range removals {
		if _, ok := updates[k]; ok {
			return NamespaceUpdate{}, invalid("removals", "property %q is both removed and updated", k)
		}
	}
	var out NamespaceUpdate
	err := s.tx(ctx, func(tx *ent.Tx) error {
		row, err := s.namespaceRow(ctx, tx.Client(), wh, levels)
		if err != nil {
			return err
		}
		ns, err := toNamespace(row)
		if err != nil {
			return err
		}
		out = NamespaceUpdate{Updated: []string{}, Removed: []string{}, Missing: []string{}}
		for _, k := range removals {
			if _, ok := ns.Properties[k]; ok {
				delete(ns.Properties, k)
				out.Removed = append(out.Removed, k)
			} else {
				out.Missing = append(out.Missing, k)
			}
		}
		maps.Copy(ns.Properties, updates)
		if err := checkProperties("updates", ns.Properties); err != nil {
			return err
		}
		out.Updated = slices.Sorted(maps.Keys(updates))
		pj, err := json.Marshal(ns.Properties)
		if err != nil {
			return err
		}
		return tx.IcebergNamespace.UpdateOneID(row.ID).SetProperties(string(pj)).SetUpdatedAt(s.clock()).Exec(ctx)
	})
	return out, err
}

// tx runs fn in a transaction.
func (s *Service) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return fmt.Errorf("tables: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the cause is what matters
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("tables: commit: %w", err)
	}
	return nil
}
