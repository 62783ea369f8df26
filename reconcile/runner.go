package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/reconciliationrun"
)

// Cost is what a run read.
type Cost struct {
	// RowsOld and RowsNew are the records Tidemark read from each side (every pass); Counted
	// the records a side counted and hashed itself (PostgreSQL), sending only the figures.
	RowsOld int64 `json:"rows_old"`
	RowsNew int64 `json:"rows_new"`
	Counted int64 `json:"counted"`
	// Compared is the records the run's figures cover, both sides; Deep the windows looked into
	// segment by segment.
	Compared int64 `json:"compared"`
	Deep     int64 `json:"deep_windows"`
	// ReusedDeep: windows whose record-by-record comparison is the previous run's, because this
	// run would have looked into exactly the same windows and neither side changed in them.
	ReusedDeep int64 `json:"reused_deep_windows"`
	// Kept is the records of the deep windows' differing key-range segments the run held and
	// compared record by record.
	Kept int64 `json:"kept"`
	// Reused counts the windows whose new-side figures are the previous run's (an Iceberg new
	// side, or a PostgreSQL one with a change log, in which nothing changed there since),
	// ReusedOld the old side's (a change log); NewSnapshot is the Iceberg snapshot this run read.
	Reused      int64  `json:"reused_windows"`
	ReusedOld   int64  `json:"reused_windows_old"`
	NewSnapshot *int64 `json:"new_snapshot,omitempty"`
	// ChangeLog says, per side with a change log, what the run read of it: the windows changed
	// and reused, or why it read the side in full.
	ChangeLog []string `json:"change_log,omitempty"`
	Bytes     int64    `json:"bytes"` // of the compared values, as text
	Seconds   float64  `json:"seconds"`
}

// Run is one reconciliation run.
type Run struct {
	ID          uuid.UUID  `json:"id"`
	MigrationID uuid.UUID  `json:"migration_id"`
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Origin      string     `json:"origin"`
	// Against is live (the old side as it lives) or archive (the final reconciliation).
	Against string  `json:"against"`
	Clean   bool    `json:"clean"`
	Summary Summary `json:"summary"`
	// Windows are the run's windows on the run just made only; stored runs answer them a page at
	// a time (Windows).
	Windows []WindowResult `json:"-"`
	// Causes say why the run is not clean (empty when it is): the first of them, Summary counts all.
	Causes []string `json:"causes"`
	Cost   Cost     `json:"cost"`
	Error  string   `json:"error,omitempty"`
	// legacy: stored before windows were rows; its windows are in its result document.
	legacy bool
	// hashing names how the run hashed records (stored: a later run reuses figures hashed alike).
	hashing string
	logs    [2]string // the change log snapshots the run read its PostgreSQL sides at
}

