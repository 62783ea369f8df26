package cleanup

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

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/ent/cleanupshardwalk"
	"github.com/tidemark/tidemark/tables"
)

// ScanOptions select and tune one scan.
type ScanOptions struct {
	// Shards limits the walk to these shards ("metadata/", "data/<dir>/", "data/*" for the files
	// directly under data/, "*" for those directly under the location); empty walks them all.
	Shards []string
	// Resume walks only the shards the given scan of the same table did not walk to
	// completion (a stopped or failed scan picks up where it stopped).
	Resume uuid.UUID
	// AgeThreshold is the age a file must have to be a candidate (default 72 h). Below 24 h
	// it needs AllowYoung, and the override is logged and shown on the report.
	AgeThreshold time.Duration
	AllowYoung   bool
	// SkipDangling skips the dangling-reference check.
	SkipDangling bool
	// RecheckDelay is how long a missing file is given before its second check (default 1 min).
	RecheckDelay time.Duration
	// MinGap is how far apart two complete walks of a shard must be for the second to confirm
	// what the first saw (default 1 h): two passes mean two moments, not one listing twice.
	MinGap time.Duration
	// ConfirmOnly walks only the shards whose last complete walk left files unconfirmed: the
	// confirming pass. A shard whose last walk found no candidate has nothing to confirm.
	ConfirmOnly bool
	// Progress, when set, is told how the walk goes (one call at a time).
	Progress func(Progress)
}

// Progress is a scan's state for a progress display.
type Progress struct {
	Shard       string
	ShardsDone  int
	ShardsTotal int
	Entries     int64
	Elapsed     time.Duration
	Phase       string // walking, confirming, checking
}

// candidate is a listed file the metadata did not reference before the walk.
type candidate struct {
	key     string
	size    int64
	modTime time.Time
}

// Scan walks a table's location shard by shard and checks its current files by key, records
// what it saw and returns the report. It deletes nothing and writes no table metadata.
func (s *Service) Scan(ctx context.Context, asset uuid.UUID, opt ScanOptions) (Report, error) {
	if opt.AgeThreshold == 0 {
		opt.AgeThreshold = DefaultAgeThreshold
	}
	if opt.AgeThreshold < 0 {
		return Report{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "age_threshold", Message: "the age threshold must be positive"}
	}
	override := opt.AgeThreshold < MinAgeThreshold
	if override && !opt.AllowYoung {
		return Report{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "age_threshold",
			Message: fmt.Sprintf("an age threshold of %s is below the 24h minimum: a slow writer's uncommitted files would look orphaned; pass the explicit override if you are sure", opt.AgeThreshold)}
	}
	if opt.RecheckDelay == 0 {
		opt.RecheckDelay = DefaultRecheckDelay
	}
	if opt.MinGap == 0 {
		opt.MinGap = DefaultMinGap
	}
	if opt.MinGap < 0 {
		return Report{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "min_gap", Message: "the minimum gap between confirming walks must be positive"}
	}
	if _, err := s.tables.Get(ctx, asset); err != nil {
		return Report{}, err
	}
	if opt.Resume != uuid.Nil {
		shards, err := s.unfinished(ctx, asset, opt.Resume)
		if err != nil {
			return Report{}, err
		}
		opt.Shards = shards
	}
	if opt.ConfirmOnly && (opt.Resume != uuid.Nil || len(opt.Shards) > 0) {
		return Report{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "confirm_only", Message: "a confirming pass chooses its own shards: drop the shards or resume option"}
	}
	if override {
		s.log.Warn("cleanup scan with an age threshold below 24h (explicit override)", "asset_id", asset, "threshold", opt.AgeThreshold.String())
	}
	start := s.clock()
	row, err := s.db.CleanupScan.Create().SetAssetID(asset).SetStartedAt(start).SetHeartbeatAt(start).SetState(cleanupscan.StateRunning).
		SetAgeThresholdSeconds(int64(opt.AgeThreshold / time.Second)).SetThresholdOverride(override).SetConfirmOnly(opt.ConfirmOnly).Save(ctx)
	if err != nil {
		return Report{}, err
	}
	stopBeat := s.heartbeat(ctx, row.ID)
	rep := Report{ScanID: row.ID, AssetID: asset, StartedAt: row.StartedAt, State: "running", AgeThreshold: opt.AgeThreshold.String(),
		ThresholdOverride: override, Shards: []ShardReport{}, Holes: []Hole{}, ConfirmedSample: []string{}, Dangling: []DanglingRef{},
		MinGap: opt.MinGap.String(), Pacing: s.pacing(), SharedWith: []SharedTable{}, Foreign: []ForeignTenant{},
		Assumption: fmt.Sprintf("No write takes longer than %s to commit: a file older than that which no metadata references is not part of a write in flight.", opt.AgeThreshold)}
	var serr error
	if opt.ConfirmOnly {
		rep.ConfirmOnly = true
		opt.Shards, rep.NothingToConfirm, serr = s.pendingShards(ctx, asset)
		if serr == nil && len(opt.Shards) == 0 {
			opt.SkipDangling = true
			serr = errNothingToConfirm
		}
	}
	if serr == nil {
		serr = s.scan(ctx, row.ID, &rep, opt)
	}
	if errors.Is(serr, errNothingToConfirm) {
		serr = nil
	}
	stopBeat()
	state := cleanupscan.StateFinished
	switch {
	case serr != nil && ctx.Err() != nil:
		state = cleanupscan.StateStopped
	case serr != nil:
		state = cleanupscan.StateFailed
	}
	fin := s.clock()
	rep.FinishedAt, rep.State = &fin, string(state)
	if serr != nil {
		rep.Error = serr.Error()
	}
	rep.finish(s.prices)
	body, err := json.Marshal(rep)
	if err != nil {
		return rep, fmt.Errorf("encode the report of scan %s: %w", rep.ScanID, err)
	}
	wctx := context.WithoutCancel(ctx)
	// Only a scan still running is finished here: one marked abandoned stays so.
	if err := s.db.CleanupScan.Update().Where(cleanupscan.ID(row.ID), cleanupscan.StateEQ(cleanupscan.StateRunning)).
		SetState(state).SetFinishedAt(fin).SetReport(string(body)).SetError(rep.Error).Exec(wctx); err != nil {
		return rep, errors.Join(serr, fmt.Errorf("record the end of scan %s of table %s: %w", rep.ScanID, asset, err))
	}
	s.log.Info("cleanup scan finished", "scan_id", rep.ScanID, "asset_id", asset, "state", state, "shards_complete", rep.ShardsComplete,
		"shards", len(rep.Shards), "confirmed", rep.Confirmed, "dangling", rep.DanglingCount)
	if serr != nil {
		// The report keeps the cause alone; the caller learns which scan of which table.
		serr = fmt.Errorf("scan %s of table %s (%s): %w", rep.ScanID, asset, rep.Location, serr)
	}
	return rep, serr
}

