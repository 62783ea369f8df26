package versions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/sqltime"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/ent/lineageedge"
	"github.com/tidemark/tidemark/ent/predicate"
	"github.com/tidemark/tidemark/ent/runio"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/internal/chunk"
)

// States of a downstream table in an impact answer.
const (
	// Affected: the table's current version derives from the bad version.
	Affected = "affected"
	// Recovered: the current version does not derive from it, and the run that produced it is
	// known with every input version known and none derived from it.
	Recovered = "recovered"
	// StateUnknown: neither could be shown; Reason says what is missing.
	StateUnknown = "unknown"
)

// Where a table's current version was read from.
const (
	CurrentIceberg   = "iceberg"   // the Iceberg table's current snapshot
	CurrentCommitted = "committed" // the newest version by its commit time
	CurrentRun       = "run"       // the newest run output (nothing dated a version)
)

// How a read of affected data is known.
const (
	ReadOfVersion = "version"       // the read stated the version
	WhileCurrent  = "while-current" // the read stated none, and an affected version was current then
)

// DerivedVersion is a version of a downstream table built, transitively, from the bad one.
type DerivedVersion struct {
	Version     string
	CommittedAt *time.Time
	Expired     *Expiry
	Depth       int
}

// CurrentVersion is a table's current version as far as Tidemark knows.
type CurrentVersion struct {
	Version     string // "" when the newest run output names no version
	From        string // CurrentIceberg, CurrentCommitted, CurrentRun
	CommittedAt *time.Time
	Derived     bool // it derives from the bad version
}

// ProducerInput is one input of the run that produced a table's current version.
type ProducerInput struct {
	AssetID uuid.UUID
	Name    Name
	Version string // "" when unknown
	Label   string
	Flagged bool
	Derived bool // the input version derives from the bad version
}

// Producer is a run whose output edge names a table's current version.
type Producer struct {
	RunID  string
	Job    Job
	Label  string // the output edge's label
	Inputs []ProducerInput
}

// TableImpact is what a bad version did to one downstream table.
type TableImpact struct {
	AssetID      uuid.UUID
	Kind, Status string
	Name         Name
	Depth        int              // runs between the bad version and the nearest derived version
	Derived      []DerivedVersion // oldest first
	Current      *CurrentVersion  // nil when no version of it is known
	State        string
	Reason       string
	Producers    []Producer // the runs that produced the current version
	Owners       []string   // current owners' principals (whatever the state)
}

// RunToRepeat is a run that produced an affected table's current version: repeat its job.
type RunToRepeat struct {
	RunID  string
	Job    Job
	Depth  int         // the dependency order: repeat lower depths first
	Tables []uuid.UUID // the affected tables whose current version it produced
}

// OwnerToTell is an owner of affected tables.
type OwnerToTell struct {
	Principal string
	Kind      string
	Tables    []uuid.UUID
}

// AffectedReads are the reads of one affected version.
type AffectedReads struct {
	AssetID uuid.UUID
	Name    Name
	Version string
	How     string // ReadOfVersion or WhileCurrent
	Reads
}

// Impact is the blast radius of a bad version.
type Impact struct {
	Root            Key
	Depth           int
	Tables          []TableImpact // by depth, then name
	Repeat          []RunToRepeat // in dependency order
	Owners          []OwnerToTell
	Readers         []AffectedReads
	Truncated       bool
	Explanation     string
	MoreBeyondDepth bool
	Unknown         UnknownEdges
}

