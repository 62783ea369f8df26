package reconcile

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/reconciliationrun"
)

// WindowFigures are an external checker's figures for one window (a side Tidemark cannot read).
type WindowFigures struct {
	Start time.Time
	Old   SideFigures
	New   SideFigures
}

// maxChecksum bounds a posted checksum's length.
const maxChecksum = 128

// checkFigures refuses figures no side could have: negative counts, more keys than rows, more
// repeated keys than keys (or than the rows beyond one a key allow), a missing checksum on a
// side with rows.
func checkFigures(at time.Time, which string, keys KeyRule, f SideFigures) error {
	where := func(format string, args ...any) error {
		return invalid("windows", "window %s, %s side: %s", at.Format(time.RFC3339), which, fmt.Sprintf(format, args...))
	}
	switch {
	case f.Rows < 0 || f.Keys < 0 || f.DuplicateKeys < 0:
		return where("rows, keys and duplicate_keys must not be negative (%d, %d, %d)", f.Rows, f.Keys, f.DuplicateKeys)
	case f.Keys > f.Rows:
		return where("%d keys in %d rows: a key needs a row", f.Keys, f.Rows)
	case f.Rows > 0 && f.Keys == 0:
		return where("%d rows and no key: every row has a key", f.Rows)
	case f.DuplicateKeys > f.Keys || f.DuplicateKeys > f.Rows-f.Keys:
		return where("%d repeated keys among %d keys in %d rows: a repeated key has at least two rows", f.DuplicateKeys, f.Keys, f.Rows)
	case f.Versions < 0 || f.Versions > f.Rows-f.Keys:
		return where("%d versions in %d rows for %d keys: a version is a row beyond its key's first", f.Versions, f.Rows, f.Keys)
	case f.Versions > 0 && keys != HistoryKeys:
		return where("%d versions on a side whose keys are unique: a side that keeps versions states \"keys\": \"history\"", f.Versions)
	case f.Rows > 0 && f.Checksum == "":
		return where("a side with rows needs its checksum (an empty checksum would compare equal to nothing)")
	case len(f.Checksum) > maxChecksum || strings.ContainsFunc(f.Checksum, func(r rune) bool { return r <= ' ' || r > '~' }):
		return where("the checksum must be at most %d printable ASCII characters without spaces", maxChecksum)
	}
	return nil
}

// PostRun records a run whose figures an external checker computed, classified like Tidemark's
// own: duplicate keys are duplication; fewer keys on the new side are lag in the newest windows
// within the lag bound and divergence before; more keys on the new side, or the same keys with a
// different checksum, are divergence. Only a migration with an external side takes posted
// figures: Tidemark's own reads are the only evidence for the others. Figures no side could have
// are refused with what is wrong, and nothing is written.
func (s *Service) PostRun(ctx context.Context, id uuid.UUID, figures []WindowFigures) (Run, error) {
	m, err := s.Get(ctx, id)
	if err != nil {
		return Run{}, err
	}
	if m.Spec.Old.Kind != SourceExternal && m.Spec.New.Kind != SourceExternal {
		return Run{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf(
			"migration %s: Tidemark reads both sides itself, so it takes no posted figures; POST its runs without a body to reconcile now", id)}
	}
	if len(figures) == 0 || len(figures) > MaxWindows {
		return Run{}, invalid("windows", "post from 1 to %d windows, not %d", MaxWindows, len(figures))
	}
	now := s.clock()
	var res comparison
	seen := map[int64]bool{}
	for _, f := range figures {
		st := f.Start.UTC()
		if st.Before(m.Spec.Since) || !st.Before(now) || st.Sub(m.Spec.Since)%m.Spec.Window() != 0 {
			return Run{}, invalid("windows", "window %s does not start on the migration's window grid before now (from %s, every %s)",
				st.Format(time.RFC3339), m.Spec.Since.Format(time.RFC3339), m.Spec.Window())
		}
		if seen[st.Unix()] {
			return Run{}, invalid("windows", "window %s is posted twice", st.Format(time.RFC3339))
		}
		seen[st.Unix()] = true
		if err := checkFigures(st, "old", m.Spec.Old.Keys, f.Old); err != nil {
			return Run{}, err
		}
		if err := checkFigures(st, "new", m.Spec.New.Keys, f.New); err != nil {
			return Run{}, err
		}
		var ok1, ok2 bool
		if res.Cost.RowsOld, ok1 = addChecked(res.Cost.RowsOld, f.Old.Rows); ok1 {
			res.Cost.RowsNew, ok2 = addChecked(res.Cost.RowsNew, f.New.Rows)
		}
		if !ok1 || !ok2 {
			return Run{}, invalid("windows", "the posted rows add up past %d: post real counts", int64(math.MaxInt64))
		}
		w := fromFigures(&m.Spec, st, f.Old, f.New, now)
		res.Windows = append(res.Windows, w)
		if !w.Clean() {
			for _, why := range w.Why {
				res.Causes = append(res.Causes, fmt.Sprintf("window %s: %s", st.Format(time.RFC3339), why))
			}
		}
	}
	var ok bool
	if res.Cost.Compared, ok = addChecked(res.Cost.RowsOld, res.Cost.RowsNew); !ok {
		return Run{}, invalid("windows", "the posted rows add up past %d: post real counts", int64(math.MaxInt64))
	}
	if res.Cost.Compared == 0 {
		res.Causes = append(res.Causes, nothingCompared(m, now))
	}
	slices.SortFunc(res.Windows, func(a, b WindowResult) int { return a.Start.Compare(b.Start) })
	release, err := s.claim(ctx, id)
	if err != nil {
		return Run{}, err
	}
	defer release()
	against := reconciliationrun.AgainstLive
	if m.final() {
		against = reconciliationrun.AgainstArchive // the checker compared the archive
	}
	row, err := s.db.ReconciliationRun.Create().SetMigrationID(id).SetStartedAt(now).SetOrigin(reconciliationrun.OriginExternal).
		SetAgainst(against).Save(ctx)
	if err != nil {
		return Run{}, fmt.Errorf("reconcile: record the run: %w", err)
	}
	run := Run{ID: row.ID, MigrationID: id, StartedAt: now, Origin: string(reconciliationrun.OriginExternal), Against: string(against), Windows: res.Windows,
		Cost: res.Cost, Clean: len(res.Causes) == 0}
	s.nameWriters(ctx, m, run.Windows)
	return run, s.finish(ctx, m, &run, res.Causes)
}

// addChecked adds two non-negative counts, reporting false past MaxInt64.
func addChecked(a, b int64) (int64, bool) {
	if b > math.MaxInt64-a {
		return 0, false
	}
	return a + b, true
}