func (s *Service) scan(ctx context.Context, scanID uuid.UUID, rep *Report, opt ScanOptions) error {
	start := time.Now()
	asset := rep.AssetID
	live, err := s.tables.Open(ctx, asset)
	if err != nil {
		return err
	}
	rep.Location, rep.MetadataLocation = live.Refs.Location, live.Refs.MetadataLocation
	lister, ok := live.IO.(icebergio.ListableIO)
	if !ok {
		return fmt.Errorf("the storage of %s cannot be listed through iceberg-go's IO", live.Refs.Location)
	}
	if s.wrapIO != nil {
		lister = s.wrapIO(lister)
	}
	// Every table sharing the location counts: a file any of them references is not an orphan.
	pre, err := s.readWorld(ctx, asset, live.Refs.Location, live)
	if err != nil {
		return err
	}
	rep.Requests.ManifestReads += pre.reads
	loc := strings.TrimRight(live.Refs.Location, "/")
	locKey, _ := normalize(loc)

	shards := opt.Shards
	if len(shards) == 0 {
		if shards, err = s.discover(ctx, lister, loc, rep); err != nil {
			return fmt.Errorf("list the table location %s: %w", loc, err)
		}
	}
	rep.Planned = shards
	var progressMu sync.Mutex // shards are walked at once; the caller is told one thing at a time
	progress := func(p Progress) {
		if opt.Progress != nil {
			progressMu.Lock()
			defer progressMu.Unlock()
			p.ShardsTotal, p.Elapsed = len(shards), time.Since(start)
			opt.Progress(p)
		}
	}
	complete, metaFiles, metaWalked, err := s.walkShards(ctx, scanID, shards, walkTarget{lister, loc, locKey, pre.refs}, rep, progress)
	if err != nil {
		return err
	}
	var listed int64
	for _, sr := range rep.Shards {
		listed += sr.Entries
	}
	progress(Progress{ShardsDone: len(shards), Entries: listed, Phase: "confirming"})

	// The referenced set is re-read after the walk: a file committed while the walk ran is
	// referenced now and never becomes a candidate.
	live2, err := s.tables.Open(ctx, asset)
	if err != nil {
		return err
	}
	post, err := s.readWorld(ctx, asset, live2.Refs.Location, live2, pre)
	if err != nil {
		return err
	}
	rep.Requests.ManifestReads += post.reads
	rep.ReferencesReused = post.reused
	rep.ReferencedFiles = int64(len(post.refs.keys))
	rep.SharedWith = post.shared
	// Another table living here makes every file here possibly its: nothing is a candidate.
	strangers, err := s.strangers(ctx, rep, loc, live2, post, metaFiles, metaWalked)
	if err != nil {
		return err
	}
	if strangers {
		complete = nil
	}
	if err := s.confirmWalks(ctx, rep, complete, post.refs, opt); err != nil {
		return err
	}
	if err := s.holes(ctx, rep); err != nil {
		return err
	}
	if !opt.SkipDangling {
		progress(Progress{ShardsDone: len(shards), Entries: listed, Phase: "checking"})
		if err := s.dangling(ctx, live2, rep, opt.RecheckDelay); err != nil {
			return err
		}
	}
	return nil
}