// Impact answers what a bad version poisoned, what is still poisoned, which runs to repeat and
// in what order, whom to tell, and who read the poisoned data.
func (s *Service) Impact(ctx context.Context, assetID uuid.UUID, version string, depth int) (Impact, error) {
	if err := checkDepth(depth); err != nil {
		return Impact{}, err
	}
	root := Key{assetID, version}
	if err := s.mustExist(ctx, root); err != nil {
		return Impact{}, err
	}
	w, err := s.walk(ctx, root, Downstream, depth)
	if err != nil {
		return Impact{}, err
	}
	im := Impact{Root: root, Depth: depth, Tables: []TableImpact{}, Repeat: []RunToRepeat{}, Owners: []OwnerToTell{}, Readers: []AffectedReads{},
		Truncated: w.truncated, Explanation: w.explanation, MoreBeyondDepth: w.moreBeyond, Unknown: w.unknown}

	// The downstream tables and the versions of each derived from root.
	derived := map[uuid.UUID][]Key{}
	var tableIDs []uuid.UUID
	for _, k := range w.order[1:] {
		if derived[k.AssetID] == nil {
			tableIDs = append(tableIDs, k.AssetID)
		}
		derived[k.AssetID] = append(derived[k.AssetID], k)
	}
	assets, err := s.assetsOf(ctx, slices.Concat(tableIDs, []uuid.UUID{assetID}))
	if err != nil {
		return Impact{}, err
	}
	current, err := s.currentVersions(ctx, tableIDs)
	if err != nil {
		return Impact{}, err
	}
	producers, err := s.producers(ctx, current)
	if err != nil {
		return Impact{}, err
	}
	tainted, taintAll, err := s.tainted(ctx, w)
	if err != nil {
		return Impact{}, err
	}
	var runIDs []string
	for _, ps := range producers {
		for _, p := range ps {
			runIDs = append(runIDs, p.RunID)
		}
	}
	jobs, err := s.jobsOf(ctx, runIDs)
	if err != nil {
		return Impact{}, err
	}
	var inputAssets []uuid.UUID
	for _, ps := range producers {
		for _, p := range ps {
			for _, in := range p.Inputs {
				inputAssets = append(inputAssets, in.AssetID)
			}
		}
	}
	inputNames, err := s.assetsOf(ctx, inputAssets)
	if err != nil {
		return Impact{}, err
	}

	repeat := map[string]*RunToRepeat{}
	var affected []uuid.UUID
	facts := impactFacts{w: w, assets: assets, derived: derived, current: current, producers: producers, jobs: jobs,
		inputNames: inputNames, tainted: tainted, taintAll: taintAll}
	for _, id := range tableIDs {
		t := facts.table(id, repeat)
		if t.State == Affected {
			affected = append(affected, id)
		}
		im.Tables = append(im.Tables, t)
	}
	slices.SortStableFunc(im.Tables, func(x, y TableImpact) int {
		return cmp.Or(cmp.Compare(x.Depth, y.Depth), cmp.Compare(x.Name.Namespace, y.Name.Namespace), cmp.Compare(x.Name.Name, y.Name.Name),
			cmp.Compare(x.AssetID.String(), y.AssetID.String()))
	})
	for _, r := range repeat {
		im.Repeat = append(im.Repeat, *r)
	}
	slices.SortFunc(im.Repeat, func(x, y RunToRepeat) int {
		return cmp.Or(cmp.Compare(x.Depth, y.Depth), cmp.Compare(x.Job.Namespace+"."+x.Job.Name, y.Job.Namespace+"."+y.Job.Name), cmp.Compare(x.RunID, y.RunID))
	})

	if err := s.owners(ctx, &im, tableIDs, affected); err != nil {
		return Impact{}, err
	}
	if im.Readers, err = s.affectedReads(ctx, w, assets); err != nil {
		return Impact{}, err
	}
	if err := s.nameUnknown(ctx, &im.Unknown); err != nil {
		return Impact{}, err
	}
	return im, nil
}

// impactFacts is what Impact read before judging each downstream table.
type impactFacts struct {
	w          *walked
	assets     map[uuid.UUID]assetInfo
	derived    map[uuid.UUID][]Key
	current    map[uuid.UUID]CurrentVersion
	producers  map[Key][]Producer
	jobs       map[string]Job
	inputNames map[uuid.UUID]assetInfo
	tainted    map[uuid.UUID]bool
	taintAll   bool
}

