package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/migrationevent"
)

// EventKind is what happened to a migration's sides.
type EventKind string

// Event kinds.
const (
	// Deploy: the new side's writer was deployed (a new version); the streak must span one
	// when the rule asks for it.
	Deploy EventKind = "deploy"
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