// errNothingToConfirm ends a confirming pass that has no shard to walk.
var errNothingToConfirm = errors.New("nothing to confirm")

// pendingShards returns the shards holding files seen unreferenced by one walk and not yet
// confirmed by a second, and how many other shards were walked before (nothing to confirm).
func (s *Service) pendingShards(ctx context.Context, asset uuid.UUID) ([]string, int, error) {
	pending, err := s.db.CleanupObservation.Query().Where(cleanupobservation.AssetID(asset), cleanupobservation.ConfirmedAtIsNil()).
		Unique(true).Select(cleanupobservation.FieldShard).Strings(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("read the shards with files to confirm: %w", err)
	}
	walked, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.AssetID(asset), cleanupshardwalk.OutcomeEQ(cleanupshardwalk.OutcomeComplete)).
		Unique(true).Select(cleanupshardwalk.FieldShard).Strings(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("read the shards walked before: %w", err)
	}
	slices.Sort(pending)
	pending = slices.Compact(pending)
	quiet := 0
	for _, sh := range slices.Compact(slices.Sorted(slices.Values(walked))) {
		if _, found := slices.BinarySearch(pending, sh); !found {
			quiet++
		}
	}
	return pending, quiet, nil
}

// walkShards walks the shards, up to walkPar at once (sharing the LIST rate), and returns the
// complete walks, the unreferenced metadata files seen, and whether metadata/ was walked to
// completion. The report lists the shards in the order planned. The first error stops the rest.
func (s *Service) walkShards(ctx context.Context, scanID uuid.UUID, shards []string, t walkTarget, rep *Report,
	progress func(Progress)) (complete []walked, metaFiles []candidate, metaWalked bool, err error) {
	type done struct {
		sr      *ShardReport // nil: not walked (stopped first)
		res     walkResult
		w       *ent.CleanupShardWalk
		outcome cleanupshardwalk.Outcome
	}
	out := make([]done, len(shards))
	var listed, finished atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.walkPar)
	for i, shard := range shards {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			tick := func(n int64) {
				progress(Progress{Shard: shard, ShardsDone: int(finished.Load()), Entries: n, Phase: "walking"})
			}
			tick(listed.Load())
			res, w, sr, outcome, err := s.walkOne(gctx, scanID, rep.AssetID, shard, t, &listed, tick)
			if err != nil {
				return err
			}
			out[i] = done{sr: &sr, res: res, w: w, outcome: outcome}
			finished.Add(1)
			if res.mismatch != nil {
				return res.mismatch // an unsafe comparison stops the table's scan
			}
			if s.hook != nil && w != nil {
				s.hook(shard)
			}
			return gctx.Err()
		})
	}
	err = g.Wait()
	for _, d := range out {
		if d.sr == nil {
			continue
		}
		rep.Shards = append(rep.Shards, *d.sr)
		rep.EntriesListed += d.res.entries
		rep.DuplicateListed += d.res.dupes
		rep.Requests.List += d.res.lists
		if d.w == nil {
			continue // another worker holds the shard
		}
		for _, c := range d.res.cands { // a failed walk's entries are evidence of a tenant too
			if strings.HasSuffix(c.key, ".metadata.json") {
				metaFiles = append(metaFiles, c)
			}
		}
		if d.outcome == cleanupshardwalk.OutcomeComplete {
			complete = append(complete, walked{walk: d.w, cands: d.res.cands, idx: len(rep.Shards) - 1})
			metaWalked = metaWalked || d.sr.Shard == "metadata/"
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return complete, metaFiles, metaWalked, err
}

// strangers reports whether another table lives in the location (a metadata file with an
// unknown table-uuid): then what was observed before is dropped and the report names them. For a
// registered table, a newer metadata file of its own fails the scan (it is out of date).
func (s *Service) strangers(ctx context.Context, rep *Report, loc string, live2 *tables.Live, post *world, metaFiles []candidate, metaWalked bool) (bool, error) {
	asset := rep.AssetID
	metaPaths := make([]string, len(metaFiles))
	for i, c := range metaFiles {
		metaPaths[i] = c.key
	}
	foreign, lists, gets, err := s.probeTenants(ctx, live2.IO, loc, post, metaPaths, !metaWalked)
	rep.Requests.List += lists
	rep.Requests.Get += gets
	if err != nil {
		return false, err
	}
	if len(foreign) > 0 {
		rep.Foreign = foreign
		s.log.Warn("another table lives in this table's location: nothing there is confirmed", "asset_id", asset, "location", loc, "foreign", foreignText(foreign))
		if err := s.forgetObservations(ctx, asset); err != nil {
			return false, err
		}
		return true, nil
	}
	if live2.Refs.Registered {
		return false, newerMetadata(live2, metaFiles)
	}
	return false, nil
}

// confirmWalks keeps, of each complete walk's candidates, those still unreferenced after the
// walk and old enough, records the observation, and counts what two walks confirmed.
func (s *Service) confirmWalks(ctx context.Context, rep *Report, complete []walked, refs *refSet, opt ScanOptions) error {
	now := s.clock()
	threshold := opt.AgeThreshold
	for _, cw := range complete {
		var keep []candidate
		for _, c := range cw.cands {
			switch {
			case refs.has(c.key):
				rep.MidWalk++
			case now.Sub(c.modTime) < threshold:
				rep.TooYoung++
			default:
				keep = append(keep, c)
			}
		}
		confirmed, tooSoon, err := s.observe(ctx, cw.walk, keep, opt.MinGap)
		if err != nil {
			return err
		}
		sr := &rep.Shards[cw.idx]
		sr.TooSoon = tooSoon
		sr.Candidates = int64(len(keep))
		rep.Candidates += int64(len(keep))
		for _, c := range keep {
			rep.CandidateBytes += c.size
		}
		sr.Confirmed = int64(len(confirmed))
		rep.Confirmed += int64(len(confirmed))
		for _, c := range confirmed {
			rep.ConfirmedBytes += c.size
			if len(rep.ConfirmedSample) < 100 {
				rep.ConfirmedSample = append(rep.ConfirmedSample, c.key)
			}
		}
	}
	return nil
}

// walked is a complete walk of a scan and the candidates it found.
type walked struct {
	walk  *ent.CleanupShardWalk
	cands []candidate
	idx   int // in the report's shards
}

// walkTarget is what every shard walk of one scan reads: the storage, the location and the
// references the walk keeps out.
type walkTarget struct {
	lister      icebergio.ListableIO
	loc, locKey string
	refs        *refSet
}

// walkOne walks one shard under its lease and records the walk and its outcome in the report.
// It returns a nil walk when another worker holds the shard's lease.
func (s *Service) walkOne(ctx context.Context, scanID, asset uuid.UUID, shard string, t walkTarget, listed *atomic.Int64,
	tick func(int64)) (walkResult, *ent.CleanupShardWalk, ShardReport, cleanupshardwalk.Outcome, error) {
	sr := ShardReport{Shard: shard, StartedAt: s.clock()}
	held, err := s.claim(ctx, asset, shard, s.leaseTTL)
	if err != nil {
		return walkResult{}, nil, sr, "", err
	}
	if held == nil {
		sr.Outcome, sr.Error = "leased", "another worker holds this shard's lease"
		err := s.db.CleanupShardWalk.Create().SetScanID(scanID).SetAssetID(asset).SetShard(shard).SetStartedAt(sr.StartedAt).
			SetFinishedAt(sr.StartedAt).SetOutcome(cleanupshardwalk.OutcomeLeased).SetError(sr.Error).Exec(ctx)
		if err != nil {
			return walkResult{}, nil, sr, "", err
		}
		return walkResult{}, nil, sr, "", nil
	}
	sr.StartedAt = s.clock() // the walk's span lies within the lease
	w, err := s.db.CleanupShardWalk.Create().SetScanID(scanID).SetAssetID(asset).SetShard(shard).SetStartedAt(sr.StartedAt).
		SetOutcome(cleanupshardwalk.OutcomeRunning).Save(ctx)
	if err != nil {
		s.release(ctx, held)
		return walkResult{}, nil, sr, "", err
	}
	res := s.walkShard(ctx, t.lister, t.loc, t.locKey, shard, t.refs, listed, tick, func() error { return s.renew(ctx, held, s.leaseTTL) })
	fin := s.clock()
	if res.err == nil && res.mismatch == nil {
		// A walker paused past its lease may have finished a walk another worker redid
		// meanwhile: a walk counts as complete only if the lease is still this walker's.
		if err := s.renew(ctx, held, s.leaseTTL); err != nil {
			res.err = fmt.Errorf("shard lease: %w", err)
		}
	}
	sr.FinishedAt, sr.Entries, sr.Duplicates, sr.ListRequests = &fin, res.entries, res.dupes, res.lists
	outcome := cleanupshardwalk.OutcomeComplete
	switch {
	case res.mismatch != nil:
		outcome, sr.Error = cleanupshardwalk.OutcomeFailed, res.mismatch.Error()
	case res.err != nil && ctx.Err() != nil:
		outcome, sr.Error = cleanupshardwalk.OutcomeStopped, res.err.Error()
	case res.err != nil && res.entries == 0:
		outcome, sr.Error = cleanupshardwalk.OutcomeUnreachable, res.err.Error()
	case res.err != nil:
		outcome, sr.Error = cleanupshardwalk.OutcomeFailed, res.err.Error()
	}
	sr.Outcome = string(outcome)
	// The walk is recorded before the lease goes: the next walker of this shard must find it
	// finished, or its confirmation would chain to the walk before (streaks then reset out of
	// order, and confirmations came a round late with several replicas).
	werr := w.Update().SetFinishedAt(fin).SetOutcome(outcome).SetEntries(res.entries).SetDuplicates(res.dupes).
		SetListRequests(res.lists).SetError(sr.Error).Exec(context.WithoutCancel(ctx))
	s.release(ctx, held)
	if werr != nil {
		return walkResult{}, nil, sr, "", werr
	}
	return res, w, sr, outcome, nil
}

// discover lists the location's top level and data/'s, and returns the shards: metadata/,
// each directory under data/, data/* (files directly in data/), any other top-level directory,
// and * (files directly in the location).
func (s *Service) discover(ctx context.Context, lister icebergio.ListableIO, loc string, rep *Report) ([]string, error) {
	var shards []string
	top, rootFiles, err := s.listLevel(ctx, lister, loc, rep)
	if err != nil {
		return nil, err
	}
	for _, d := range top {
		if d != "data" {
			shards = append(shards, d+"/")
			continue
		}
		sub, files, err := s.listLevel(ctx, lister, loc+"/data", rep)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// data/ could not be listed: walk it whole, so the failure is recorded as a hole.
			s.log.Warn("could not list data/ to find its shards; walking it as one shard", "location", loc, "err", err)
			shards = append(shards, "data/")
			continue
		}
		for _, x := range sub {
			shards = append(shards, "data/"+x+"/")
		}
		if files {
			shards = append(shards, "data/*")
		}
	}
	if rootFiles {
		shards = append(shards, "*")
	}
	slices.Sort(shards)
	return shards, nil
}

