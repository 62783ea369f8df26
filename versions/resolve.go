package versions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/ent/lineageevent"
	"github.com/tidemark/tidemark/ent/run"
	"github.com/tidemark/tidemark/ent/runio"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/ent/versioncursor"
	"github.com/tidemark/tidemark/internal/chunk"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/lineage"
)

// How the resolver works. Ingest stays as it was: the resolver tails the stored OpenLineage
// events (by ID, behind a lag so a transaction that commits late is not passed over) and
// resolves every run they touched; a version recorded or a scan report received later marks
// its asset, and the next step resolves again the runs on it around that time. Resolving is
// idempotent: a run's edges are computed from everything known and written only when they
// change, so a late event that states a version replaces an inferred edge.
//
// The rules, per input or output of a run (the run's window runs from its start, the
// started_at of its events or else its first event's time, to its end; its principal is the
// one that posted its first event that names one):
//   - stated: the run's latest event that states a version for the dataset (an input's
//     icebergScanReport.snapshotId or version facet, an output's icebergCommitReport.snapshotId or
//     version facet). For a table Tidemark reads (served, synced or registered), a stated version
//     the table never showed is flagged, and stays stated.
//   - reported: an input read by a scan report through Tidemark's REST catalog from the run's
//     principal inside the window (one snapshot; two are unknown); an output committed through
//     Tidemark's REST catalog by a commit whose snapshot summary names the run
//     (RunIDProperty), else by the run's principal inside the window (one snapshot; two are
//     unknown).
//   - inferred: an input's version current at the run's start (the newest the table showed
//     committed at or before it); an output's only version committed inside the window.
//   - unknown: none of these, or more than one candidate: never guessed.

// Default cadence of the resolver.
const (
	DefaultResolveInterval = 5 * time.Second
	// DefaultResolveLag: events received this recently are left to the next step, so an
	// ingest transaction that commits late (its IDs are taken before it commits) is not passed.
	DefaultResolveLag = 10 * time.Second
	// ReportReach: a version or scan report recorded at t resolves again the runs on its asset
	// that started from a day before t. A run longer than that joins it at its next event.
	ReportReach = 24 * time.Hour
	tailBatch   = 2000
	dirtyBatch  = 5000
)

const servedReadSource = "iceberg-rest" // usage records of scan reports through the REST catalog

// dirtySet is the assets whose runs must be resolved again, each from the earliest time marked.
type dirtySet struct {
	mu     sync.Mutex
	assets map[uuid.UUID]time.Time
}

func (d *dirtySet) mark(touched map[uuid.UUID]time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.assets == nil {
		d.assets = map[uuid.UUID]time.Time{}
	}
	for a, t := range touched {
		if old, ok := d.assets[a]; !ok || t.Before(old) {
			d.assets[a] = t
		}
	}
}

func (d *dirtySet) take() map[uuid.UUID]time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.assets
	d.assets = nil
	return out
}

// reresolve marks the assets whose runs the next step resolves again. Nothing is resolved in
// the caller's request: a commit does not wait for lineage. Inside the caller's transaction, the
// mark waits for its commit: a step that ran before would read the versions without what the
// transaction adds, and take the mark with it.
func (s *Service) reresolve(ctx context.Context, touched map[uuid.UUID]time.Time) error {
	if len(touched) == 0 {
		return nil
	}
	tx := ent.TxFromContext(ctx)
	if tx == nil {
		s.dirty.mark(touched)
		return nil
	}
	tx.OnCommit(func(next ent.Committer) ent.Committer {
		return ent.CommitFunc(func(ctx context.Context, tx *ent.Tx) error {
			err := next.Commit(ctx, tx)
			if err == nil {
				s.dirty.mark(touched)
			}
			return err
		})
	})
	return nil
}

// ScanReported marks an asset whose runs a scan report at the given time may join (a report
// that arrives after the run's events).
func (s *Service) ScanReported(ctx context.Context, asset uuid.UUID, at time.Time) error {
	return s.reresolve(ctx, map[uuid.UUID]time.Time{asset: at})
}

// ResolveJob resolves, every interval, the runs whose events arrived and the runs on assets
// that gained a version or a scan report.
func (s *Service) ResolveJob() *loop.Job {
	return &loop.Job{Name: "version resolution", Interval: s.resolveEvery, AtStart: true, Log: s.log,
		Step: loop.Counted(s.log, "run versions resolved", "runs", s.Resolve)}
}