// table judges one downstream table and, when it is affected, adds the runs that produced its
// current version to repeat at their place in the dependency order.
func (f impactFacts) table(id uuid.UUID, repeat map[string]*RunToRepeat) TableImpact {
	w, assets, derived, current, producers, jobs, inputNames := f.w, f.assets, f.derived, f.current, f.producers, f.jobs, f.inputNames
	a := assets[id]
	t := TableImpact{AssetID: id, Kind: a.kind, Status: a.status, Name: Name{a.namespace, a.name}, Derived: []DerivedVersion{},
		Producers: []Producer{}, Owners: []string{}, Depth: -1}
	for _, k := range derived[id] {
		d := DerivedVersion{Version: k.Version, Depth: w.dist[k]}
		if r := w.rows[k]; r != nil {
			d.CommittedAt = utc(r.CommittedAt)
			if r.ExpiredAt != nil {
				d.Expired = &Expiry{At: r.ExpiredAt.UTC(), By: r.ExpiredBy}
			}
		}
		if t.Depth < 0 || d.Depth < t.Depth {
			t.Depth = d.Depth
		}
		t.Derived = append(t.Derived, d)
	}
	slices.SortStableFunc(t.Derived, func(x, y DerivedVersion) int {
		return cmp.Or(compareTimes(x.CommittedAt, y.CommittedAt), cmp.Compare(x.Version, y.Version))
	})
	cur, hasCur := current[id]
	if hasCur {
		c := cur
		if _, ok := w.dist[Key{id, c.Version}]; ok && c.Version != "" {
			c.Derived = true
		}
		t.Current = &c
	}
	for _, p := range producers[Key{id, cur.Version}] {
		p.Job = jobs[p.RunID]
		for i := range p.Inputs {
			in := &p.Inputs[i]
			ia := inputNames[in.AssetID]
			in.Name = Name{ia.namespace, ia.name}
			_, in.Derived = w.dist[Key{in.AssetID, in.Version}]
			in.Derived = in.Derived && in.Version != ""
		}
		t.Producers = append(t.Producers, p)
	}
	t.State, t.Reason = verdict(t, w, f.tainted, f.taintAll)
	if t.State == Affected {
		// Its place in the dependency order: the current version's distance from root, or
		// one past the derived inputs it was built from.
		d := t.Depth
		if cd, ok := w.dist[Key{id, t.Current.Version}]; ok {
			d = cd
		} else {
			for _, p := range t.Producers {
				for _, in := range p.Inputs {
					if in.Derived {
						d = max(d, w.dist[Key{in.AssetID, in.Version}]+1)
					}
				}
			}
		}
		for _, p := range t.Producers {
			r := repeat[p.RunID]
			if r == nil {
				r = &RunToRepeat{RunID: p.RunID, Job: p.Job, Depth: d}
				repeat[p.RunID] = r
			}
			r.Depth = max(r.Depth, d)
			r.Tables = append(r.Tables, id)
		}
	}
	return t
}

func compareTimes(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1 // undated last
	case b == nil:
		return -1
	}
	return a.Compare(*b)
}