// listLevel lists one directory level: the subdirectory names and whether it holds files.
func (s *Service) listLevel(ctx context.Context, lister icebergio.ListableIO, dir string, rep *Report) ([]string, bool, error) {
	var dirs []string
	files := false
	rootKey, _ := normalize(dir)
	if err := s.wait(ctx, s.lists); err != nil {
		return nil, false, err
	}
	err := lister.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if k, _ := normalize(p); k == rootKey {
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, d.Name())
			return fs.SkipDir
		}
		files = true
		return nil
	})
	rep.Requests.List++
	return dirs, files, err
}

type walkResult struct {
	entries, dupes, lists int64
	cands                 []candidate
	err                   error
	mismatch              error
}

// walkShard walks one shard, keeping only entries the pre-walk metadata did not reference.
func (s *Service) walkShard(ctx context.Context, lister icebergio.ListableIO, loc, locKey, shard string, pre *refSet,
	listed *atomic.Int64, tick func(int64), renew func() error) walkResult {
	var res walkResult
	flat := strings.HasSuffix(shard, "*")
	root := loc
	if p := strings.TrimSuffix(strings.TrimSuffix(shard, "*"), "/"); p != "" {
		root = loc + "/" + p
	}
	rootKey, _ := normalize(root)
	list := func() error {
		res.lists++
		if s.lists != nil {
			return s.lists.Wait(ctx)
		}
		return nil
	}
	var hashes []uint64
	cands := map[string]candidate{}
	lastRenew := time.Now()
	var inPage int
	res.err = lister.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if k, _ := normalize(p); flat && k != rootKey {
				return fs.SkipDir
			}
			inPage = 0
			return list() // a LIST for each directory (a delimited listing on object stores)
		}
		if inPage++; inPage > s.pageSize { // and one for each further page
			inPage = 1
			if err := list(); err != nil {
				return err
			}
		}
		key, pathOnly := normalize(p)
		hashes = append(hashes, xxhash.Sum64String(key))
		if n := listed.Add(1); n%10000 == 0 {
			tick(n)
		}
		if time.Since(lastRenew) > s.leaseTTL/3 {
			lastRenew = time.Now()
			if err := renew(); err != nil {
				return err
			}
		}
		if pre.has(key) {
			return nil
		}
		if !strings.HasPrefix(key, locKey+"/") {
			res.mismatch = fmt.Errorf("listed %s, which is not under the table location %s after normalizing: the comparison would be unsafe", p, loc)
			return res.mismatch
		}
		if pre.hasPath(pathOnly) {
			res.mismatch = fmt.Errorf("listed %s, but the metadata references the same path under another scheme or authority: stopping this table's scan, since one file with two names cannot be compared safely", p)
			return res.mismatch
		}
		if _, dup := cands[key]; dup {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone since it was listed
			}
			return err
		}
		cands[key] = candidate{key: key, size: info.Size(), modTime: info.ModTime().UTC().Truncate(time.Microsecond)} // as the database keeps it
		return nil
	})
	if errors.Is(res.err, res.mismatch) && res.mismatch != nil {
		res.err = nil
	}
	slices.Sort(hashes)
	distinct := int64(len(slices.Compact(hashes)))
	res.entries, res.dupes = distinct, int64(len(hashes))-distinct
	for _, c := range cands {
		res.cands = append(res.cands, c)
	}
	slices.SortFunc(res.cands, func(a, b candidate) int { return strings.Compare(a.key, b.key) })
	return res
}