// Resolve is one step of the resolver: it resolves the runs of the events stored since the last
// step (up to the lag) and of the marked assets, and answers how many runs it resolved.
func (s *Service) Resolve(ctx context.Context) (int, error) {
	n, err := s.resolveMarked(ctx)
	if err != nil {
		return n, err
	}
	for {
		m, more, err := s.resolveTail(ctx)
		n += m
		if err != nil || !more {
			return n, err
		}
	}
}

const eventsCursor = "lineage_events"

func (s *Service) resolveTail(ctx context.Context) (int, bool, error) {
	after := uuid.Nil
	cur, err := s.db.VersionCursor.Get(ctx, eventsCursor)
	switch {
	case err == nil:
		after = cur.After
	case !ent.IsNotFound(err):
		return 0, false, fmt.Errorf("versions: read the cursor: %w", err)
	}
	cutoff := s.now().Add(-s.resolveLag)
	rows, err := s.db.LineageEvent.Query().
		Where(lineageevent.IDGT(after), lineageevent.ReceivedAtLT(cutoff)).
		Order(ent.Asc(lineageevent.FieldID)).Limit(tailBatch).
		Select(lineageevent.FieldID, lineageevent.FieldRunID).All(ctx)
	if err != nil || len(rows) == 0 {
		return 0, false, err
	}
	var ids []string
	seen := map[string]bool{}
	for _, r := range rows {
		if r.RunID != "" && !seen[r.RunID] {
			seen[r.RunID] = true
			ids = append(ids, r.RunID)
		}
	}
	if err := s.ResolveRuns(ctx, ids); err != nil {
		return 0, false, err
	}
	last := rows[len(rows)-1].ID
	now := s.now().UTC()
	if cur == nil {
		err = s.db.VersionCursor.Create().SetID(eventsCursor).SetAfter(last).SetUpdatedAt(now).Exec(ctx)
	} else {
		_, err = s.db.VersionCursor.Update().Where(versioncursor.ID(eventsCursor), versioncursor.After(after)).
			SetAfter(last).SetUpdatedAt(now).Save(ctx)
	}
	if err != nil {
		return len(ids), false, fmt.Errorf("versions: move the cursor: %w", err)
	}
	return len(ids), len(rows) == tailBatch, nil
}

// resolveMarked resolves again the runs on the marked assets. A step that fails marks them again.
func (s *Service) resolveMarked(ctx context.Context) (int, error) {
	marked := s.dirty.take()
	if len(marked) == 0 {
		return 0, nil
	}
	var ids []string
	seen := map[string]bool{}
	for asset, t := range marked {
		rows, err := s.db.RunVersion.Query().
			Where(runversion.AssetID(asset), runversion.AtGTE(t.Add(-ReportReach)), runversion.KindNEQ(runversion.KindStated)).
			Limit(dirtyBatch).Select(runversion.FieldRunID).All(ctx)
		if err != nil {
			s.dirty.mark(marked)
			return 0, fmt.Errorf("versions: runs on %s: %w", asset, err)
		}
		for _, r := range rows {
			if !seen[r.RunID] {
				seen[r.RunID] = true
				ids = append(ids, r.RunID)
			}
		}
	}
	if err := s.ResolveRuns(ctx, ids); err != nil {
		s.dirty.mark(marked)
		return 0, err
	}
	return len(ids), nil
}

// ResolveRuns computes the edges of the given runs from everything known and writes those that
// changed.
func (s *Service) ResolveRuns(ctx context.Context, ids []string) error {
	for part := range slices.Chunk(ids, chunk.Size) {
		if err := s.resolveChunk(ctx, part); err != nil {
			return err
		}
	}
	return nil
}

// ioKey is one input or output of one run.
type ioKey struct {
	run   string
	asset uuid.UUID
	role  string
}

// runFacts is what the resolver knows of a run.
type runFacts struct {
	id         string
	start, end time.Time // end is zero while the run goes on
	principal  string
	inputs     []uuid.UUID
	outputs    []uuid.UUID
	events     []*ent.LineageEvent
}

// edge is a resolved edge.
type edge struct {
	version, kind, basis, conflict string
	flagged                        bool
	at                             time.Time
}

