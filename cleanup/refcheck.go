package cleanup

// The reference check: by key, every file a table's retained snapshots and refs reference, as a
// job of its own (seed 001: "is everything that should be here, here?" is answered from the
// record, never by a walk). It is checkpointed by unit, resumes where it stopped, and its report
// counts only what it checked.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanuprefcheck"
	"github.com/tidemark/tidemark/ent/cleanuprefcheckunit"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/tables"
)

// DefaultResumeWithin is how old a stopped reference check may be and still be resumed: the
// units it checked are evidence of their moment, not of today.
const DefaultResumeWithin = 7 * 24 * time.Hour

// refsLease is the lease name of a table's reference check, so replicas do not run it twice.
const refsLease = "*refs*"

// RefCheckOptions tune one reference check.
type RefCheckOptions struct {
	// RecheckDelay is how long a missing file is given before its second check (default 1 min).
	RecheckDelay time.Duration
	// Fresh starts a new pass even when a stopped one could be resumed.
	Fresh bool
	// ResumeWithin bounds the age of a stopped pass that is resumed (default 7 days).
	ResumeWithin time.Duration
	// Progress, when set, is told how the check goes (one call at a time).
	Progress func(RefCheckProgress)
}

// RefCheckProgress is a reference check's state for a progress display.
type RefCheckProgress struct {
	UnitsDone, UnitsTotal int
	FilesChecked          int64
	Phase                 string // checking, rechecking
}