// observe records a complete walk's old unreferenced files and returns those now confirmed:
// seen by this walk and by the shard's previous counted walk, which was complete too and
// finished at least minGap before this one started. A walk that comes sooner is marked too
// soon: it confirms nothing and does not break the chain for the files it saw too, but a file
// it did not see unreferenced (committed, changed or gone since) is no longer observed.
func (s *Service) observe(ctx context.Context, w *ent.CleanupShardWalk, cands []candidate, minGap time.Duration) ([]candidate, bool, error) {
	prev, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.AssetID(w.AssetID), cleanupshardwalk.Shard(w.Shard),
		cleanupshardwalk.IDLT(w.ID), cleanupshardwalk.OutcomeNEQ(cleanupshardwalk.OutcomeLeased), cleanupshardwalk.TooSoon(false)).
		Order(ent.Desc(cleanupshardwalk.FieldID)).First(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return nil, false, err
	}
	chained := prev != nil && prev.Outcome == cleanupshardwalk.OutcomeComplete
	if chained && (prev.FinishedAt == nil || w.StartedAt.Sub(*prev.FinishedAt) < minGap) {
		err := s.tx(ctx, func(tx *ent.Tx) error {
			rows, err := tx.CleanupObservation.Query().Where(cleanupobservation.AssetID(w.AssetID), cleanupobservation.Shard(w.Shard)).All(ctx)
			if err != nil {
				return err
			}
			seen := make(map[string]candidate, len(cands))
			for _, c := range cands {
				seen[c.key] = c
			}
			var drop []uuid.UUID
			for _, r := range rows {
				if c, ok := seen[r.Path]; !ok || !r.ModifiedAt.Equal(c.modTime) || r.Size != c.size {
					drop = append(drop, r.ID)
				}
			}
			if len(drop) > 0 {
				if _, err := tx.CleanupObservation.Delete().Where(cleanupobservation.IDIn(drop...)).Exec(ctx); err != nil {
					return err
				}
			}
			return tx.CleanupShardWalk.UpdateOne(w).SetTooSoon(true).Exec(ctx)
		})
		return nil, true, err
	}
	now := s.clock()
	var confirmed []candidate
	err = s.tx(ctx, func(tx *ent.Tx) error {
		rows, err := tx.CleanupObservation.Query().Where(cleanupobservation.AssetID(w.AssetID), cleanupobservation.Shard(w.Shard)).All(ctx)
		if err != nil {
			return err
		}
		known := make(map[string]*ent.CleanupObservation, len(rows))
		for _, r := range rows {
			known[r.Path] = r
		}
		var creates []*ent.CleanupObservationCreate
		for _, c := range cands {
			r := known[c.key]
			if r == nil {
				creates = append(creates, tx.CleanupObservation.Create().SetAssetID(w.AssetID).SetShard(w.Shard).SetPath(c.key).
					SetSize(c.size).SetModifiedAt(c.modTime).SetFirstSeenAt(now).SetLastWalkID(w.ID).SetStreak(1))
				continue
			}
			streak := 1
			if chained && r.LastWalkID == prev.ID && r.ModifiedAt.Equal(c.modTime) && r.Size == c.size {
				streak = r.Streak + 1
			}
			u := r.Update().SetSize(c.size).SetModifiedAt(c.modTime).SetLastWalkID(w.ID).SetStreak(streak)
			if streak >= 2 {
				confirmed = append(confirmed, c)
				if r.ConfirmedAt == nil {
					u.SetConfirmedAt(now)
				}
			} else {
				u.ClearConfirmedAt()
			}
			if err := u.Exec(ctx); err != nil {
				return err
			}
		}
		for len(creates) > 0 {
			n := min(len(creates), 500)
			if err := tx.CleanupObservation.CreateBulk(creates[:n]...).Exec(ctx); err != nil {
				return err
			}
			creates = creates[n:]
		}
		// What this complete walk did not see unreferenced is no longer observed.
		_, err = tx.CleanupObservation.Delete().Where(cleanupobservation.AssetID(w.AssetID), cleanupobservation.Shard(w.Shard),
			cleanupobservation.LastWalkIDNEQ(w.ID)).Exec(ctx)
		return err
	})
	return confirmed, false, err
}