func (s *Service) resolveChunk(ctx context.Context, ids []string) error {
	facts, err := s.runFacts(ctx, ids)
	if err != nil || len(facts) == 0 {
		return err
	}
	k, err := s.knowledge(ctx, facts)
	if err != nil {
		return err
	}
	want := map[ioKey]edge{}
	var stated []statedOn
	for _, f := range facts {
		st, err := s.statedVersions(ctx, f)
		if err != nil {
			return err
		}
		for _, a := range f.inputs {
			key := ioKey{f.id, a, Input}
			want[key] = k.input(f, a, st[key])
		}
		for _, a := range f.outputs {
			key := ioKey{f.id, a, Output}
			want[key] = k.output(f, a, st[key])
		}
		for key, sv := range st {
			stated = append(stated, statedOn{key: key, v: sv, f: f})
		}
	}
	if err := s.flagStated(ctx, want, stated); err != nil {
		return err
	}
	return s.writeEdges(ctx, ids, want)
}

func (s *Service) runFacts(ctx context.Context, ids []string) ([]*runFacts, error) {
	runs, err := s.db.Run.Query().Where(run.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("versions: read runs: %w", err)
	}
	byID := map[string]*runFacts{}
	var out []*runFacts
	for _, r := range runs {
		f := &runFacts{id: r.ID}
		if r.StartedAt != nil {
			f.start = r.StartedAt.UTC()
		}
		switch {
		case r.EndedAt != nil:
			f.end = r.EndedAt.UTC()
		case r.State == run.StateCOMPLETE || r.State == run.StateFAIL || r.State == run.StateABORT:
			f.end = r.StateTime.UTC()
		}
		byID[r.ID] = f
		out = append(out, f)
	}
	ios, err := s.db.RunIO.Query().Where(runio.RunIDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("versions: read run inputs and outputs: %w", err)
	}
	for _, io := range ios {
		f := byID[io.RunID]
		if f == nil {
			continue
		}
		if io.Role == runio.RoleInput {
			f.inputs = append(f.inputs, io.AssetID)
		} else {
			f.outputs = append(f.outputs, io.AssetID)
		}
	}
	evs, err := s.db.LineageEvent.Query().Where(lineageevent.RunIDIn(ids...)).
		Order(ent.Asc(lineageevent.FieldEventTime), ent.Asc(lineageevent.FieldID)).
		Select(lineageevent.FieldRunID, lineageevent.FieldEventTime, lineageevent.FieldPrincipal, lineageevent.FieldPayload).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("versions: read run events: %w", err)
	}
	for _, e := range evs {
		f := byID[e.RunID]
		if f == nil {
			continue
		}
		f.events = append(f.events, e)
		if f.principal == "" && e.Principal != "" {
			f.principal = e.Principal
		}
	}
	for _, f := range out {
		if f.start.IsZero() && len(f.events) > 0 {
			f.start = f.events[0].EventTime.UTC()
		}
	}
	return out, nil
}

// stated is a version a run's events state for one of its datasets.
type stated struct {
	lineage.StatedVersion
	at time.Time // the event's time
}

type statedOn struct {
	key ioKey
	v   stated
	f   *runFacts
}

// statedVersions reads what the run's events state, the latest event winning; an earlier event
// that stated another version is kept as the conflict.
func (s *Service) statedVersions(ctx context.Context, f *runFacts) (map[ioKey]stated, error) {
	out := map[ioKey]stated{}
	var m *matcher
	for _, e := range f.events {
		ev, err := lineage.ParseEvent([]byte(e.Payload))
		if err != nil {
			continue // stored events parsed when they arrived; one that no longer does states nothing
		}
		for _, side := range []struct {
			role   string
			ds     []lineage.Dataset
			assets []uuid.UUID
		}{{Input, ev.Inputs, f.inputs}, {Output, ev.Outputs, f.outputs}} {
			for _, d := range side.ds {
				get := d.OutputVersion
				if side.role == Input {
					get = d.InputVersion
				}
				sv, ok := get()
				if !ok {
					continue
				}
				if m == nil {
					m = &matcher{s: s}
				}
				asset, ok, err := m.match(ctx, d, side.assets)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				key := ioKey{f.id, asset, side.role}
				if old, had := out[key]; had && old.Version != sv.Version && sv.Conflict == "" {
					sv.Conflict = fmt.Sprintf("an earlier event stated %q", old.Version)
				}
				out[key] = stated{StatedVersion: sv, at: e.EventTime.UTC()}
			}
		}
	}
	return out, nil
}

