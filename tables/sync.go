package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/ent/tablesync"
	"github.com/tidemark/tidemark/versions"
)

// SyncActor is the audit actor of changes the sync makes.
const SyncActor = "tidemark-tables-sync"

// SyncReport is the reconciliation report of one sync run.
type SyncReport struct {
	ID            uuid.UUID          `json:"id"`
	StartedAt     time.Time          `json:"started_at"`
	FinishedAt    time.Time          `json:"finished_at"`
	Connections   []ConnectionReport `json:"connections"`
	Added         int                `json:"added"`
	Renamed       int                `json:"renamed"`
	Restored      int                `json:"restored"`
	MarkedDeleted int                `json:"marked_deleted"`
	Missing       int                `json:"missing_unconfirmed"`
	Refreshed     int                `json:"refreshed"`
	Errors        int                `json:"errors"` // unreachable catalogs and namespaces, and tables that failed
}

// ConnectionReport is what a sync did with one Iceberg catalog.
type ConnectionReport struct {
	Name string `json:"name"`
	// Error is set when the catalog could not be opened or its namespaces listed: nothing from
	// it was marked deleted.
	Error       string           `json:"error,omitempty"`
	Namespaces  int              `json:"namespaces"`
	Tables      int              `json:"tables"`
	Unreachable []NamespaceError `json:"unreachable_namespaces"` // not treated as empty
	Added       []TableChange    `json:"added"`
	Renamed     []TableChange    `json:"renamed"`
	Restored    []TableChange    `json:"restored"`
	Deleted     []TableChange    `json:"marked_deleted"`
	// Missing are known tables this complete listing lacked for the first time (or again, but
	// sooner than the confirmation gap): one listing is not proof a table was dropped.
	Missing   []TableChange `json:"missing_unconfirmed"`
	Failed    []TableChange `json:"failed"`
	Refreshed int           `json:"refreshed"`
	Unchanged int           `json:"unchanged"`
	// ManifestsRead counts manifests read from storage; the rest came from the cache.
	ManifestsRead   int `json:"manifests_read"`
	ManifestsCached int `json:"manifests_cached"`
}

// NamespaceError is a namespace whose tables could not be listed.
type NamespaceError struct {
	Namespace string `json:"namespace"`
	Error     string `json:"error"`
}

