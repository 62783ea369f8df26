package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergnamespace"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/ent/icebergview"
)

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
		return Namespace{}, fmt.Errorf("warehouse: create namespace: %w", err)
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
		return nil, fmt.Errorf("warehouse: read namespace: %w", err)
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
		return ns, fmt.Errorf("warehouse: namespace %s: %w", row.Key, err)
	}
	ns.Properties = map[string]string{}
	if err := json.Unmarshal([]byte(row.Properties), &ns.Properties); err != nil {
		return ns, fmt.Errorf("warehouse: namespace %s: %w", row.Key, err)
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
		return nil, "", fmt.Errorf("warehouse: list namespaces: %w", err)
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
		views, err := tx.IcebergView.Query().Where(icebergview.RestNamespace(key)).Count(ctx)
		if err != nil {
			return err
		}
		children, err := tx.IcebergNamespace.Query().Where(icebergnamespace.KeyHasPrefix(key + sep)).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 || views > 0 || children > 0 {
			return serveErr(ErrNamespaceNotEmpty, "namespace %s holds %d tables, %d views and %d namespaces: drop them first", strings.Join(levels, "."), n, views, children)
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