// matcher finds which of a run's assets a dataset of its events is: the only one of its role,
// else the one that holds or held the dataset's name, else the one the catalog resolves it to.
type matcher struct {
	s     *Service
	names map[uuid.UUID][]catalog.Name
}

func (m *matcher) match(ctx context.Context, d lineage.Dataset, assets []uuid.UUID) (uuid.UUID, bool, error) {
	switch len(assets) {
	case 0:
		return uuid.Nil, false, nil
	case 1:
		return assets[0], true, nil
	}
	if m.names == nil {
		m.names = map[uuid.UUID][]catalog.Name{}
	}
	for _, a := range assets {
		names, ok := m.names[a]
		if !ok {
			var err error
			if names, err = m.s.cat.Names(ctx, a); err != nil && !isNotFound(err) {
				return uuid.Nil, false, err
			}
			m.names[a] = names
		}
		for _, n := range names {
			if n.Namespace == d.Namespace && n.Name == d.Name {
				return a, true, nil
			}
		}
	}
	ref, ok, err := m.s.cat.Lookup(ctx, catalog.SpaceDataset, d.Namespace, d.Name)
	if err != nil || !ok {
		return uuid.Nil, false, err
	}
	return ref.ID, slices.Contains(assets, ref.ID), nil
}

func isNotFound(err error) bool { return errors.Is(err, catalog.ErrNotFound) }

// knowledge is what the sources say of the assets a chunk of runs touched.
type knowledge struct {
	versions map[uuid.UUID][]*ent.DatasetVersion // seen in the table, by time
	byRun    map[string][]*ent.DatasetVersion    // commits whose summary names the run
	reads    map[uuid.UUID][]*ent.UsageEvent     // scan reports through the REST catalog
	now      time.Time
}

func (s *Service) knowledge(ctx context.Context, facts []*runFacts) (*knowledge, error) {
	k := &knowledge{versions: map[uuid.UUID][]*ent.DatasetVersion{}, byRun: map[string][]*ent.DatasetVersion{},
		reads: map[uuid.UUID][]*ent.UsageEvent{}, now: s.now().UTC()}
	type span struct{ lo, hi time.Time }
	spans := map[uuid.UUID]*span{}
	widen := func(a uuid.UUID, lo, hi time.Time) {
		sp := spans[a]
		if sp == nil {
			spans[a] = &span{lo, hi}
			return
		}
		if lo.Before(sp.lo) {
			sp.lo = lo
		}
		if hi.After(sp.hi) {
			sp.hi = hi
		}
	}
	var runIDs []string
	now := k.now
	for _, f := range facts {
		runIDs = append(runIDs, f.id)
		if f.start.IsZero() {
			continue
		}
		hi := f.end
		if hi.IsZero() {
			hi = now
		}
		for _, a := range f.inputs {
			widen(a, f.start, hi)
		}
		for _, a := range f.outputs {
			widen(a, f.start, hi)
		}
	}
	for a, sp := range spans {
		// The version current at the earliest start, and every one after it up to the latest end.
		before, err := s.db.DatasetVersion.Query().
			Where(datasetversion.AssetID(a), datasetversion.SeenInTable(true), datasetversion.CommittedAtLTE(sp.lo)).
			Order(ent.Desc(datasetversion.FieldCommittedAt), ent.Desc(datasetversion.FieldID)).Limit(1).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("versions: read versions of %s: %w", a, err)
		}
		inside, err := s.db.DatasetVersion.Query().
			Where(datasetversion.AssetID(a), datasetversion.SeenInTable(true), datasetversion.CommittedAtGT(sp.lo), datasetversion.CommittedAtLTE(sp.hi)).
			Order(ent.Asc(datasetversion.FieldCommittedAt), ent.Asc(datasetversion.FieldID)).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("versions: read versions of %s: %w", a, err)
		}
		k.versions[a] = append(before, inside...)
		reads, err := s.db.UsageEvent.Query().
			Where(usageevent.AssetID(a), usageevent.VersionNEQ(""), usageevent.Source(servedReadSource),
				usageevent.KindEQ(usageevent.KindRead), usageevent.AtGTE(sp.lo), usageevent.AtLTE(sp.hi)).
			Select(usageevent.FieldActor, usageevent.FieldVersion, usageevent.FieldAt).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("versions: read scan reports of %s: %w", a, err)
		}
		k.reads[a] = reads
	}
	named, err := s.db.DatasetVersion.Query().Where(datasetversion.RunIDIn(runIDs...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("versions: read commits naming runs: %w", err)
	}
	for _, v := range named {
		k.byRun[v.RunID] = append(k.byRun[v.RunID], v)
	}
	return k, nil
}