// forgetObservations drops every observation of a table: they no longer prove anything.
func (s *Service) forgetObservations(ctx context.Context, asset uuid.UUID) error {
	_, err := s.db.CleanupObservation.Delete().Where(cleanupobservation.AssetID(asset)).Exec(ctx)
	return err
}

// unfinished returns the shards a scan of the table did not walk to completion.
func (s *Service) unfinished(ctx context.Context, asset, scanID uuid.UUID) ([]string, error) {
	sc, err := s.db.CleanupScan.Get(ctx, scanID)
	if ent.IsNotFound(err) || (err == nil && sc.AssetID != asset) {
		return nil, &catalog.Error{Kind: catalog.ErrNotFound, Field: "resume", Message: fmt.Sprintf("table %s has no scan %s to resume", asset, scanID)}
	}
	if err != nil {
		return nil, err
	}
	walks, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.ScanID(scanID)).All(ctx)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	planned := []string{}
	for _, w := range walks {
		done[w.Shard] = done[w.Shard] || w.Outcome == cleanupshardwalk.OutcomeComplete
		planned = append(planned, w.Shard)
	}
	if rep, err := toReport(sc); err == nil && len(rep.Planned) > 0 {
		planned = rep.Planned // includes the shards it never reached
	}
	var out []string
	for _, sh := range planned {
		if !done[sh] && !slices.Contains(out, sh) {
			out = append(out, sh)
		}
	}
	if len(out) == 0 {
		return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "resume", Message: fmt.Sprintf("scan %s walked every shard it set out to walk to completion: nothing to resume", scanID)}
	}
	slices.Sort(out)
	return out, nil
}