// verdict applies the rule: affected when the current version derives from the bad one (or
// was built from a version that does); recovered only when the run that produced the current
// version is known, with every input version known, none derived, and none of their assets
// reachable from what the walk could not follow; unknown otherwise, with what is missing.
func verdict(t TableImpact, w *walked, tainted map[uuid.UUID]bool, taintAll bool) (string, string) {
	c := t.Current
	switch {
	case c == nil:
		return StateUnknown, "no version of the table is known to be current"
	case c.Version == "":
		return StateUnknown, "the newest run that wrote the table names no version, so its current version is unknown"
	case c.Derived:
		return Affected, fmt.Sprintf("its current version %s derives from %s (%d runs away)", c.Version, w.root.Version, w.dist[Key{t.AssetID, c.Version}])
	}
	for _, p := range t.Producers {
		for _, in := range p.Inputs {
			if in.Derived {
				return Affected, fmt.Sprintf("its current version %s was built by run %s from %s.%s version %s, which derives from %s",
					c.Version, p.RunID, in.Name.Namespace, in.Name.Name, in.Version, w.root.Version)
			}
		}
	}
	if len(t.Producers) == 0 {
		return StateUnknown, fmt.Sprintf("no run is known to have produced its current version %s, so what it was built from is unknown", c.Version)
	}
	for _, p := range t.Producers {
		for _, in := range p.Inputs {
			name := in.Name.Namespace + "." + in.Name.Name
			switch {
			case in.Version == "":
				return StateUnknown, fmt.Sprintf("run %s, which produced its current version %s, read %s without a known version", p.RunID, c.Version, name)
			case in.Flagged:
				return StateUnknown, fmt.Sprintf("run %s, which produced its current version %s, states version %s of %s, which that table never had", p.RunID, c.Version, in.Version, name)
			case taintAll:
				return StateUnknown, "the walk stopped before it could rule out that the inputs of its current version derive from " + w.root.Version
			case tainted[in.AssetID]:
				return StateUnknown, fmt.Sprintf("run %s, which produced its current version %s, read %s, which lies downstream of edges the walk could not follow (unknown versions, or beyond its depth or bound)",
					p.RunID, c.Version, name)
			}
		}
	}
	var from []string
	for _, p := range t.Producers {
		for _, in := range p.Inputs {
			from = append(from, fmt.Sprintf("%s.%s version %s (%s)", in.Name.Namespace, in.Name.Name, in.Version, in.Label))
		}
	}
	if len(from) == 0 {
		return StateUnknown, fmt.Sprintf("the runs that produced its current version %s name no inputs", c.Version)
	}
	return Recovered, fmt.Sprintf("its current version %s was rebuilt from versions not derived from %s: %s", c.Version, w.root.Version, strings.Join(from, ", "))
}