func inWindow(t, start, end time.Time) bool { return !t.Before(start) && !t.After(end) }

func (k *knowledge) input(f *runFacts, a uuid.UUID, st stated) edge {
	e := edge{at: f.start}
	if e.at.IsZero() {
		e.at = st.at
	}
	if st.Version != "" {
		e.version, e.kind, e.basis, e.conflict = st.Version, Stated, "the run's "+st.Source+" facet", st.Conflict
		return e
	}
	e.kind = Unknown
	if f.start.IsZero() {
		e.basis = "the run has no start time"
		return e
	}
	end := f.end
	if end.IsZero() {
		end = k.now // a run that goes on: every report since its start
	}
	if f.principal != "" {
		found := map[string]time.Time{}
		for _, r := range k.reads[a] {
			if r.Actor == f.principal && inWindow(r.At, f.start, end) {
				found[r.Version] = r.At
			}
		}
		switch len(found) {
		case 1:
			for v, at := range found {
				e.version, e.kind = v, Reported
				e.basis = fmt.Sprintf("a scan report by %s at %s", f.principal, at.UTC().Format(time.RFC3339))
			}
			return e
		case 0:
		default:
			e.basis = fmt.Sprintf("%d scan reports by %s in the run's window name different snapshots", len(found), f.principal)
			return e
		}
	}
	var cur *ent.DatasetVersion
	for _, v := range k.versions[a] {
		if v.CommittedAt != nil && !v.CommittedAt.After(f.start) {
			cur = v
		}
	}
	if cur == nil {
		e.basis = "no version of the table is known before the run's start"
		return e
	}
	e.version, e.kind = cur.Version, Inferred
	e.basis = "the version current at the run's start"
	return e
}

func (k *knowledge) output(f *runFacts, a uuid.UUID, st stated) edge {
	e := edge{at: f.end}
	if e.at.IsZero() {
		e.at = f.start
	}
	if e.at.IsZero() {
		e.at = st.at
	}
	if st.Version != "" {
		e.version, e.kind, e.basis, e.conflict = st.Version, Stated, "the run's "+st.Source+" facet", st.Conflict
		return e
	}
	e.kind = Unknown
	var named []string
	for _, v := range k.byRun[f.id] {
		if v.AssetID == a {
			named = append(named, v.Version)
		}
	}
	switch len(named) {
	case 1:
		e.version, e.kind, e.basis = named[0], Reported, "a commit whose snapshot summary names the run"
		return e
	case 0:
	default:
		sort.Strings(named)
		e.basis = fmt.Sprintf("%d commits name the run: %v", len(named), named)
		return e
	}
	if f.start.IsZero() || f.end.IsZero() {
		e.basis = "the run has not ended"
		return e
	}
	var byPrincipal, any []*ent.DatasetVersion
	for _, v := range k.versions[a] {
		if v.CommittedAt == nil || !inWindow(*v.CommittedAt, f.start, f.end) {
			continue
		}
		any = append(any, v)
		if f.principal != "" && v.Source == SourceCommit && v.Principal == f.principal {
			byPrincipal = append(byPrincipal, v)
		}
	}
	switch {
	case len(byPrincipal) == 1:
		e.version, e.kind = byPrincipal[0].Version, Reported
		e.basis = fmt.Sprintf("the only commit by %s in the run's window", f.principal)
	case len(byPrincipal) > 1:
		e.basis = fmt.Sprintf("%d commits by %s in the run's window", len(byPrincipal), f.principal)
	case len(any) == 1:
		e.version, e.kind = any[0].Version, Inferred
		e.basis = "the only version committed in the run's window"
	case len(any) > 1:
		e.basis = fmt.Sprintf("%d versions committed in the run's window", len(any))
	default:
		e.basis = "no version committed in the run's window"
	}
	return e
}

