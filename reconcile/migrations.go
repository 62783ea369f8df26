package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetmigration"
)

// Migration is a migration as kept.
type Migration struct {
	ID         uuid.UUID
	OldAssetID uuid.UUID
	NewAssetID uuid.UUID
	Owner      string
	Spec       Spec
	State      string
	CutOverAt  *time.Time
	// Archive is where the old side's data was kept at the cutover: runs after the cutover read
	// it instead of the old side, and retirement waits for a clean one.
	Archive   *SourceSpec
	Version   int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CreateInput is a new migration.
type CreateInput struct {
	OldAssetID, NewAssetID uuid.UUID
	Owner                  string
	Spec                   Spec
}

// Check says every problem of a migration's input at once (errors.Join of catalog.Errors, each
// naming its field), writing nothing: a form shows them all, so a person fixes it in one go.
// It fills the spec's defaults in.
func (s *Service) Check(ctx context.Context, in *CreateInput) error {
	var problems []error
	if in.OldAssetID == in.NewAssetID {
		problems = append(problems, invalid("new_asset_id", "the old and the new asset must differ"))
	}
	if in.Owner == "" {
		problems = append(problems, invalid("owner", "name the migration's owner: findings go to them"))
	}
	problems = append(problems, in.Spec.check(s.clock()))
	for _, side := range []struct {
		field string
		id    uuid.UUID
	}{{"old_asset_id", in.OldAssetID}, {"new_asset_id", in.NewAssetID}} {
		_, err := s.cat.Get(ctx, side.id)
		switch {
		case errors.Is(err, catalog.ErrNotFound):
			problems = append(problems, &catalog.Error{Kind: catalog.ErrNotFound, Field: side.field, Message: "no asset has the ID " + side.id.String()})
		case err != nil:
			return err
		}
	}
	for _, side := range []SourceSpec{in.Spec.Old, in.Spec.New} {
		if side.Kind == SourcePostgres && side.Connection != "" && s.conns[side.Connection] == nil {
			problems = append(problems, invalid("spec", "no PostgreSQL connection named %q is configured", side.Connection))
		}
	}
	return errors.Join(problems...)
}

// Create records a migration. Both assets must exist and differ; the spec must state every rule.
func (s *Service) Create(ctx context.Context, in CreateInput) (Migration, error) {
	if err := s.Check(ctx, &in); err != nil {
		return Migration{}, err
	}
	spec, err := json.Marshal(in.Spec)
	if err != nil {
		return Migration{}, err
	}
	now := s.clock()
	var row *ent.DatasetMigration
	err = s.tx(ctx, func(tx *ent.Tx) error {
		var err error
		row, err = tx.DatasetMigration.Create().SetOldAssetID(in.OldAssetID).SetNewAssetID(in.NewAssetID).SetOwner(in.Owner).
			SetSpec(string(spec)).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return err
		}
		// Creating one makes the server read the databases the spec names: an admin act.
		return s.audit(ctx, tx, "migration.create", row.ID, in.OldAssetID, nil, map[string]any{"new_asset_id": in.NewAssetID,
			"owner": in.Owner, "old_side": in.Spec.Old.describe(), "new_side": in.Spec.New.describe()})
	})
	if err != nil {
		return Migration{}, fmt.Errorf("reconcile: create the migration: %w", err)
	}
	s.pairs.drop()
	return toMigration(row)
}

// tx runs fn in one transaction: a change and its audit record commit or fail together.
func (s *Service) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// audit records a migration's change in the old asset's audit log (the asset the migration
// moves away from), naming the migration.
func (s *Service) audit(ctx context.Context, tx *ent.Tx, action string, id, asset uuid.UUID, before, after map[string]any) error {
	if after == nil {
		after = map[string]any{}
	}
	after["migration_id"] = id
	return s.cat.RecordAudit(ctx, tx, action, asset, before, after)
}

func toMigration(r *ent.DatasetMigration) (Migration, error) {
	m := Migration{ID: r.ID, OldAssetID: r.OldAssetID, NewAssetID: r.NewAssetID, Owner: r.Owner, State: string(r.State),
		CutOverAt: r.CutOverAt, Version: r.Version, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if err := json.Unmarshal([]byte(r.Spec), &m.Spec); err != nil {
		return m, fmt.Errorf("reconcile: the spec of migration %s: %w", r.ID, err)
	}
	if r.Archive != "" {
		m.Archive = &SourceSpec{}
		if err := json.Unmarshal([]byte(r.Archive), m.Archive); err != nil {
			return m, fmt.Errorf("reconcile: the archive of migration %s: %w", r.ID, err)
		}
	}
	return m, nil
}

// final reports whether a run now is the final reconciliation: cut over, against the archive.
func (m Migration) final() bool {
	return m.State == string(datasetmigration.StateCutOver) && m.Archive != nil
}

// Readable reports whether Tidemark reads both sides of a run now (the archive standing for the
// old side after the cutover).
func (m Migration) Readable() bool {
	old := m.Spec.Old.Kind
	if m.final() {
		old = m.Archive.Kind
	}
	return old != SourceExternal && m.Spec.New.Kind != SourceExternal
}

// Get returns a migration.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Migration, error) {
	r, err := s.db.DatasetMigration.Get(ctx, id)
	if ent.IsNotFound(err) {
		return Migration{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("migration %s does not exist", id)}
	}
	if err != nil {
		return Migration{}, fmt.Errorf("reconcile: read migration %s: %w", id, err)
	}
	return toMigration(r)
}

// List returns migrations, newest first; with asset set, those it is the old or new side of.
func (s *Service) List(ctx context.Context, asset uuid.UUID, limit int) ([]Migration, error) {
	return s.Page(ctx, ListQuery{Asset: asset, Limit: limit})
}

// ListQuery selects a page of migrations, newest first.
type ListQuery struct {
	Asset  uuid.UUID // the old or the new side; uuid.Nil for every migration
	Before uuid.UUID // the page continues after this migration (the previous page's last)
	Limit  int
}

// Page lists a page of migrations, newest first (IDs are UUIDv7: their order is creation order).
func (s *Service) Page(ctx context.Context, lq ListQuery) ([]Migration, error) {
	q := s.db.DatasetMigration.Query()
	if lq.Asset != uuid.Nil {
		q = q.Where(datasetmigration.Or(datasetmigration.OldAssetID(lq.Asset), datasetmigration.NewAssetID(lq.Asset)))
	}
	if lq.Before != uuid.Nil {
		q = q.Where(datasetmigration.IDLT(lq.Before))
	}
	rows, err := q.Order(ent.Desc(datasetmigration.FieldID)).Limit(lq.Limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: list migrations: %w", err)
	}
	out := make([]Migration, len(rows))
	for i, r := range rows {
		if out[i], err = toMigration(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}