// currentVersions finds each table's current version: an Iceberg table's current snapshot;
// else its newest version by commit time; else its newest run output.
func (s *Service) currentVersions(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]CurrentVersion, error) {
	out := map[uuid.UUID]CurrentVersion{}
	c := s.client(ctx)
	var rest []uuid.UUID
	err := chunk.Each(ids, func(part []uuid.UUID) error {
		rows, err := c.IcebergTable.Query().Where(icebergtable.IDIn(part...), icebergtable.CurrentSnapshotIDNotNil()).
			Select(icebergtable.FieldID, icebergtable.FieldCurrentSnapshotID).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: current snapshots: %w", err)
		}
		for _, r := range rows {
			out[r.ID] = CurrentVersion{Version: strconv.FormatInt(*r.CurrentSnapshotID, 10), From: CurrentIceberg}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var keys []Key
	for id, cv := range out {
		keys = append(keys, Key{id, cv.Version})
	}
	err = chunk.Each(keys, func(part []Key) error {
		rows, err := c.DatasetVersion.Query().Where(predicate.DatasetVersion(s.pairs(part))).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: current snapshots: %w", err)
		}
		for _, r := range rows {
			cv := out[r.AssetID]
			cv.CommittedAt = utc(r.CommittedAt)
			out[r.AssetID] = cv
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			rest = append(rest, id)
		}
	}
	// One statement per chunk, one index probe per table: (asset_id, committed_at) for the
	// newest dated version, (asset_id, at) for the newest output.
	newest := func(q string, part []uuid.UUID) (map[uuid.UUID]uuid.UUID, error) {
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := c.QueryContext(ctx, s.rebind(q+" WHERE a.id IN ("+marks(len(part))+")"), args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		found := map[uuid.UUID]uuid.UUID{}
		for rows.Next() {
			var id uuid.UUID
			var row uuid.NullUUID
			if err := rows.Scan(&id, &row); err != nil {
				return nil, err
			}
			if row.Valid {
				found[id] = row.UUID
			}
		}
		return found, rows.Err()
	}
	err = chunk.Each(rest, func(part []uuid.UUID) error {
		dated, err := newest(`SELECT a.id, (SELECT dv.id FROM dataset_versions dv WHERE dv.asset_id = a.id AND dv.committed_at IS NOT NULL
	ORDER BY dv.committed_at DESC, dv.id DESC LIMIT 1) FROM assets a`, part)
		if err != nil {
			return fmt.Errorf("versions: newest versions: %w", err)
		}
		var rowIDs []uuid.UUID
		for _, r := range dated {
			rowIDs = append(rowIDs, r)
		}
		rows, err := c.DatasetVersion.Query().Where(datasetversion.IDIn(rowIDs...)).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: newest versions: %w", err)
		}
		for _, r := range rows {
			out[r.AssetID] = CurrentVersion{Version: r.Version, From: CurrentCommitted, CommittedAt: utc(r.CommittedAt)}
		}
		var undated []uuid.UUID
		for _, id := range part {
			if _, ok := out[id]; !ok {
				undated = append(undated, id)
			}
		}
		if len(undated) == 0 {
			return nil
		}
		outs, err := newest(`SELECT a.id, (SELECT rv.id FROM run_versions rv WHERE rv.asset_id = a.id AND rv.role = 'output'
	ORDER BY rv.at DESC, rv.id DESC LIMIT 1) FROM assets a`, undated)
		if err != nil {
			return fmt.Errorf("versions: newest outputs: %w", err)
		}
		rowIDs = rowIDs[:0]
		for _, r := range outs {
			rowIDs = append(rowIDs, r)
		}
		edges, err := c.RunVersion.Query().Where(runversion.IDIn(rowIDs...)).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: newest outputs: %w", err)
		}
		for _, e := range edges {
			out[e.AssetID] = CurrentVersion{Version: e.Version, From: CurrentRun}
		}
		return nil
	})
	return out, err
}

// producers returns, for each table's current version, the runs whose output edge names it
// with their inputs (an input the resolver has not reached counts as unknown).
func (s *Service) producers(ctx context.Context, current map[uuid.UUID]CurrentVersion) (map[Key][]Producer, error) {
	var keys []Key
	for id, cv := range current {
		if cv.Version != "" {
			keys = append(keys, Key{id, cv.Version})
		}
	}
	slices.SortFunc(keys, compareKeys)
	outs, err := s.edgesAt(ctx, keys, runversion.RoleOutput, 1<<30)
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, e := range outs {
		runs = append(runs, e.RunID)
	}
	runs = uniq(runs)
	ins, err := s.edgesOfRuns(ctx, runs, runversion.RoleInput)
	if err != nil {
		return nil, err
	}
	ios, err := s.iosOfRuns(ctx, runs, runio.RoleInput)
	if err != nil {
		return nil, err
	}
	inputs := map[string][]ProducerInput{}
	resolved := map[[2]string]bool{}
	for _, e := range ins {
		inputs[e.RunID] = append(inputs[e.RunID], ProducerInput{AssetID: e.AssetID, Version: e.Version, Label: string(e.Kind), Flagged: e.Flagged})
		resolved[[2]string{e.RunID, e.AssetID.String()}] = true
	}
	for _, io := range ios {
		if !resolved[[2]string{io.RunID, io.AssetID.String()}] {
			inputs[io.RunID] = append(inputs[io.RunID], ProducerInput{AssetID: io.AssetID, Label: Unknown})
		}
	}
	out := map[Key][]Producer{}
	for _, e := range outs {
		k := Key{e.AssetID, e.Version}
		in := inputs[e.RunID]
		if in == nil {
			in = []ProducerInput{}
		}
		out[k] = append(out[k], Producer{RunID: e.RunID, Label: string(e.Kind), Inputs: slices.Clone(in)})
	}
	return out, nil
}

// tainted returns the assets that may hold data derived from the root through what the walk
// could not follow: outputs of runs whose versions are unknown, versions the bound cut, and
// everything downstream of those and of versions beyond the depth (asset-level lineage,
// followed to its end). taintAll says that walk itself hit its bound.
func (s *Service) tainted(ctx context.Context, w *walked) (map[uuid.UUID]bool, bool, error) {
	out := map[uuid.UUID]bool{}
	var self, below []uuid.UUID // tainted themselves; only what lies downstream of them
	var readers []string        // runs that read with an unknown version: their outputs are tainted
	for k := range w.unknownSeen {
		id, err := uuid.Parse(k[1])
		if err != nil {
			return nil, false, err
		}
		if k[2] == string(runversion.RoleOutput) {
			self = append(self, id)
		} else {
			readers = append(readers, k[0])
		}
	}
	ios, err := s.iosOfRuns(ctx, uniq(readers), runio.RoleOutput)
	if err != nil {
		return nil, false, err
	}
	for _, io := range ios {
		self = append(self, io.AssetID)
	}
	for _, k := range w.cut {
		self = append(self, k.AssetID)
	}
	for _, k := range w.unfollowed {
		below = append(below, k.AssetID)
	}
	capN := s.nodeCap()
	var frontier []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, id := range uniqIDs(self) {
		out[id], seen[id] = true, true
		frontier = append(frontier, id)
	}
	for _, id := range uniqIDs(below) {
		if !seen[id] {
			seen[id] = true
			frontier = append(frontier, id)
		}
	}
	for len(frontier) > 0 {
		var next []uuid.UUID
		err := chunk.Each(frontier, func(part []uuid.UUID) error {
			rows, err := s.client(ctx).LineageEdge.Query().Where(lineageedge.FromIDIn(part...)).
				Select(lineageedge.FieldToID).All(ctx)
			if err != nil {
				return fmt.Errorf("versions: lineage below unfollowed edges: %w", err)
			}
			for _, r := range rows {
				out[r.ToID] = true
				if !seen[r.ToID] {
					seen[r.ToID] = true
					next = append(next, r.ToID)
				}
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		if len(seen) > capN {
			return out, true, nil
		}
		frontier = next
	}
	return out, false, nil
}

// owners fills in each table's current owners, and lists those of the affected tables, each
// once: the people to tell.
func (s *Service) owners(ctx context.Context, im *Impact, tables, affected []uuid.UUID) error {
	assets, err := s.cat.GetMany(ctx, tables)
	if err != nil {
		return err
	}
	byPrincipal := map[[2]string]*OwnerToTell{}
	ownersOf := map[uuid.UUID][]string{}
	for _, a := range assets {
		for _, o := range a.Owners {
			ownersOf[a.ID] = append(ownersOf[a.ID], o.Principal)
			if !slices.Contains(affected, a.ID) {
				continue
			}
			k := [2]string{o.Principal, string(o.Kind)}
			ot := byPrincipal[k]
			if ot == nil {
				ot = &OwnerToTell{Principal: o.Principal, Kind: string(o.Kind)}
				byPrincipal[k] = ot
			}
			if !slices.Contains(ot.Tables, a.ID) {
				ot.Tables = append(ot.Tables, a.ID)
			}
		}
	}
	for _, ot := range byPrincipal {
		im.Owners = append(im.Owners, *ot)
	}
	slices.SortFunc(im.Owners, func(x, y OwnerToTell) int {
		return cmp.Or(cmp.Compare(x.Principal, y.Principal), cmp.Compare(x.Kind, y.Kind))
	})
	for i := range im.Tables {
		if o := ownersOf[im.Tables[i].AssetID]; o != nil {
			im.Tables[i].Owners = uniq(o)
		}
	}
	return nil
}

// affectedReads counts the reads of the bad version and of every version derived from it
// (reads that stated the version), and the reads of those tables that stated none, made while
// a derived version was the table's current one.
func (s *Service) affectedReads(ctx context.Context, w *walked, assets map[uuid.UUID]assetInfo) ([]AffectedReads, error) {
	out := []AffectedReads{}
	stated, err := s.readers(ctx, readsOf(w.order, nil))
	if err != nil {
		return nil, err
	}
	for _, k := range w.order {
		if r, ok := stated[k]; ok {
			a := assets[k.AssetID]
			out = append(out, AffectedReads{AssetID: k.AssetID, Name: Name{a.namespace, a.name}, Version: k.Version, How: ReadOfVersion, Reads: r})
		}
	}
	// While current: per table, from its oldest dated affected version on.
	type span struct {
		from     time.Time
		versions map[string]bool
	}
	spans := map[uuid.UUID]*span{}
	var ids []uuid.UUID
	for _, k := range w.order {
		r := w.rows[k]
		if r == nil || r.CommittedAt == nil {
			continue // nothing says when it was current
		}
		sp := spans[k.AssetID]
		if sp == nil {
			sp = &span{from: r.CommittedAt.UTC(), versions: map[string]bool{}}
			spans[k.AssetID] = sp
			ids = append(ids, k.AssetID)
		}
		if r.CommittedAt.Before(sp.from) {
			sp.from = r.CommittedAt.UTC()
		}
		sp.versions[k.Version] = true
	}
	found := map[Key]map[string]*Reader{}
	// One statement a chunk of tables (a round trip a table made the answer's cost grow with the
	// blast radius): the version current at each read is the newest committed at or before it,
	// one probe of the (asset_id, committed_at) index per read since the table's first affected
	// version; only the reads whose current version is affected are kept.
	err = chunk.Each(ids, func(part []uuid.UUID) error {
		var cond []string
		var args []any
		for _, id := range part {
			cond = append(cond, "(u.asset_id = ? AND u.day >= ? AND u.at >= ?)")
			args = append(args, id, spans[id].from.Format(time.DateOnly), spans[id].from)
		}
		rows, err := s.client(ctx).QueryContext(ctx, s.rebind(`SELECT asset_id, cur, actor, COUNT(*), MAX(at) FROM (
	SELECT u.asset_id, u.actor, u.at, (SELECT dv.version FROM dataset_versions dv WHERE dv.asset_id = u.asset_id AND dv.committed_at IS NOT NULL
		AND dv.committed_at <= u.at ORDER BY dv.committed_at DESC, dv.id DESC LIMIT 1) AS cur
	FROM usage_events u WHERE (`+strings.Join(cond, " OR ")+`) AND u.kind = 'read' AND u.version = '') x
WHERE cur IS NOT NULL GROUP BY asset_id, cur, actor`), args...)
		if err != nil {
			return fmt.Errorf("versions: reads while affected versions were current: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id uuid.UUID
			var v string
			var r Reader
			var last sqltime.Time
			if err := rows.Scan(&id, &v, &r.Actor, &r.Reads, &last); err != nil {
				return fmt.Errorf("versions: reads while affected versions were current: %w", err)
			}
			if sp := spans[id]; sp == nil || !sp.versions[v] {
				continue
			}
			r.LastRead = last.T
			k := Key{id, v}
			if found[k] == nil {
				found[k] = map[string]*Reader{}
			}
			found[k][r.Actor] = &r
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	for _, k := range w.order {
		rs := found[k]
		if rs == nil {
			continue
		}
		a := assets[k.AssetID]
		ar := AffectedReads{AssetID: k.AssetID, Name: Name{a.namespace, a.name}, Version: k.Version, How: WhileCurrent}
		for _, r := range rs {
			ar.Reads.Reads += r.Reads
			ar.Actors++
			if ar.LastRead == nil || r.LastRead.After(*ar.LastRead) {
				l := r.LastRead
				ar.LastRead = &l
			}
			ar.Readers = append(ar.Readers, *r)
		}
		slices.SortFunc(ar.Readers, func(x, y Reader) int { return cmp.Or(cmp.Compare(y.Reads, x.Reads), cmp.Compare(x.Actor, y.Actor)) })
		if len(ar.Readers) > maxListed {
			ar.Readers = ar.Readers[:maxListed]
		}
		out = append(out, ar)
	}
	return out, nil
}