// flagStated flags stated versions that a table Tidemark reads never showed, and records the
// stated versions of other datasets (their only source) on their timelines.
func (s *Service) flagStated(ctx context.Context, want map[ioKey]edge, st []statedOn) error {
	if len(st) == 0 {
		return nil
	}
	var assets []uuid.UUID
	for _, x := range st {
		assets = append(assets, x.key.asset)
	}
	tbls, err := s.db.IcebergTable.Query().Where(icebergtable.IDIn(assets...)).Select(icebergtable.FieldID).All(ctx)
	if err != nil {
		return fmt.Errorf("versions: read tables: %w", err)
	}
	isTable := map[uuid.UUID]bool{}
	for _, t := range tbls {
		isTable[t.ID] = true
	}
	var obs []Observed
	for _, x := range st {
		e := want[x.key]
		if !isTable[x.key.asset] {
			o := Observed{AssetID: x.key.asset, Version: x.v.Version, Source: SourceOpenLineage}
			if x.key.role == Output {
				o.CommittedAt = e.at // a dataset's version is dated by the run that produced it
			}
			if len(o.Version) <= MaxVersionLen {
				obs = append(obs, o)
			}
			continue
		}
		n, err := s.db.DatasetVersion.Query().Where(datasetversion.AssetID(x.key.asset), datasetversion.Version(x.v.Version),
			datasetversion.SeenInTable(true)).Count(ctx)
		if err != nil {
			return fmt.Errorf("versions: read version %s: %w", x.v.Version, err)
		}
		if n == 0 {
			e.flagged = true
			want[x.key] = e
		}
	}
	return s.Record(ctx, obs)
}

// writeEdges writes the edges that changed: new ones are added, changed ones updated.
func (s *Service) writeEdges(ctx context.Context, ids []string, want map[ioKey]edge) error {
	have, err := s.db.RunVersion.Query().Where(runversion.RunIDIn(ids...)).All(ctx)
	if err != nil {
		return fmt.Errorf("versions: read run versions: %w", err)
	}
	old := map[ioKey]*ent.RunVersion{}
	for _, h := range have {
		old[ioKey{h.RunID, h.AssetID, string(h.Role)}] = h
	}
	now := s.now().UTC()
	var creates []*ent.RunVersionCreate
	for key, e := range want {
		h := old[key]
		if h == nil {
			creates = append(creates, s.db.RunVersion.Create().SetRunID(key.run).SetAssetID(key.asset).
				SetRole(runversion.Role(key.role)).SetVersion(e.version).SetKind(runversion.Kind(e.kind)).
				SetBasis(clipText(e.basis)).SetFlagged(e.flagged).SetConflict(clipText(e.conflict)).SetAt(e.at).SetUpdatedAt(now))
			continue
		}
		if h.Version == e.version && string(h.Kind) == e.kind && h.Basis == clipText(e.basis) && h.Flagged == e.flagged &&
			h.Conflict == clipText(e.conflict) && h.At.Equal(e.at) {
			continue
		}
		if err := s.db.RunVersion.UpdateOne(h).SetVersion(e.version).SetKind(runversion.Kind(e.kind)).SetBasis(clipText(e.basis)).
			SetFlagged(e.flagged).SetConflict(clipText(e.conflict)).SetAt(e.at).SetUpdatedAt(now).Exec(ctx); err != nil {
			return fmt.Errorf("versions: update run %s: %w", key.run, err)
		}
	}
	for part := range slices.Chunk(creates, chunk.Size/16) {
		err := s.db.RunVersion.CreateBulk(part...).Exec(ctx)
		if ent.IsConstraintError(err) {
			// Another replica's step wrote some of them meanwhile: add the others one by one.
			for _, c := range part {
				if err := c.Exec(ctx); err != nil && !ent.IsConstraintError(err) {
					return fmt.Errorf("versions: add a run version: %w", err)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("versions: add run versions: %w", err)
		}
	}
	return nil
}

// clipText bounds a text kept on an edge.
func clipText(s string) string {
	const n = 512
	if len(s) > n {
		return s[:n]
	}
	return s
}
