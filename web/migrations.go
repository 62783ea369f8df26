package web

import (
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
)

type migrationsData struct {
	Items []reconcile.Migration
	Names map[uuid.UUID]string
}

type migrationData struct {
	Status reconcile.Status
	Names  map[uuid.UUID]string
	Newest *reconcile.Run
	Differ []reconcile.WindowResult // the newest run's windows that are not clean, or lag (the first differPage)
	// MoreDiffer: the newest run has more differing windows than the page shows.
	MoreDiffer bool
	Findings   []reconcile.Finding
	Runs       []reconcile.Run
	Events     []reconcile.Event // the newest recorded deploys
	Chart      streakChart
}

// differPage is how many of the newest run's differing windows the page draws.
const differPage = 100

// streakChart is the streak at each run, oldest first: it grows by one with each clean run and
// falls to zero at a break.
type streakChart struct {
	X      []int64 `json:"x"`
	Streak []int   `json:"streak"`
}

func (u *UI) migrations(w http.ResponseWriter, r *http.Request) {
	ms, err := u.cfg.Reconcile.List(r.Context(), uuid.Nil, 200)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	var ids []uuid.UUID
	for _, m := range ms {
		ids = append(ids, m.OldAssetID, m.NewAssetID)
	}
	d := migrationsData{Items: ms}
	if d.Names, err = u.names(r, ids, false); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "migrations", "Migrations", d)
}

func (u *UI) migration(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a migration ID"})
		return
	}
	ctx := r.Context()
	st, err := u.cfg.Reconcile.Status(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := migrationData{Status: st}
	if d.Runs, err = u.cfg.Reconcile.Runs(ctx, id, 500); err != nil {
		u.fail(w, r, err)
		return
	}
	if d.Findings, err = u.cfg.Reconcile.Findings(ctx, id); err != nil {
		u.fail(w, r, err)
		return
	}
	if d.Events, err = u.cfg.Reconcile.Events(ctx, id, 20); err != nil {
		u.fail(w, r, err)
		return
	}
	ids := []uuid.UUID{st.Migration.OldAssetID, st.Migration.NewAssetID}
	if a := st.Migration.Archive; a != nil && a.AssetID != nil {
		ids = append(ids, *a.AssetID)
	}
	if d.Names, err = u.names(r, ids, false); err != nil {
		u.fail(w, r, err)
		return
	}
	if len(d.Runs) > 0 {
		// The page draws the newest run's differing windows, a page of them; the rest are an API
		// page away (windows_url).
		d.Newest = &d.Runs[0]
		if d.Differ, d.MoreDiffer, err = u.cfg.Reconcile.Windows(ctx, id, d.Newest.ID, reconcile.WindowQuery{Limit: differPage, Differing: true}); err != nil {
			u.fail(w, r, err)
			return
		}
	}
	streak := 0
	for _, run := range slices.Backward(d.Runs) {
		if run.FinishedAt == nil {
			continue
		}
		if run.Clean {
			streak++
		} else {
			streak = 0
		}
		d.Chart.X = append(d.Chart.X, run.StartedAt.Unix())
		d.Chart.Streak = append(d.Chart.Streak, streak)
	}
	if len(d.Runs) > 50 {
		d.Runs = d.Runs[:50]
	}
	u.render(w, r, http.StatusOK, "migration", "Migration "+short(id), d)
}