// TableChange is one table the sync changed or could not handle.
type TableChange struct {
	AssetID    uuid.UUID `json:"asset_id,omitempty"`
	Identifier string    `json:"identifier"`
	From       string    `json:"from,omitempty"` // former identifier of a rename
	TableUUID  string    `json:"table_uuid,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// SyncProgress is told about each connection as the sync reaches it.
type SyncProgress func(connection string, done, total int)

// Sync reconciles every configured connection with the catalog and stores the report. A
// catalog or namespace that cannot be listed is reported and nothing in it is marked deleted;
// a table that cannot be loaded or inspected has the error recorded on it and the sync goes on.
func (s *Service) Sync(ctx context.Context, progress SyncProgress) (SyncReport, error) {
	ctx = catalog.WithActor(ctx, SyncActor)
	rep := SyncReport{StartedAt: s.clock(), Connections: []ConnectionReport{}}
	for i, c := range s.conns {
		if progress != nil {
			progress(c.Name, i, len(s.conns))
		}
		cr, err := s.syncConnection(ctx, c)
		if err != nil {
			return rep, err // the catalog database itself failed, or ctx was cancelled
		}
		rep.Connections = append(rep.Connections, cr)
		rep.Added += len(cr.Added)
		rep.Renamed += len(cr.Renamed)
		rep.Restored += len(cr.Restored)
		rep.MarkedDeleted += len(cr.Deleted)
		rep.Missing += len(cr.Missing)
		rep.Refreshed += cr.Refreshed
		rep.Errors += len(cr.Unreachable) + len(cr.Failed)
		if cr.Error != "" {
			rep.Errors++
		}
	}
	if progress != nil {
		progress("", len(s.conns), len(s.conns))
	}
	rep.FinishedAt = s.clock()
	body, err := json.Marshal(rep)
	if err != nil {
		return rep, err
	}
	row, err := s.db.TableSync.Create().SetStartedAt(rep.StartedAt).SetFinishedAt(rep.FinishedAt).SetReport(string(body)).Save(ctx)
	if err != nil {
		return rep, fmt.Errorf("tables: store sync report: %w", err)
	}
	rep.ID = row.ID
	return rep, nil
}

// Syncs returns the most recent sync reports, newest first.
func (s *Service) Syncs(ctx context.Context, limit int) ([]SyncReport, error) {
	rows, err := s.db.TableSync.Query().Order(ent.Desc(tablesync.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SyncReport, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal([]byte(r.Report), &out[i]); err != nil {
			return nil, err
		}
		out[i].ID = r.ID
	}
	return out, nil
}

type loaded struct {
	ident string
	tbl   *table.Table
}

// reconcileGone marks deleted the known tables of a connection that the listing neither loaded
// nor listed, in namespaces that were listed completely, once two listings at least the
// confirmation gap apart both lacked them (metadata only; no file is touched). A table seen
// again loses its missing mark.
func (s *Service) reconcileGone(ctx context.Context, c *Connection, cr *ConnectionReport, seen, listed map[string]bool) error {
	rows, err := s.db.IcebergTable.Query().Where(icebergtable.Connection(c.Name), icebergtable.GoneAtIsNil()).All(ctx)
	if err != nil {
		return err
	}
	now := s.clock()
	for _, r := range rows {
		if seen[r.TableUUID] || listed[r.Identifier] || unreachable(cr.Unreachable, r.Identifier) {
			if r.MissingAt != nil && (seen[r.TableUUID] || listed[r.Identifier]) {
				if err := r.Update().ClearMissingAt().Exec(ctx); err != nil {
					return err
				}
			}
			continue
		}
		ch := TableChange{AssetID: r.ID, Identifier: r.Identifier, TableUUID: r.TableUUID}
		if r.MissingAt == nil || now.Sub(*r.MissingAt) < s.gap {
			if r.MissingAt == nil {
				if err := r.Update().SetMissingAt(now).Exec(ctx); err != nil {
					return err
				}
			}
			cr.Missing = append(cr.Missing, ch)
			continue
		}
		if err := s.markGone(ctx, r.ID); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ch.Error = err.Error()
			cr.Failed = append(cr.Failed, ch)
			continue
		}
		cr.Deleted = append(cr.Deleted, ch)
	}
	return nil
}

// listTables lists every namespace of a connection's catalog (nested ones too) and their tables.
// A namespace that cannot be listed is reported in cr.Unreachable. When the catalog's namespaces
// cannot be listed at all, it says so in cr.Error and returns ok false: nothing may be judged
// missing from a listing that did not happen.
func (s *Service) listTables(ctx context.Context, c *Connection, cat icecat.Catalog, cr *ConnectionReport) (tables []table.Identifier, ok bool) {
	queue := []table.Identifier{nil}
	visited := map[string]bool{}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		nss, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			if parent == nil {
				cr.Error = fmt.Sprintf("list namespaces: %v", err)
				s.log.Warn("iceberg catalog unreachable", "connection", c.Name, "err", err)
				return nil, false
			}
			cr.Unreachable = append(cr.Unreachable, NamespaceError{Namespace: strings.Join(parent, ".") + ".*", Error: err.Error()})
			continue
		}
		for _, ns := range nss {
			if !slices.Equal(ns[:min(len(parent), len(ns))], parent) {
				ns = append(slices.Clone(parent), ns...) // a catalog that answers with relative names
			}
			key := strings.Join(ns, ".")
			if len(ns) <= len(parent) || visited[key] {
				continue // some catalogs list the parent itself among its children
			}
			visited[key] = true
			cr.Namespaces++
			queue = append(queue, ns)
			for id, err := range cat.ListTables(ctx, ns) {
				if err != nil {
					cr.Unreachable = append(cr.Unreachable, NamespaceError{Namespace: strings.Join(ns, "."), Error: err.Error()})
					break
				}
				tables = append(tables, id)
			}
		}
	}
	return tables, true
}

func (s *Service) syncConnection(ctx context.Context, c *Connection) (ConnectionReport, error) {
	cr := ConnectionReport{Name: c.Name, Unreachable: []NamespaceError{}, Added: []TableChange{}, Renamed: []TableChange{},
		Restored: []TableChange{}, Deleted: []TableChange{}, Missing: []TableChange{}, Failed: []TableChange{}}
	cat, err := c.Catalog(ctx)
	if err != nil {
		cr.Error = err.Error()
		s.log.Warn("iceberg catalog unreachable", "connection", c.Name, "err", err)
		return cr, ctx.Err()
	}

	// 1. List: every namespace (nested ones too) and its tables; load each table.
	listedAt := s.clock()
	tables, listedAll := s.listTables(ctx, c, cat, &cr)
	if !listedAll {
		return cr, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return cr, err
	}
	cr.Tables = len(tables)
	listed := map[string]bool{}
	seen := map[string]bool{} // table-uuids loaded
	var ok []loaded
	for _, id := range tables {
		ident := strings.Join(id, ".")
		listed[ident] = true
		tbl, err := cat.LoadTable(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return cr, ctx.Err()
			}
			cr.Failed = append(cr.Failed, s.failTable(ctx, c.Name, ident, fmt.Errorf("tables: load: %w", err)))
			continue
		}
		seen[tbl.Metadata().TableUUID().String()] = true
		ok = append(ok, loaded{ident, tbl})
	}

	// 2. Gone (before binding, so a dropped and re-created table releases its name first).
	if err := s.reconcileGone(ctx, c, &cr, seen, listed); err != nil {
		return cr, err
	}

	// 3. Bind and inspect what was loaded: known tables first, so a table renamed away
	// releases its old name before a new table that took that name is bound.
	known := map[string]bool{}
	for _, l := range ok {
		tuuid := l.tbl.Metadata().TableUUID().String()
		k, err := s.db.IcebergTable.Query().Where(icebergtable.TableUUID(tuuid)).Exist(ctx)
		if err != nil {
			return cr, err
		}
		known[tuuid] = k
	}
	slices.SortStableFunc(ok, func(a, b loaded) int {
		ka, kb := known[a.tbl.Metadata().TableUUID().String()], known[b.tbl.Metadata().TableUUID().String()]
		switch {
		case ka == kb:
			return 0
		case ka:
			return -1
		}
		return 1
	})
	for _, l := range ok {
		if err := ctx.Err(); err != nil {
			return cr, err
		}
		tuuid := l.tbl.Metadata().TableUUID().String()
		before, err := s.db.IcebergTable.Query().Where(icebergtable.TableUUID(tuuid)).Only(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return cr, err
		}
		id, action, err := s.bind(ctx, l.tbl, c.Name, l.ident, c.Namespace, l.ident, true, listedAt)
		ch := TableChange{AssetID: id, Identifier: l.ident, TableUUID: tuuid}
		if err != nil {
			if ctx.Err() != nil {
				return cr, ctx.Err()
			}
			ch.Error = err.Error()
			cr.Failed = append(cr.Failed, ch)
			continue
		}
		switch action {
		case "added":
			cr.Added = append(cr.Added, ch)
		case "renamed":
			if before != nil {
				ch.From = before.Identifier
			}
			cr.Renamed = append(cr.Renamed, ch)
		case "restored":
			cr.Restored = append(cr.Restored, ch)
		}
		if before != nil && before.MetadataLocation == l.tbl.MetadataLocation() && before.RefreshedAt != nil && before.Error == "" {
			cr.Unchanged++
			s.versionsOfUnchanged(ctx, id, l.tbl.Metadata())
			continue // same metadata file: nothing new to inspect
		}
		rr, err := s.inspectAndStore(ctx, id, l.tbl, versions.SourceSync)
		cr.ManifestsRead += rr.ManifestsRead
		cr.ManifestsCached += rr.ManifestsCached
		if err != nil {
			if ctx.Err() != nil {
				return cr, ctx.Err()
			}
			var te *TableError
			if !errors.As(err, &te) {
				return cr, err
			}
			ch.Error = te.Err.Error()
			cr.Failed = append(cr.Failed, ch)
			continue
		}
		cr.Refreshed++
	}
	s.log.Info("iceberg catalog synced", "connection", c.Name, "tables", cr.Tables, "added", len(cr.Added),
		"renamed", len(cr.Renamed), "marked_deleted", len(cr.Deleted), "failed", len(cr.Failed), "unreachable_namespaces", len(cr.Unreachable))
	return cr, nil
}

// failTable records a load error on the known table with that identifier, if any.
func (s *Service) failTable(ctx context.Context, conn, ident string, cause error) TableChange {
	ch := TableChange{Identifier: ident, Error: cause.Error()}
	row, err := s.db.IcebergTable.Query().Where(icebergtable.Connection(conn), icebergtable.Identifier(ident)).First(ctx)
	if err == nil {
		ch.AssetID, ch.TableUUID = row.ID, row.TableUUID
		_ = s.recordError(ctx, row.ID, cause)
	}
	s.log.Warn("iceberg table failed", "connection", conn, "identifier", ident, "err", cause)
	return ch
}

// markGone marks the table's asset deleted and the row gone.
func (s *Service) markGone(ctx context.Context, id uuid.UUID) error {
	a, err := s.cat.Get(ctx, id)
	if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	if err == nil && a.Status != catalog.StatusDeleted {
		if _, err := s.cat.Delete(ctx, id, catalog.AnyVersion); err != nil {
			return err
		}
	}
	now := s.clock()
	return s.db.IcebergTable.UpdateOneID(id).SetGoneAt(now).SetUpdatedAt(now).Exec(ctx)
}

// unreachable reports whether an identifier lies in a namespace that could not be listed.
func unreachable(nss []NamespaceError, ident string) bool {
	for _, n := range nss {
		if p, ok := strings.CutSuffix(n.Namespace, ".*"); ok {
			if strings.HasPrefix(ident, p+".") {
				return true
			}
			continue
		}
		if i := strings.LastIndex(ident, "."); i >= 0 && ident[:i] == n.Namespace {
			return true
		}
	}
	return false
}