// holes lists the shards this scan did not complete, with when each last was.
func (s *Service) holes(ctx context.Context, rep *Report) error {
	for _, sh := range rep.Shards {
		if sh.Outcome == "complete" {
			continue
		}
		h := Hole{Shard: sh.Shard, Outcome: sh.Outcome}
		last, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.AssetID(rep.AssetID), cleanupshardwalk.Shard(sh.Shard),
			cleanupshardwalk.OutcomeEQ(cleanupshardwalk.OutcomeComplete)).Order(ent.Desc(cleanupshardwalk.FieldID)).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return err
		}
		if last != nil {
			h.LastCompleteAt = last.FinishedAt
		}
		rep.Holes = append(rep.Holes, h)
	}
	return nil
}

// newerMetadata stops the scan of a table registered by metadata location when its metadata
// directory holds a metadata file newer than the registered one: the registered metadata is
// stale, and files the newer one references would look orphaned.
func newerMetadata(live *tables.Live, metaFiles []candidate) error {
	cur := live.Table.Metadata().LastUpdatedMillis()
	for _, c := range metaFiles {
		if c.modTime.UnixMilli() > cur {
			return fmt.Errorf("%s is newer than the registered metadata %s: register the table's current metadata (or sync it from its catalog) before scanning", c.key, live.Refs.MetadataLocation)
		}
	}
	return nil
}