// Reconcile reads both sides of the migration from its first window to now, compares them,
// records the run (clean or not, with the cause of every break) and opens or closes findings.
// A run that cannot read a side is recorded as failed: it breaks the streak. One run of a
// migration runs at a time (a second is refused as a conflict), and this process runs at most
// WithMaxRuns at once (more are refused as unavailable).
func (s *Service) Reconcile(ctx context.Context, id uuid.UUID) (Run, error) {
	m, err := s.Get(ctx, id)
	if err != nil {
		return Run{}, err
	}
	if !m.Readable() {
		return Run{}, invalid("spec", "migration %s has a side Tidemark cannot read: its runs are posted by the external checker", id)
	}
	free, err := s.slot(id)
	if err != nil {
		return Run{}, err
	}
	defer free()
	release, err := s.claim(ctx, id)
	if err != nil {
		return Run{}, err
	}
	defer release()
	started := s.clock()
	against := reconciliationrun.AgainstLive
	if m.final() {
		against = reconciliationrun.AgainstArchive // the final reconciliation
	}
	var row *ent.ReconciliationRun
	err = s.tx(ctx, func(tx *ent.Tx) error {
		var err error
		row, err = tx.ReconciliationRun.Create().SetMigrationID(id).SetStartedAt(started).SetOrigin(reconciliationrun.OriginTidemark).
			SetAgainst(against).Save(ctx)
		if err != nil {
			return err
		}
		// A run reads the databases the spec names: who started it is in the audit log.
		return s.audit(ctx, tx, "migration.run", id, m.OldAssetID, nil, map[string]any{"run_id": row.ID, "against": string(against)})
	})
	if err != nil {
		return Run{}, fmt.Errorf("reconcile: record the run: %w", err)
	}
	t0 := time.Now()
	res, cerr := s.compareSides(ctx, m, started, against == reconciliationrun.AgainstArchive)
	res.Cost.Seconds = time.Since(t0).Seconds()
	run := Run{ID: row.ID, MigrationID: id, StartedAt: started, Origin: string(reconciliationrun.OriginTidemark), Against: string(against),
		Windows: res.Windows, Cost: res.Cost, hashing: res.hashing, logs: res.logs}
	if cerr != nil {
		run.Error = cerr.Error()
		res.Causes = []string{"the run could not read both sides: " + cerr.Error()}
	} else if res.Cost.Compared == 0 {
		res.Causes = append(res.Causes, nothingCompared(m, started))
	}
	run.Clean = cerr == nil && len(res.Causes) == 0
	s.nameWriters(ctx, m, run.Windows)
	if err := s.finish(ctx, m, &run, res.Causes); err != nil {
		return run, err
	}
	s.log.Info("reconciliation run", "migration_id", id, "run_id", run.ID, "clean", run.Clean, "windows", len(run.Windows),
		"rows_old", run.Cost.RowsOld, "rows_new", run.Cost.RowsNew, "seconds", run.Cost.Seconds)
	if cerr != nil {
		return run, fmt.Errorf("reconcile: migration %s: %w", id, cerr)
	}
	return run, nil
}

// nothingCompared is the cause of a run that compared no rows: it proves nothing, so it is not
// clean (a time column matching no rows, or sides not written yet, must not grow a streak).
func nothingCompared(m Migration, now time.Time) string {
	return fmt.Sprintf("the run compared no rows on either side from %s to %s: nothing was compared, so nothing is shown to agree (check the time column %q and the sides)",
		m.Spec.Since.Format(time.RFC3339), now.Format(time.RFC3339), m.Spec.TimeColumn)
}

func (s *Service) reader(spec *Spec, src SourceSpec, asset uuid.UUID) (reader, error) {
	if src.AssetID != nil {
		asset = *src.AssetID // an archive table
	}
	switch src.Kind {
	case SourcePostgres:
		db := s.conns[src.Connection]
		if db == nil {
			return nil, fmt.Errorf("no PostgreSQL connection named %q is configured", src.Connection)
		}
		return &postgresReader{db: db, table: src.Table, spec: spec}, nil
	case SourceIceberg:
		if s.tables == nil {
			return nil, errors.New("the Iceberg tables service is not available in this process")
		}
		return &icebergReader{tables: s.tables, asset: asset, snapshot: src.SnapshotID, spec: spec}, nil
	}
	return nil, fmt.Errorf("a %s side cannot be read by Tidemark", src.Kind)
}

// comparison is what compareSides found.
type comparison struct {
	Windows []WindowResult
	Causes  []string
	Cost    Cost
	hashing string
	logs    [2]string
}