// RefCheckReport is what one pass of the reference check checked and found. Figures count what
// was checked: a pass that stopped says how far it got and never counts a file it did not check.
type RefCheckReport struct {
	CheckID          uuid.UUID  `json:"check_id"`
	AssetID          uuid.UUID  `json:"asset_id"`
	State            string     `json:"state"` // running, complete, stopped, failed
	StartedAt        time.Time  `json:"started_at"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	Runs             int        `json:"runs"` // 1, plus one per resumption
	Error            string     `json:"error,omitempty"`
	MetadataLocation string     `json:"metadata_location"`
	// Units are the metadata structure (metadata file and manifest lists) and one per distinct
	// manifest of the retained snapshots; a unit is checked whole or not at all.
	Units        int   `json:"units"`
	UnitsChecked int   `json:"units_checked"`
	FilesChecked int64 `json:"files_checked"` // files checked by key in the checked units
	// Prioritised counts the manifests a served table's commits added since the last complete
	// pass (from the write-path inventory): they are checked first.
	Prioritised int `json:"prioritised"`
	// MissingFirst are the files missing on the first check; Rechecked says whether the second
	// check ran (only then are the missing ones dangling references).
	MissingFirst  int64              `json:"missing_first_check"`
	Rechecked     bool               `json:"rechecked"`
	DanglingCount int64              `json:"dangling_count"`
	Dangling      []DanglingRef      `json:"dangling"` // up to 1,000
	Unchecked     int64              `json:"unchecked"`
	Snapshots     []SnapshotCoverage `json:"snapshots"`
	Refs          []RefCoverage      `json:"refs"`
	Requests      Requests           `json:"requests"`
	Pacing        Pacing             `json:"pacing"`
	Summary       string             `json:"summary"`
}

// SnapshotCoverage is how much of one retained snapshot a pass checked.
type SnapshotCoverage struct {
	SnapshotID       int64    `json:"snapshot_id"`
	Current          bool     `json:"current"`
	Refs             []string `json:"refs,omitempty"`
	Manifests        int      `json:"manifests"`
	ManifestsChecked int      `json:"manifests_checked"`
	FilesChecked     int64    `json:"files_checked"`
	ListUnreadable   bool     `json:"manifest_list_unreadable,omitempty"`
}

// RefCoverage is how much of what one branch or tag references a pass checked.
type RefCoverage struct {
	Name             string `json:"name"`
	SnapshotID       int64  `json:"snapshot_id"`
	Manifests        int    `json:"manifests"`
	ManifestsChecked int    `json:"manifests_checked"`
	FilesChecked     int64  `json:"files_checked"`
}

// refUnit is one unit of a pass: the structure, or one manifest.
type refUnit struct {
	key      string
	manifest *tables.RetainedManifest // nil for the structure
}

// unitResult is a checked unit, as recorded.
type unitResult struct {
	files, unchecked int64
	missing          []DanglingRef
}

// CheckRefs checks by key every file the table's retained snapshots and refs reference: the
// metadata file, the manifest lists, the manifests and their data and delete files. It resumes
// the table's last pass when that one stopped less than ResumeWithin ago, checks the manifests
// a served table's commits added since the last complete pass first, and checks the missing
// files again after RecheckDelay before it reports them as dangling. It deletes nothing.
func (s *Service) CheckRefs(ctx context.Context, asset uuid.UUID, opt RefCheckOptions) (RefCheckReport, error) {
	if opt.RecheckDelay <= 0 {
		opt.RecheckDelay = DefaultRecheckDelay
	}
	if opt.ResumeWithin <= 0 {
		opt.ResumeWithin = DefaultResumeWithin
	}
	if _, err := s.tables.Get(ctx, asset); err != nil {
		return RefCheckReport{}, err
	}
	held, err := s.claim(ctx, asset, refsLease, s.leaseTTL)
	if err != nil {
		return RefCheckReport{}, fmt.Errorf("cleanup: claim the reference check of table %s: %w", asset, err)
	}
	if held == nil {
		return RefCheckReport{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("another worker is checking the references of table %s", asset)}
	}
	defer s.release(ctx, held)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := s.keepRenewing(cctx, held, s.leaseTTL, cancel)
	defer stop()
	row, err := s.startRefCheck(cctx, asset, opt)
	if err != nil {
		return RefCheckReport{}, err
	}
	rep := RefCheckReport{CheckID: row.ID, AssetID: asset, State: "running", StartedAt: row.StartedAt, Runs: row.Runs,
		Dangling: []DanglingRef{}, Snapshots: []SnapshotCoverage{}, Refs: []RefCoverage{}, Pacing: s.pacing()}
	cerr := s.checkRefs(cctx, row, &rep, opt)
	if cause := context.Cause(cctx); cerr != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		cerr = fmt.Errorf("%w (%w)", cerr, cause)
	}
	state := cleanuprefcheck.StateComplete
	switch {
	case cerr != nil && cctx.Err() != nil:
		state = cleanuprefcheck.StateStopped
	case cerr != nil:
		state = cleanuprefcheck.StateFailed
	}
	fin := s.clock()
	rep.State, rep.FinishedAt = string(state), &fin
	if cerr != nil {
		rep.Error = cerr.Error()
	}
	rep.summarize()
	body, err := json.Marshal(rep)
	if err != nil {
		return rep, fmt.Errorf("cleanup: encode reference check %s: %w", rep.CheckID, err)
	}
	if err := row.Update().SetState(state).SetFinishedAt(fin).SetReport(string(body)).SetError(rep.Error).
		SetMetadataLocation(rep.MetadataLocation).Exec(context.WithoutCancel(ctx)); err != nil {
		return rep, errors.Join(cerr, fmt.Errorf("cleanup: record the end of reference check %s: %w", rep.CheckID, err))
	}
	s.log.Info("reference check finished", "check_id", rep.CheckID, "asset_id", asset, "state", state, "units", rep.UnitsChecked,
		"of", rep.Units, "files", rep.FilesChecked, "dangling", rep.DanglingCount)
	if cerr != nil {
		cerr = fmt.Errorf("reference check %s of table %s: %w", rep.CheckID, asset, cerr)
	}
	return rep, cerr
}

// startRefCheck resumes the table's newest pass when it did not complete and is recent enough,
// else starts a new one.
func (s *Service) startRefCheck(ctx context.Context, asset uuid.UUID, opt RefCheckOptions) (*ent.CleanupRefCheck, error) {
	now := s.clock()
	last, err := s.db.CleanupRefCheck.Query().Where(cleanuprefcheck.AssetID(asset)).Order(ent.Desc(cleanuprefcheck.FieldID)).First(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return nil, fmt.Errorf("cleanup: read the last reference check: %w", err)
	}
	// A pass left "running" lost its worker: the lease this one holds says nobody runs it now.
	if last != nil && !opt.Fresh && last.State != cleanuprefcheck.StateComplete && now.Sub(last.StartedAt) < opt.ResumeWithin {
		return last.Update().SetState(cleanuprefcheck.StateRunning).AddRuns(1).SetHeartbeatAt(now).ClearFinishedAt().SetError("").Save(ctx)
	}
	return s.db.CleanupRefCheck.Create().SetAssetID(asset).SetStartedAt(now).SetHeartbeatAt(now).
		SetState(cleanuprefcheck.StateRunning).Save(ctx)
}

// checkRefs runs one pass: the units not yet checked, then the second check of the missing.
func (s *Service) checkRefs(ctx context.Context, row *ent.CleanupRefCheck, rep *RefCheckReport, opt RefCheckOptions) error {
	live, err := s.tables.Open(ctx, rep.AssetID)
	if err != nil {
		return err
	}
	rep.MetadataLocation = live.Refs.MetadataLocation
	ret, err := s.tables.Retained(ctx, live)
	if err != nil {
		return err
	}
	units, err := s.refUnits(ctx, rep, ret)
	if err != nil {
		return err
	}
	done, err := s.checkedUnits(ctx, row.ID)
	if err != nil {
		return err
	}
	var heads atomic.Int64
	defer func() {
		rep.Requests.Head += heads.Load()
		rep.Requests.ManifestReads += live.Refs.Report.ManifestsRead + live.Refs.Report.ManifestListsRead
		rep.coverage(ret, units, done)
	}()
	seen := map[string]bool{}
	beat := s.clock()
	for i, u := range units {
		if _, ok := done[u.key]; ok {
			continue
		}
		if opt.Progress != nil {
			opt.Progress(RefCheckProgress{UnitsDone: i, UnitsTotal: len(units), FilesChecked: filesIn(done), Phase: "checking"})
		}
		res, err := s.checkUnit(ctx, live, ret, u, seen, &heads)
		if err != nil {
			return err
		}
		if err := s.recordUnit(ctx, row.ID, u.key, res); err != nil {
			return err
		}
		done[u.key] = res
		// The heartbeat says the pass is alive; the lease already keeps others off it, so a
		// beat a lease third is enough (not one more write per manifest).
		if now := s.clock(); now.Sub(beat) >= s.leaseTTL/3 {
			if err := row.Update().SetHeartbeatAt(now).Exec(ctx); err != nil {
				return fmt.Errorf("cleanup: renew the reference check's heartbeat: %w", err)
			}
			beat = now
		}
	}
	var missing []DanglingRef
	for _, u := range units {
		missing = append(missing, done[u.key].missing...)
	}
	rep.MissingFirst = int64(len(missing))
	if len(missing) > 0 {
		if opt.Progress != nil {
			opt.Progress(RefCheckProgress{UnitsDone: len(units), UnitsTotal: len(units), FilesChecked: filesIn(done), Phase: "rechecking"})
		}
		if err := loop.Sleep(ctx, opt.RecheckDelay); err != nil {
			return err
		}
		if missing, _, err = s.headAll(ctx, live, missing, &heads); err != nil {
			return err
		}
	}
	rep.Rechecked = true
	slices.SortFunc(missing, func(a, b DanglingRef) int { return strings.Compare(a.Path, b.Path) })
	rep.DanglingCount = int64(len(missing))
	rep.Dangling = append(rep.Dangling, missing[:min(len(missing), 1000)]...)
	return nil
}

// refUnits lists a pass's units in the order they are checked: the structure, then the
// manifests a served table's commits added since the last complete pass, then the current
// snapshot's, then the rest (each group by path).
func (s *Service) refUnits(ctx context.Context, rep *RefCheckReport, ret *tables.Retained) ([]refUnit, error) {
	units := []refUnit{{key: "structure:" + ret.MetadataLocation}}
	since := time.Time{}
	last, err := s.db.CleanupRefCheck.Query().Where(cleanuprefcheck.AssetID(rep.AssetID), cleanuprefcheck.StateEQ(cleanuprefcheck.StateComplete)).
		Order(ent.Desc(cleanuprefcheck.FieldID)).First(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return nil, fmt.Errorf("cleanup: read the last complete reference check: %w", err)
	}
	fresh := map[string]bool{}
	if last != nil && s.served != nil {
		since = last.StartedAt
		if fresh, err = s.served.ManifestsAddedSince(ctx, rep.AssetID, since); err != nil {
			return nil, err
		}
	}
	current := map[string]bool{}
	for _, sn := range ret.Snapshots {
		if sn.Current {
			for _, m := range sn.Manifests {
				current[m] = true
			}
		}
	}
	rank := func(m tables.RetainedManifest) int {
		switch {
		case fresh[m.Path]:
			return 0
		case current[m.Path]:
			return 1
		}
		return 2
	}
	ms := slices.Clone(ret.Manifests)
	slices.SortStableFunc(ms, func(a, b tables.RetainedManifest) int { return rank(a) - rank(b) })
	for i := range ms {
		if fresh[ms[i].Path] {
			rep.Prioritised++
		}
		units = append(units, refUnit{key: ms[i].Path, manifest: &ms[i]})
	}
	return units, nil
}

// checkedUnits reads the units a pass checked in its earlier runs.
func (s *Service) checkedUnits(ctx context.Context, checkID uuid.UUID) (map[string]unitResult, error) {
	rows, err := s.db.CleanupRefCheckUnit.Query().Where(cleanuprefcheckunit.CheckID(checkID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup: read the checked units of reference check %s: %w", checkID, err)
	}
	done := make(map[string]unitResult, len(rows))
	for _, r := range rows {
		res := unitResult{files: r.Files, unchecked: r.Unchecked}
		if r.Missing != "" {
			if err := json.Unmarshal([]byte(r.Missing), &res.missing); err != nil {
				return nil, fmt.Errorf("cleanup: unit %s of reference check %s: %w", r.Unit, checkID, err)
			}
		}
		done[r.Unit] = res
	}
	return done, nil
}

// recordUnit is the checkpoint: a recorded unit is not checked again when the pass resumes.
func (s *Service) recordUnit(ctx context.Context, checkID uuid.UUID, unit string, res unitResult) error {
	missing := ""
	if len(res.missing) > 0 {
		b, err := json.Marshal(res.missing)
		if err != nil {
			return err
		}
		missing = string(b)
	}
	if err := s.db.CleanupRefCheckUnit.Create().SetCheckID(checkID).SetUnit(unit).SetFiles(res.files).SetUnchecked(res.unchecked).
		SetMissing(missing).SetCheckedAt(s.clock()).Exec(ctx); err != nil {
		return fmt.Errorf("cleanup: record a checked unit of reference check %s: %w", checkID, err)
	}
	return nil
}

// checkUnit checks one unit by key. The structure is the metadata file and every retained
// snapshot's manifest list; a manifest unit is the manifest and its live entries (read through
// the manifest cache, so a missing manifest's files are still checked when it was read before).
// Files seen earlier in this run are not checked twice.
func (s *Service) checkUnit(ctx context.Context, live *tables.Live, ret *tables.Retained, u refUnit, seen map[string]bool,
	heads *atomic.Int64) (unitResult, error) {
	var files []DanglingRef
	var res unitResult
	if u.manifest == nil {
		files = append(files, DanglingRef{Path: ret.MetadataLocation, Content: "metadata"})
		for _, sn := range ret.Snapshots {
			if sn.ManifestList != "" {
				files = append(files, DanglingRef{SnapshotID: sn.ID, Path: sn.ManifestList, Content: "manifest_list", Refs: sn.Refs})
			}
		}
		for list, err := range ret.Unreadable {
			if !errors.Is(err, fs.ErrNotExist) {
				res.unchecked++ // not missing, but its manifests could not be listed
				s.log.Warn("could not read a retained manifest list", "path", list, "err", err)
			}
		}
	} else {
		m := u.manifest
		refs := snapshotRefs(ret, m.Snapshots)
		files = append(files, DanglingRef{SnapshotID: m.Snapshots[0], Manifest: "", Path: m.Path, Content: "manifest", Refs: refs})
		entries, err := ret.Files(ctx, *m)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.unchecked++ // its entries could not be read: they are not counted as checked
			s.log.Warn("could not read a retained manifest's entries", "path", m.Path, "err", err)
		}
		for _, f := range entries {
			files = append(files, DanglingRef{SnapshotID: f.SnapshotID, Manifest: f.Manifest, Path: f.Path, Content: f.Content, Refs: refs})
		}
	}
	todo := files[:0]
	for _, f := range files {
		if !seen[f.Path] {
			seen[f.Path] = true
			todo = append(todo, f)
		}
	}
	missing, unchecked, err := s.headAll(ctx, live, todo, heads)
	if err != nil {
		return res, err
	}
	res.files = int64(len(todo)) - unchecked
	res.unchecked += unchecked
	res.missing = missing
	return res, nil
}

// headAll checks files by key, statPar at once and paced by the shared HEAD limiter. It returns
// the missing ones and how many could not be checked for another reason than absence.
func (s *Service) headAll(ctx context.Context, live *tables.Live, files []DanglingRef, heads *atomic.Int64) ([]DanglingRef, int64, error) {
	var mu sync.Mutex
	var missing []DanglingRef
	var unchecked atomic.Int64
	sem := make(chan struct{}, max(s.statPar, 1))
	var wg sync.WaitGroup
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		if err := s.wait(ctx, s.heads); err != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			heads.Add(1)
			_, err := stat(live.IO, f.Path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				mu.Lock()
				missing = append(missing, f)
				mu.Unlock()
			case err != nil && ctx.Err() == nil:
				unchecked.Add(1)
				s.log.Warn("could not check a referenced file", "path", f.Path, "err", err)
			}
		}()
	}
	wg.Wait()
	return missing, unchecked.Load(), ctx.Err()
}

// snapshotRefs are the branches and tags whose head is one of the snapshots.
func snapshotRefs(ret *tables.Retained, ids []int64) []string {
	var out []string
	for _, sn := range ret.Snapshots {
		if slices.Contains(ids, sn.ID) {
			out = append(out, sn.Refs...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// filesIn counts the files the given units checked.
func filesIn(done map[string]unitResult) int64 {
	var n int64
	for _, u := range done {
		n += u.files
	}
	return n
}

// coverage fills the report's figures from the units checked, counting only units of the
// current structure (a unit a resumed pass checked for manifests no longer retained is not).
func (r *RefCheckReport) coverage(ret *tables.Retained, units []refUnit, done map[string]unitResult) {
	r.Units, r.UnitsChecked, r.FilesChecked, r.Unchecked = len(units), 0, 0, 0
	for _, u := range units {
		if res, ok := done[u.key]; ok {
			r.UnitsChecked++
			r.FilesChecked += res.files
			r.Unchecked += res.unchecked
		}
	}
	r.Snapshots, r.Refs = []SnapshotCoverage{}, []RefCoverage{}
	for _, sn := range ret.Snapshots {
		c := SnapshotCoverage{SnapshotID: sn.ID, Current: sn.Current, Refs: sn.Refs, Manifests: len(sn.Manifests)}
		_, c.ListUnreadable = ret.Unreadable[sn.ManifestList]
		for _, m := range sn.Manifests {
			if res, ok := done[m]; ok {
				c.ManifestsChecked++
				c.FilesChecked += res.files
			}
		}
		r.Snapshots = append(r.Snapshots, c)
		for _, name := range sn.Refs {
			r.Refs = append(r.Refs, RefCoverage{Name: name, SnapshotID: sn.ID, Manifests: c.Manifests, ManifestsChecked: c.ManifestsChecked, FilesChecked: c.FilesChecked})
		}
	}
	slices.SortFunc(r.Refs, func(a, b RefCoverage) int { return strings.Compare(a.Name, b.Name) })
}

// summarize writes the report's summary from its figures, claiming nothing it did not check.
func (r *RefCheckReport) summarize() {
	var b strings.Builder
	fmt.Fprintf(&b, "Checked by key %d files in %d of %d units (the metadata structure and %d manifests) of %d retained snapshots and %d refs",
		r.FilesChecked, r.UnitsChecked, r.Units, max(r.Units-1, 0), len(r.Snapshots), len(r.Refs))
	if r.Runs > 1 {
		fmt.Fprintf(&b, ", over %d runs", r.Runs)
	}
	fmt.Fprintf(&b, " (%d HEAD requests). ", r.Requests.Head)
	if r.Prioritised > 0 {
		fmt.Fprintf(&b, "%d manifests committed since the last complete pass were checked first. ", r.Prioritised)
	}
	switch {
	case r.Rechecked:
		fmt.Fprintf(&b, "%d files were missing on the first check and %d on the second: %d dangling references. ", r.MissingFirst, r.DanglingCount, r.DanglingCount)
	case r.MissingFirst > 0:
		fmt.Fprintf(&b, "%d files were missing on the first check; the second check has not run, so none is reported dangling yet. ", r.MissingFirst)
	}
	if r.Unchecked > 0 {
		fmt.Fprintf(&b, "%d files or manifests could not be checked for another reason than absence. ", r.Unchecked)
	}
	switch r.State {
	case "complete":
	case "running":
		b.WriteString("The check is still running. ")
	default:
		fmt.Fprintf(&b, "The check %s before it finished: %d units are not checked yet, and the next run resumes there. ", r.State, r.Units-r.UnitsChecked)
	}
	r.Summary = strings.TrimSpace(b.String())
}