// dangling checks by key (never by walking, never from the cache) the current metadata file,
// manifest list and manifests, then every live file of the current snapshot, and checks the
// missing ones again after a delay before reporting them. A missing manifest is a dangling
// reference like a missing data file.
func (s *Service) dangling(ctx context.Context, live *tables.Live, rep *Report, delay time.Duration) error {
	var heads, unchecked atomic.Int64
	head := func(p string) (missing bool, err error) {
		if s.heads != nil {
			if err := s.heads.Wait(ctx); err != nil {
				return false, err
			}
		}
		heads.Add(1)
		_, err = stat(live.IO, p)
		return errors.Is(err, fs.ErrNotExist), err
	}
	check := func(files []tables.CurrentFile) ([]tables.CurrentFile, error) {
		var mu sync.Mutex
		var missing []tables.CurrentFile
		sem := make(chan struct{}, s.statPar)
		var wg sync.WaitGroup
		for _, f := range files {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				gone, err := head(f.Path)
				switch {
				case gone:
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
		return missing, ctx.Err()
	}
	structure, serr := s.tables.CurrentStructure(ctx, live)
	missing, err := check(structure)
	if err != nil {
		return err
	}
	rep.FilesChecked += int64(len(structure))
	if serr != nil && len(missing) == 0 {
		return fmt.Errorf("read the current manifest list: %w", serr)
	}
	// Stream the current files in batches, so a table of millions of files is never held whole.
	var batch []tables.CurrentFile
	flush := func() error {
		m, err := check(batch)
		missing = append(missing, m...)
		rep.FilesChecked += int64(len(batch))
		batch = batch[:0]
		return err
	}
	err = s.tables.WalkCurrentFiles(ctx, live, func(f tables.CurrentFile) error {
		batch = append(batch, f)
		if len(batch) == 10000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil && len(missing) > 0 && ctx.Err() == nil {
		// A missing manifest (or list) cannot be read for its entries: its files stay unchecked.
		s.log.Warn("could not read every current manifest; some are missing", "err", err)
		unchecked.Add(1)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("check referenced files: %w", err)
	}
	if len(missing) > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if missing, err = check(missing); err != nil {
			return err
		}
	}
	slices.SortFunc(missing, func(a, b tables.CurrentFile) int { return strings.Compare(a.Path, b.Path) })
	rep.DanglingCount = int64(len(missing))
	for _, m := range missing {
		if len(rep.Dangling) == 1000 {
			break
		}
		rep.Dangling = append(rep.Dangling, DanglingRef{SnapshotID: m.SnapshotID, Manifest: m.Manifest, Path: m.Path, Content: m.Content})
	}
	rep.Requests.Head += heads.Load()
	rep.Unchecked += unchecked.Load()
	return nil
}

// heartbeat renews a running scan's heartbeat every lease period / 3 until stopped, so another
// worker can tell a scan whose worker died (see abandon).
func (s *Service) heartbeat(ctx context.Context, scanID uuid.UUID) (stop func()) {
	return ticking(ctx, s.leaseTTL/3, func() bool {
		if err := s.db.CleanupScan.Update().Where(cleanupscan.ID(scanID), cleanupscan.StateEQ(cleanupscan.StateRunning)).
			SetHeartbeatAt(s.clock()).Exec(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("could not renew a scan's heartbeat; will retry", "scan_id", scanID, "err", err)
		}
		return true
	})
}
