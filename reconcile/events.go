package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetmigration"
	"github.com/tidemark/tidemark/ent/migrationevent"
	"github.com/tidemark/tidemark/internal/clip"
)

// EventKind is what happened to a migration's sides.
type EventKind string

// Event kinds.
const (
	// Deploy: the new side's writer was deployed (a new version); the streak must span one
	// when the rule asks for it.
	Deploy EventKind = "deploy"
	// WriterSeen: the first version of a writer job OpenLineage named (not a deploy).
	WriterSeen EventKind = "writer_seen"
)

// Event is something recorded against a migration that its streak must span.
type Event struct {
	ID          uuid.UUID
	MigrationID uuid.UUID
	Kind        EventKind
	At          time.Time
	Note        string
	RecordedBy  string
	CreatedAt   time.Time
}

// EventInput is a new event.
type EventInput struct {
	Kind       EventKind
	At         time.Time // zero: now
	Note       string
	RecordedBy string
}

// maxEventNote bounds an event's note, in bytes.
const maxEventNote = 1000

// RecordEvent records an event of a migration: a deploy at a time from the migration's first
// window up to now (a deploy in the future has not happened; one before the first window is
// outside everything a run compares).
func (s *Service) RecordEvent(ctx context.Context, id uuid.UUID, in EventInput) (Event, error) {
	m, err := s.Get(ctx, id)
	if err != nil {
		return Event{}, err
	}
	if in.Kind != Deploy {
		return Event{}, invalid("kind", "the event kind must be %q, not %q", Deploy, in.Kind)
	}
	now := s.clock()
	at := in.At.UTC().Truncate(time.Microsecond)
	if in.At.IsZero() {
		at = now
	}
	if at.After(now) || at.Before(m.Spec.Since) {
		return Event{}, invalid("at", "the deploy's time must be from the migration's first window (%s) to now, not %s",
			m.Spec.Since.Format(time.RFC3339), at.Format(time.RFC3339))
	}
	if len(in.Note) > maxEventNote {
		return Event{}, invalid("note", "the note must be at most %d bytes, not %d", maxEventNote, len(in.Note))
	}
	r, err := s.db.MigrationEvent.Create().SetMigrationID(id).SetKind(migrationevent.Kind(in.Kind)).SetAt(at).
		SetNote(in.Note).SetRecordedBy(in.RecordedBy).SetCreatedAt(now).Save(ctx)
	if err != nil {
		return Event{}, fmt.Errorf("reconcile: record the event: %w", err)
	}
	return toEvent(r), nil
}

// MaxEvents is the most events Events answers.
const MaxEvents = 500

// Events returns a migration's newest events, newest first, at most limit (up to MaxEvents).
func (s *Service) Events(ctx context.Context, id uuid.UUID, limit int) ([]Event, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	rows, err := s.db.MigrationEvent.Query().Where(migrationevent.MigrationID(id)).
		Order(ent.Desc(migrationevent.FieldAt), ent.Desc(migrationevent.FieldID)).Limit(min(max(limit, 1), MaxEvents)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = toEvent(r)
	}
	return out, nil
}

func toEvent(r *ent.MigrationEvent) Event {
	return Event{ID: r.ID, MigrationID: r.MigrationID, Kind: EventKind(r.Kind), At: r.At.UTC(), Note: r.Note,
		RecordedBy: r.RecordedBy, CreatedAt: r.CreatedAt.UTC()}
}

// WriterRun is a completed run lineage saw: its job, when, the version its event stated, and
// the assets it wrote.
type WriterRun struct {
	RunID   string
	JobID   uuid.UUID
	At      time.Time
	Version string
	Outputs []uuid.UUID
}

// maxVersion bounds a writer version kept from an event, in bytes.
const maxVersion = 200

// ObserveWriters records, for every active migration whose new asset a run wrote, the writer
// job's version: the first one seen is a baseline (writer_seen), and a later run stating another
// version is a deploy, counted for the streak like one posted through the API. Runs older than
// the newest observation of their job are skipped (events arrive out of order). It runs inside
// the caller's transaction when ctx carries one (lineage's ingest batch), so a deploy is kept
// exactly when its event is.
func (s *Service) ObserveWriters(ctx context.Context, runs []WriterRun) error {
	db := s.db
	if tx := ent.TxFromContext(ctx); tx != nil {
		db = tx.Client()
	}
	var outputs []uuid.UUID
	for _, r := range runs {
		if r.Version != "" {
			outputs = append(outputs, r.Outputs...)
		}
	}
	if len(outputs) == 0 {
		return nil
	}
	ms, err := db.DatasetMigration.Query().Where(datasetmigration.NewAssetIDIn(outputs...),
		datasetmigration.StateEQ(datasetmigration.StateActive)).All(ctx)
	if err != nil || len(ms) == 0 {
		return err
	}
	now := s.clock()
	for _, r := range runs {
		if r.Version == "" {
			continue
		}
		for _, row := range ms {
			if !slices.Contains(r.Outputs, row.NewAssetID) {
				continue
			}
			m, err := toMigration(row)
			if err != nil {
				return err
			}
			if err := observe(ctx, db, m, r, now); err != nil {
				return err
			}
		}
	}
	return nil
}

func observe(ctx context.Context, db *ent.Client, m Migration, r WriterRun, now time.Time) error {
	at := r.At.UTC().Truncate(time.Microsecond)
	if at.Before(m.Spec.Since) {
		return nil // before anything a run compares
	}
	if at.After(now) {
		at = now
	}
	by := "openlineage:" + r.JobID.String()
	version := clip.String(r.Version, maxVersion)
	last, err := db.MigrationEvent.Query().Where(migrationevent.MigrationID(m.ID), migrationevent.RecordedBy(by)).
		Order(ent.Desc(migrationevent.FieldAt), ent.Desc(migrationevent.FieldID)).First(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return fmt.Errorf("reconcile: the writer's last version: %w", err)
	}
	kind := migrationevent.KindWriterSeen
	switch {
	case last == nil:
	case last.Note == version || !at.After(last.At):
		return nil // the same version, or an older run than the last seen
	default:
		kind = migrationevent.KindDeploy
	}
	err = db.MigrationEvent.Create().SetMigrationID(m.ID).SetKind(kind).SetAt(at).SetNote(version).SetRecordedBy(by).
		SetCreatedAt(now).Exec(ctx)
	if err != nil {
		return fmt.Errorf("reconcile: record the writer's version: %w", err)
	}
	return nil
}
