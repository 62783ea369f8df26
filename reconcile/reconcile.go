package reconcile

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetmigration"
	"github.com/tidemark/tidemark/ent/reconciliationfinding"
	"github.com/tidemark/tidemark/ent/reconciliationrun"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"

	"github.com/tidemark/tidemark/internal/loop"
)

// Service keeps migrations and runs their reconciliations.
type Service struct {
	db     *ent.Client
	cat    *catalog.Catalog
	tables *tables.Service
	usage  *usage.Service
	conns  map[string]*sql.DB // read-only PostgreSQL connections by name
	now    func() time.Time
	log    *slog.Logger
	pairs  pairs
	slots  chan struct{} // the process's run slots (WithMaxRuns)
	// writers finds the runs that wrote an asset during a window (WithWriters).
	writers func(ctx context.Context, asset uuid.UUID, from, to time.Time, limit int) ([]Writer, error)
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces time.Now.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithConnection names a PostgreSQL database a migration's side may be read from. Give it a
// role that can only read: runs open read-only transactions, but the role is the real guard.
func WithConnection(name string, db *sql.DB) Option {
	return func(s *Service) { s.conns[name] = db }
}

// Writer is a run that wrote the new side during a window with duplicated keys: where to look
// for the cause.
type Writer struct {
	RunID      string     `json:"run_id"`
	JobAssetID uuid.UUID  `json:"job_asset_id"`
	State      string     `json:"state"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
}

// Connections names the PostgreSQL databases a side may be read from, sorted (a form offers them).
func (s *Service) Connections() []string {
	return slices.Sorted(maps.Keys(s.conns))
}

// WithWriters sets how a run finds the runs that wrote the new asset during a window (lineage's
// record of runs): windows with duplicated keys on the new side name them.
func WithWriters(fn func(ctx context.Context, asset uuid.UUID, from, to time.Time, limit int) ([]Writer, error)) Option {
	return func(s *Service) { s.writers = fn }
}

// Bounds on the writers a run names: in the first maxWriterWindows windows with duplication on
// the new side, up to maxWriters runs each.
const (
	maxWriterWindows = 20
	maxWriters       = 10
)

// nameWriters names the runs that wrote the new side in the windows where it holds duplicated
// keys. They are evidence, not the verdict: a failure to find them is logged, not fatal.
func (s *Service) nameWriters(ctx context.Context, m Migration, ws []WindowResult) {
	if m.Spec.New.Kind == SourceIceberg && s.tables != nil {
		if err := s.nameSnapshots(ctx, m, ws); err != nil {
			s.log.Warn("reconcile: find the snapshots that added duplicated keys", "migration_id", m.ID, "err", err)
		}
	}
	if s.writers == nil {
		return
	}
	n := 0
	for i := range ws {
		w := &ws[i]
		if w.New.DuplicateKeys == 0 {
			continue
		}
		if n++; n > maxWriterWindows {
			return
		}
		found, err := s.writers(ctx, m.NewAssetID, w.Start, w.Start.Add(m.Spec.Window()), maxWriters)
		if err != nil {
			s.log.Warn("reconcile: find the runs that wrote duplicated keys", "migration_id", m.ID, "window", w.Start, "err", err)
			return
		}
		w.Writers = found
	}
}

// New returns a Service. tbls reads Iceberg sides; use gives the new asset's busiest write day.
func New(db *ent.Client, cat *catalog.Catalog, tbls *tables.Service, use *usage.Service, opts ...Option) *Service {
	s := &Service{db: db, cat: cat, tables: tbls, usage: use, conns: map[string]*sql.DB{}, now: time.Now, log: slog.New(slog.DiscardHandler),
		slots: make(chan struct{}, DefaultMaxRuns)}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

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

// Create records a migration. Both assets must exist and differ; the spec must state every rule.
func (s *Service) Create(ctx context.Context, in CreateInput) (Migration, error) {
	if in.OldAssetID == in.NewAssetID {
		return Migration{}, invalid("new_asset_id", "the old and the new asset must differ")
	}
	if in.Owner == "" {
		return Migration{}, invalid("owner", "name the migration's owner: findings go to them")
	}
	if err := in.Spec.check(s.clock()); err != nil {
		return Migration{}, err
	}
	for _, id := range []uuid.UUID{in.OldAssetID, in.NewAssetID} {
		if _, err := s.cat.Get(ctx, id); err != nil {
			return Migration{}, err
		}
	}
	for _, side := range []SourceSpec{in.Spec.Old, in.Spec.New} {
		if side.Kind == SourcePostgres && s.conns[side.Connection] == nil {
			return Migration{}, invalid("spec", "no PostgreSQL connection named %q is configured", side.Connection)
		}
	}
	spec, err := json.Marshal(in.Spec)
	if err != nil {
		return Migration{}, err
	}
	now := s.clock()
	row, err := s.db.DatasetMigration.Create().SetOldAssetID(in.OldAssetID).SetNewAssetID(in.NewAssetID).SetOwner(in.Owner).
		SetSpec(string(spec)).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
	if err != nil {
		return Migration{}, fmt.Errorf("reconcile: create the migration: %w", err)
	}
	s.pairs.drop()
	return toMigration(row)
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
	// Kept is the records of the deep windows' differing key-range segments the run held and
	// compared record by record.
	Kept int64 `json:"kept"`
	// Reused counts the windows whose new-side figures are the previous run's (an Iceberg new
	// side in which nothing changed there since); NewSnapshot is the snapshot this run read.
	Reused      int64   `json:"reused_windows"`
	NewSnapshot *int64  `json:"new_snapshot,omitempty"`
	Bytes       int64   `json:"bytes"` // of the compared values, as text
	Seconds     float64 `json:"seconds"`
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
	row, err := s.db.ReconciliationRun.Create().SetMigrationID(id).SetStartedAt(started).SetOrigin(reconciliationrun.OriginTidemark).
		SetAgainst(against).Save(ctx)
	if err != nil {
		return Run{}, fmt.Errorf("reconcile: record the run: %w", err)
	}
	t0 := time.Now()
	res, cerr := s.compareSides(ctx, m, started, against == reconciliationrun.AgainstArchive)
	res.Cost.Seconds = time.Since(t0).Seconds()
	run := Run{ID: row.ID, MigrationID: id, StartedAt: started, Origin: string(reconciliationrun.OriginTidemark), Against: string(against),
		Windows: res.Windows, Cost: res.Cost}
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
		return run, fmt.Errorf("reconcile: reconcile migration %s: %w", id, cerr)
	}
	return run, nil
}

// nothingCompared is the cause of a run that compared no rows: it proves nothing, so it is not
// clean (a time column matching no rows, or sides not written yet, must not grow a streak).
func nothingCompared(m Migration, now time.Time) string {
	return fmt.Sprintf("the run compared no rows on either side from %s to %s: nothing was compared, so nothing is shown to agree (check the time column %q and the sides)",
		m.Spec.Since.Format(time.RFC3339), now.Format(time.RFC3339), m.Spec.TimeColumn)
}

func (s *Service) reader(m Migration, src SourceSpec, asset uuid.UUID) (reader, error) {
	if src.AssetID != nil {
		asset = *src.AssetID // an archive table
	}
	switch src.Kind {
	case SourcePostgres:
		db := s.conns[src.Connection]
		if db == nil {
			return nil, fmt.Errorf("reconcile: no PostgreSQL connection named %q is configured", src.Connection)
		}
		return &postgresReader{db: db, table: src.Table, spec: &m.Spec}, nil
	case SourceIceberg:
		if s.tables == nil {
			return nil, errors.New("the Iceberg tables service is not available in this process")
		}
		return &icebergReader{tables: s.tables, asset: asset, snapshot: src.SnapshotID, spec: &m.Spec}, nil
	}
	return nil, fmt.Errorf("reconcile: a %s side cannot be read by Tidemark", src.Kind)
}

// comparison is what compareSides found.
type comparison struct {
	Windows []WindowResult
	Causes  []string
	Cost    Cost
}

func (s *Service) compareSides(ctx context.Context, m Migration, now time.Time, archive bool) (comparison, error) {
	var res comparison
	spec := &m.Spec
	if n := spec.windowsUntil(now); n > MaxWindows {
		return res, fmt.Errorf("reconcile: the migration spans %d windows of %s since %s, more than the %d a run may hold: create it again with a wider window or a later since",
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
		r, err := s.reader(m, sd.src, sd.asset)
		if err != nil {
			return res, fmt.Errorf("reconcile: the %s side: %w", sd.name, err)
		}
		sd.r = r
	}
	against := reconciliationrun.AgainstLive
	if archive {
		against = reconciliationrun.AgainstArchive
	}
	var prev *previous
	if spec.New.Kind == SourceIceberg {
		var err error
		if prev, err = s.lastFigures(ctx, m, against); err != nil {
			return res, err
		}
	}
	var bytes [2]int64
	g, gctx := errgroup.WithContext(ctx)
	for i := range sides {
		sd := &sides[i]
		var from *previous
		if i == 1 {
			from = prev // only the new side runs incrementally
		}
		g.Go(func() (err error) {
			bytes[i], err = sd.firstPass(gctx, spec, from, now)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Cost.NewSnapshot = snapshotOf(sides[1].r)
	res.Cost.Reused = sides[1].figs.reused
	for i, sd := range sides {
		res.Cost.Bytes += bytes[i]
		*sd.rows += sd.figs.read
		if sd.figs.pushed {
			for _, w := range sd.figs.windows {
				res.Cost.Counted += w.rows
			}
		}
	}
	// The second pass: records of the windows that differ, as many as the bound allows.
	old, nw, deep, skipped, err := secondPass(ctx, spec, &sides, now, &res.Cost)
	if err != nil {
		return res, err
	}
	res.Cost.Deep = int64(len(deep))
	for _, sd := range sides {
		for _, f := range sd.figs.windows {
			res.Cost.Compared += f.rows
		}
	}
	compared := map[time.Time]WindowResult{}
	for _, w := range compare(spec, old, nw, now) {
		compared[w.Start] = w
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

// firstPass computes the side's figures: by PostgreSQL itself when it can, incrementally from
// prev (an Iceberg new side), or by streaming the side. It returns the bytes it read.
func (sd *runSide) firstPass(ctx context.Context, spec *Spec, prev *previous, now time.Time) (int64, error) {
	if pr, ok := sd.r.(*postgresReader); ok {
		f, pushed, err := pr.figures(ctx, sd.src, spec.Since, now)
		if err != nil {
			return 0, fmt.Errorf("reconcile: the %s side: %w", sd.name, err)
		}
		if pushed {
			sd.figs = f
			return 0, nil
		}
	}
	if ir, ok := sd.r.(*icebergReader); ok && prev != nil {
		f, n, ok, err := incrementalFigures(ctx, spec, sd.src, ir, prev, now)
		if err != nil {
			return n, fmt.Errorf("reconcile: the %s side: %w", sd.name, err)
		}
		if ok {
			sd.figs = f
			return n, nil
		}
	}
	f, n, err := streamFigures(ctx, spec, sd.src, sd.r, spec.Since, now)
	if err != nil {
		return n, fmt.Errorf("reconcile: the %s side: %w", sd.name, err)
	}
	sd.figs = f
	return n, nil
}

// secondPass looks into the windows whose figures differ: segment figures on both sides, then
// the records of the differing segments, collected by key for the comparison.
func secondPass(ctx context.Context, spec *Spec, sides *[2]runSide, now time.Time, cost *Cost) (*side, *side, []int64, map[int64]bool, error) {
	cands := candidates(sides[0].figs, sides[1].figs)
	// Segment figures of the candidate windows, then their differing segments' records.
	window := func(span [2]int64) (time.Time, time.Time) {
		from, to := windowStart(spec, span[0]), windowStart(spec, span[1]+1)
		if to.After(now) {
			to = now // what the first pass counted
		}
		return from, to
	}
	keys := len(spec.KeyColumns)
	segs := [2]map[segKey]segFig{{}, {}}
	for _, span := range ranges(cands) {
		from, to := window(span)
		for i := range sides {
			sd, m := &sides[i], segs[i]
			if pr, ok := sd.r.(*postgresReader); ok && sd.figs.pushed {
				if done, err := pr.segments(ctx, from, to, m); err != nil {
					return nil, nil, nil, nil, fmt.Errorf("reconcile: the %s side: %w", sd.name, err)
				} else if done {
					continue // PostgreSQL counted them itself
				}
			}
			bytes, err := sd.r.read(ctx, from, to, func(rw row) {
				k := segKey{windowIndex(spec, rw.at), segmentOf(rw, keys)}
				f := m[k]
				f.rows++
				f.sum += recordHash(rw)
				m[k] = f
				*sd.rows++
			})
			cost.Bytes += bytes
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("reconcile: the %s side: %w", sd.name, err)
			}
		}
	}
	keep, deep, skipped := keptSegments(cands, sides[0].figs, sides[1].figs, segs)
	old, nw := newSide(sides[0].src, spec.DedupOld, keys), newSide(spec.New, spec.DedupNew, keys)
	for _, span := range ranges(deep) {
		from, to := window(span)
		for i, into := range []*side{old, nw} {
			sd := &sides[i]
			bytes, err := sd.r.read(ctx, from, to, func(rw row) {
				*sd.rows++
				if keep[segKey{windowIndex(spec, rw.at), segmentOf(rw, keys)}] {
					into.add(rw)
					cost.Kept++
				}
			})
			cost.Bytes += bytes
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("reconcile: the %s side: %w", sd.name, err)
			}
		}
	}
	return old, nw, deep, skipped, nil
}

// Finding is a defect a run found, open until a run shows it gone.
type Finding struct {
	ID          uuid.UUID
	Kind, Side  string
	WindowStart time.Time
	Owner       string
	Detail      string
	OpenedRunID uuid.UUID
	OpenedAt    time.Time
	ClosedRunID *uuid.UUID
	ClosedAt    *time.Time
}

// Findings returns a migration's findings, open ones first.
func (s *Service) Findings(ctx context.Context, id uuid.UUID) ([]Finding, error) {
	rows, err := s.db.ReconciliationFinding.Query().Where(reconciliationfinding.MigrationID(id)).
		Order(ent.Asc(reconciliationfinding.FieldOpenedAt), ent.Asc(reconciliationfinding.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read findings: %w", err)
	}
	out := make([]Finding, len(rows))
	for i, r := range rows {
		out[i] = Finding{ID: r.ID, Kind: string(r.Kind), Side: string(r.Side), WindowStart: r.WindowStart.UTC(), Owner: r.Owner,
			Detail: r.Detail, OpenedRunID: r.OpenedRunID, OpenedAt: r.OpenedAt.UTC(), ClosedRunID: r.ClosedRunID, ClosedAt: r.ClosedAt}
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		switch {
		case a.ClosedAt == nil && b.ClosedAt != nil:
			return -1
		case a.ClosedAt != nil && b.ClosedAt == nil:
			return 1
		}
		return 0
	})
	return out, nil
}

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

// RunDue reconciles every active migration Tidemark can read whose last run started longer
// ago than every. Each run takes the migration's claim, so replicas (and API callers) never run
// one twice at once; one held elsewhere is skipped. It returns how many it ran.
func (s *Service) RunDue(ctx context.Context, every time.Duration) (int, error) {
	ms, err := s.db.DatasetMigration.Query().Where(datasetmigration.StateNEQ(datasetmigration.StateRetired)).All(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile: list migrations: %w", err)
	}
	n := 0
	for _, row := range ms {
		m, err := toMigration(row)
		if err != nil {
			return n, err
		}
		if retired, err := s.retireIfGone(ctx, m); err != nil || retired {
			if err != nil {
				return n, err
			}
			continue
		}
		if !m.Readable() {
			continue
		}
		now := s.clock()
		last, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(m.ID)).
			Order(ent.Desc(reconciliationrun.FieldStartedAt)).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return n, err
		}
		if last != nil && now.Sub(last.StartedAt) < every {
			continue
		}
		_, rerr := s.Reconcile(ctx, m.ID)
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if errors.Is(rerr, catalog.ErrConflict) || errors.Is(rerr, catalog.ErrUnavailable) {
			continue // running elsewhere, or this process is busy: a later tick runs it
		}
		n++
		if rerr != nil {
			s.log.Warn("scheduled reconciliation failed; the run records why", "migration_id", m.ID, "err", rerr)
		}
	}
	return n, nil
}

// retireIfGone marks a cut-over migration retired once its old asset is deleted (retired by the
// cleanup bot, or dropped): there is nothing left to compare, and runs would only fail.
func (s *Service) retireIfGone(ctx context.Context, m Migration) (bool, error) {
	if m.State != string(datasetmigration.StateCutOver) {
		return false, nil
	}
	a, err := s.cat.Get(ctx, m.OldAssetID)
	if err != nil {
		return false, err
	}
	if a.Status != catalog.StatusDeleted {
		return false, nil
	}
	err = s.db.DatasetMigration.UpdateOneID(m.ID).SetState(datasetmigration.StateRetired).SetUpdatedAt(s.clock()).AddVersion(1).Exec(ctx)
	if err == nil {
		s.log.Info("migration retired: its old asset is gone", "migration_id", m.ID, "old_asset_id", m.OldAssetID)
	}
	return err == nil, err
}

// Run reconciles due migrations every tick until ctx ends.
func (s *Service) Run(ctx context.Context, tick, every time.Duration) {
	loop.Every(ctx, tick, true, func(ctx context.Context) {
		if n, err := s.RunDue(ctx, every); err != nil && ctx.Err() == nil {
			s.log.Warn("scheduled reconciliations failed; will retry", "err", err)
		} else if n > 0 {
			s.log.Info("scheduled reconciliations done", "migrations", n)
		}
	})
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

// Pair is a migration's two assets.
type Pair struct {
	ID, OldAssetID, NewAssetID uuid.UUID
}

// pairsTTL bounds how long another replica's new migration may be missing from lineage answers.
const pairsTTL = 10 * time.Second

// pairs holds every migration's two assets by asset, so a lineage answer finds the start's
// migrations without a query (they are few and change rarely; this process's changes drop it).
type pairs struct {
	mu      sync.Mutex
	at      time.Time
	byAsset map[uuid.UUID][]Pair
}

func (p *pairs) drop() {
	p.mu.Lock()
	p.byAsset = nil
	p.mu.Unlock()
}

// PairsOf returns the migrations an asset is the old or new side of, from memory refreshed at
// most every pairsTTL.
func (s *Service) PairsOf(ctx context.Context, asset uuid.UUID) ([]Pair, error) {
	s.pairs.mu.Lock()
	defer s.pairs.mu.Unlock()
	if now := time.Now(); s.pairs.byAsset == nil || now.Sub(s.pairs.at) > pairsTTL {
		rows, err := s.db.DatasetMigration.Query().
			Select(datasetmigration.FieldOldAssetID, datasetmigration.FieldNewAssetID).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("reconcile: read migrations: %w", err)
		}
		by := make(map[uuid.UUID][]Pair, 2*len(rows))
		for _, r := range rows {
			p := Pair{ID: r.ID, OldAssetID: r.OldAssetID, NewAssetID: r.NewAssetID}
			by[r.OldAssetID] = append(by[r.OldAssetID], p)
			by[r.NewAssetID] = append(by[r.NewAssetID], p)
		}
		s.pairs.byAsset, s.pairs.at = by, now
	}
	return slices.Clone(s.pairs.byAsset[asset]), nil
}