func (s *Service) compareSides(ctx context.Context, m Migration, now time.Time, archive bool) (comparison, error) {
	var res comparison
	spec := &m.Spec
	if n := spec.windowsUntil(now); n > MaxWindows {
		return res, fmt.Errorf("the migration spans %d windows of %s since %s, more than the %d a run may hold: create it again with a wider window or a later since",
			n, spec.Window(), spec.Since.Format(time.RFC3339), MaxWindows)
	}
	oldSrc, oldName := spec.Old, "old"
	if archive {
		oldSrc, oldName = *m.Archive, "archive of the old"
	}
	sides := [2]runSide{{src: oldSrc, asset: m.OldAssetID, name: oldName, rows: &res.Cost.RowsOld},
		{src: spec.New, asset: m.NewAssetID, name: "new", rows: &res.Cost.RowsNew}}
	// The first pass: every window's figures on each side, both sides at once (PostgreSQL
	// aggregates in its own process while Tidemark streams the other side).
	for i := range sides {
		sd := &sides[i]
		r, err := s.reader(spec, sd.src, sd.asset)
		if err != nil {
			return res, fmt.Errorf("the %s side: %w", sd.name, err)
		}
		sd.r = r
	}
	plan, err := planHashes(ctx, sides[0].r, sides[1].r)
	if err != nil {
		return res, err
	}
	spec.hashing, res.hashing = plan, plan.String()
	against := reconciliationrun.AgainstLive
	if archive {
		against = reconciliationrun.AgainstArchive
	}
	prev := &previous{}
	if spec.New.Kind == SourceIceberg || spec.Old.ChangeLog != "" || spec.New.ChangeLog != "" {
		if p, err := s.lastFigures(ctx, m, against, res.hashing); err != nil {
			return res, err
		} else if p != nil {
			prev = p
		}
	}
	var bytes [2]int64
	g, gctx := errgroup.WithContext(ctx)
	for i := range sides {
		sd := &sides[i]
		g.Go(func() (err error) {
			bytes[i], err = sd.firstPass(gctx, spec, prev.sides[i], prev.snapshot, now)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Cost.NewSnapshot = snapshotOf(sides[1].r)
	res.Cost.ReusedOld, res.Cost.Reused = sides[0].figs.reused, sides[1].figs.reused
	for i, sd := range sides {
		if l := sd.figs.log; l != nil {
			res.logs[i] = l.snapshot
			res.Cost.ChangeLog = append(res.Cost.ChangeLog, sd.name+" side: "+l.note)
		}
		res.Cost.Bytes += bytes[i]
		*sd.rows += sd.figs.read
		res.Cost.Counted += sd.figs.counted
	}
	for _, sd := range sides {
		for _, f := range sd.figs.windows {
			res.Cost.Compared += f.rows
		}
	}
	compared := map[time.Time]WindowResult{}
	var skipped map[int64]bool
	if reused, ok := reusedComparisons(prev, sides[0].figs, sides[1].figs); ok {
		for _, w := range reused {
			compared[w.Start] = w
		}
		res.Cost.ReusedDeep = int64(len(reused))
	} else {
		// The second pass: records of the windows that differ, as many as the bound allows.
		old, nw, deep, skip, err := secondPass(ctx, spec, &sides, now, &res.Cost)
		if err != nil {
			return res, err
		}
		res.Cost.Deep, skipped = int64(len(deep)), skip
		for _, w := range compare(spec, old, nw, now) {
			compared[w.Start] = w
		}
	}
	res.Windows = mergeWindows(spec, sides[0].figs, sides[1].figs, compared, skipped, now)
	for _, w := range res.Windows {
		if !w.Clean() {
			for _, why := range w.Why {
				res.Causes = append(res.Causes, fmt.Sprintf("window %s: %s", w.Start.Format(time.RFC3339), why))
			}
		}
	}
	return res, nil
}

// runSide is one side of a run: how it is read, and its first pass's figures.
type runSide struct {
	src   SourceSpec
	asset uuid.UUID
	name  string
	rows  *int64 // the run's cost: records read from this side
	r     reader
	figs  sideFigures
}

// firstPass computes the side's figures: by PostgreSQL itself when it can (incrementally from
// prev with a change log), incrementally from prev on an Iceberg side read at snapshot from
// before, or by streaming the side. It returns the bytes it read.
func (sd *runSide) firstPass(ctx context.Context, spec *Spec, prev *prevSide, from *int64, now time.Time) (int64, error) {
	if pr, ok := sd.r.(*postgresReader); ok {
		f, pushed, err := pr.figures(ctx, sd.src, spec.Since, now, prev)
		if err != nil {
			return 0, fmt.Errorf("the %s side: %w", sd.name, err)
		}
		if pushed {
			sd.figs = f
			return 0, nil
		}
	}
	if ir, ok := sd.r.(*icebergReader); ok && prev != nil && from != nil {
		f, n, ok, err := incrementalFigures(ctx, spec, sd.src, ir, prev, *from, now)
		if err != nil {
			return n, fmt.Errorf("the %s side: %w", sd.name, err)
		}
		if ok {
			sd.figs = f
			return n, nil
		}
	}
	f, n, err := streamFigures(ctx, spec, sd.src, sd.r, spec.Since, now)
	if err != nil {
		return n, fmt.Errorf("the %s side: %w", sd.name, err)
	}
	sd.figs = f
	return n, nil
}

// readWindows reads the side's records of the windows ws: in one scan from a side PostgreSQL
// computed figures for or an Iceberg side (a data file holding several ranges is read once),
// else a read a range of consecutive windows.
func (sd *runSide) readWindows(ctx context.Context, spec *Spec, ws []int64, now time.Time, fn func(row)) (int64, error) {
	if pr, ok := sd.r.(*postgresReader); ok && sd.figs.pushed {
		return pr.readWindows(ctx, ws, now, fn)
	}
	var spans [][2]time.Time
	for _, span := range ranges(ws) {
		from, to := windowStart(spec, span[0]), windowStart(spec, span[1]+1)
		if to.After(now) {
			to = now // what the first pass counted
		}
		spans = append(spans, [2]time.Time{from, to})
	}
	if ir, ok := sd.r.(*icebergReader); ok {
		return ir.readSpans(ctx, spans, fn)
	}
	var bytes int64
	for _, sp := range spans {
		n, err := sd.r.read(ctx, sp[0], sp[1], fn)
		bytes += n
		if err != nil {
			return bytes, err
		}
	}
	return bytes, nil
}

// secondPass looks into the windows whose figures differ: segment figures on both sides, then
// the records of the differing segments, collected by key for the comparison.
func secondPass(ctx context.Context, spec *Spec, sides *[2]runSide, now time.Time, cost *Cost) (*side, *side, []int64, map[int64]bool, error) {
	cands := candidates(sides[0].figs, sides[1].figs)
	// Segment figures of the candidate windows, then their differing segments' records.
	segs := [2]map[segKey]segFig{{}, {}}
	for i := range sides {
		sd, m := &sides[i], segs[i]
		need := sd.figs.segmentsInto(cands, m)
		if len(need) == 0 {
			continue // the first pass computed them
		}
		if pr, ok := sd.r.(*postgresReader); ok && sd.figs.pushed {
			if done, err := pr.segments(ctx, need, now, m); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("the %s side: %w", sd.name, err)
			} else if done {
				continue // PostgreSQL counted them itself
			}
		}
		bytes, err := sd.readWindows(ctx, spec, need, now, func(rw row) {
			kh, h := spec.hashing.hashes(rw, len(spec.KeyColumns)) // one pass over the values for both
			k := segKey{windowIndex(spec, rw.at), int64(kh >> (64 - segBits))}
			f := m[k]
			f.rows++
			f.sum += h
			m[k] = f
			*sd.rows++
		})
		cost.Bytes += bytes
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("the %s side: %w", sd.name, err)
		}
	}
	keep, deep, skipped := keptSegments(cands, sides[0].figs, sides[1].figs, segs)
	old, nw := newSide(sides[0].src, spec.DedupOld, len(spec.KeyColumns)), newSide(spec.New, spec.DedupNew, len(spec.KeyColumns))
	if len(deep) == 0 {
		return old, nw, deep, skipped, nil
	}
	for i, into := range []*side{old, nw} {
		sd := &sides[i]
		bytes, err := sd.readWindows(ctx, spec, deep, now, func(rw row) {
			*sd.rows++
			if keep[segKey{windowIndex(spec, rw.at), segmentOf(spec, rw)}] {
				into.add(rw)
				cost.Kept++
			}
		})
		cost.Bytes += bytes
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("the %s side: %w", sd.name, err)
		}
	}
	return old, nw, deep, skipped, nil
}
