package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/ent/cleanupshardwalk"
	"github.com/tidemark/tidemark/internal/words"
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
	// MinGap is how far apart two complete walks of a shard must be for the second to confirm
	// what the first saw (default 1 h): two passes mean two moments, not one listing twice.
	MinGap time.Duration
	// ConfirmOnly walks only the shards whose last complete walk left files unconfirmed: the
	// confirming pass. A shard whose last walk found no candidate has nothing to confirm.
	ConfirmOnly bool
	// FromInventory runs an inventory pass instead of a walk, for a table Tidemark serves: the
	// files its write-path inventory records as staged by commits that did not happen are
	// settled from the record without listing storage. Only a walk finds what nobody recorded.
	FromInventory bool
	// WalkOnly judges every listed file of a served table by the walk alone, leaving out what
	// the write-path inventory knows: to check the inventory against storage (or measure both).
	WalkOnly bool
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
	Phase       string // walking, confirming
}

// Scan walks a table's location shard by shard, records what it saw and returns the report.
// Whether every referenced file is present is the reference check's question (CheckRefs). It deletes nothing and writes no table metadata.
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
			Message: fmt.Sprintf("an age threshold of %s is below the 1-day minimum: a slow writer's uncommitted files would look orphaned; pass the explicit override if you are sure", words.Duration(opt.AgeThreshold))}
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
	if opt.FromInventory && (opt.ConfirmOnly || opt.Resume != uuid.Nil || len(opt.Shards) > 0) {
		return Report{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "from_inventory", Message: "an inventory pass lists no shard: drop the shards, resume and confirm-only options"}
	}
	if opt.FromInventory {
		if t, err := s.tables.Get(ctx, asset); err == nil && t.Warehouse == "" {
			return Report{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "from_inventory", Message: fmt.Sprintf("table %s is not served by Tidemark, so it has no write-path inventory: walk it instead", asset)}
		}
	}
	if override {
		s.log.Warn("cleanup scan with an age threshold below 24h (explicit override)", "asset_id", asset, "threshold", opt.AgeThreshold.String())
	}
	start := s.clock()
	row, err := s.db.CleanupScan.Create().SetAssetID(asset).SetStartedAt(start).SetHeartbeatAt(start).SetState(cleanupscan.StateRunning).
		SetAgeThresholdSeconds(int64(opt.AgeThreshold / time.Second)).SetThresholdOverride(override).SetConfirmOnly(opt.ConfirmOnly).SetFromInventory(opt.FromInventory).Save(ctx)
	if err != nil {
		return Report{}, err
	}
	stopBeat := s.heartbeat(ctx, row.ID)
	rep := Report{ScanID: row.ID, AssetID: asset, StartedAt: row.StartedAt, State: "running", AgeThreshold: opt.AgeThreshold.String(),
		ThresholdOverride: override, Shards: []ShardReport{}, Holes: []Hole{}, ConfirmedSample: []string{},
		MinGap: opt.MinGap.String(), Pacing: s.pacing(), SharedWith: []SharedTable{}, Foreign: []ForeignTenant{},
		Assumption: fmt.Sprintf("No write takes longer than %s to commit: a file older than that which no metadata references is not part of a write in flight.", words.Duration(opt.AgeThreshold))}
	var serr error
	rep.FromInventory = opt.FromInventory
	if opt.ConfirmOnly {
		rep.ConfirmOnly = true
		opt.Shards, rep.NothingToConfirm, serr = s.pendingShards(ctx, asset)
		if serr == nil && len(opt.Shards) == 0 {
			serr = errNothingToConfirm
		}
	}
	switch {
	case serr == nil && opt.FromInventory:
		serr = s.scanInventory(ctx, row.ID, &rep, opt)
	case serr == nil:
		serr = s.scan(ctx, row.ID, &rep, opt)
	}
	if errors.Is(serr, errNothingToConfirm) {
		serr = nil
	}
	// Every planned shard not walked to completion is a hole, however the scan ended.
	if err := s.holes(context.WithoutCancel(ctx), &rep); err != nil {
		serr = errors.Join(serr, err)
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
	if !opt.ConfirmOnly {
		prev, err := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(asset), cleanupscan.IDLT(row.ID), cleanupscan.StateEQ(cleanupscan.StateFinished),
			cleanupscan.ConfirmOnly(false), cleanupscan.FromInventory(opt.FromInventory)).Order(ent.Desc(cleanupscan.FieldID)).First(context.WithoutCancel(ctx))
		if err == nil {
			rep.PreviousStartedAt = &prev.StartedAt
		}
	}
	if serr != nil {
		rep.Error = serr.Error()
	}
	rep.finish(s.prices)
	body, err := json.Marshal(rep)
	if err != nil {
		return rep, fmt.Errorf("cleanup: encode the report of scan %s: %w", rep.ScanID, err)
	}
	wctx := context.WithoutCancel(ctx)
	// Only a scan still running is finished here: one marked abandoned stays so.
	if err := s.db.CleanupScan.Update().Where(cleanupscan.ID(row.ID), cleanupscan.StateEQ(cleanupscan.StateRunning)).
		SetState(state).SetFinishedAt(fin).SetReport(string(body)).SetError(rep.Error).Exec(wctx); err != nil {
		return rep, errors.Join(serr, fmt.Errorf("cleanup: record the end of scan %s of table %s: %w", rep.ScanID, asset, err))
	}
	s.log.Info("cleanup scan finished", "scan_id", rep.ScanID, "asset_id", asset, "state", state, "shards_complete", rep.ShardsComplete,
		"shards", len(rep.Shards), "confirmed", rep.Confirmed)
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
		return fmt.Errorf("cleanup: the storage of %s cannot be listed through iceberg-go's IO", live.Refs.Location)
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
			return fmt.Errorf("cleanup: list the table location %s: %w", loc, err)
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
	if !opt.WalkOnly {
		if err := s.settleKnown(ctx, rep, complete); err != nil {
			return err
		}
	}
	return s.confirmWalks(ctx, rep, complete, post.refs, opt)
}

// errNothingToConfirm ends a confirming pass that has no shard to walk.
var errNothingToConfirm = errors.New("nothing to confirm")

// pendingShards returns the shards holding files seen unreferenced by one walk and not yet
// confirmed by a second, and how many other shards were walked before (nothing to confirm).
func (s *Service) pendingShards(ctx context.Context, asset uuid.UUID) ([]string, int, error) {
	pending, err := s.db.CleanupObservation.Query().Where(cleanupobservation.AssetID(asset), cleanupobservation.ConfirmedAtIsNil()).
		Unique(true).Select(cleanupobservation.FieldShard).Strings(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("cleanup: read the shards with files to confirm: %w", err)
	}
	walked, err := s.db.CleanupShardWalk.Query().Where(cleanupshardwalk.AssetID(asset), cleanupshardwalk.OutcomeEQ(cleanupshardwalk.OutcomeComplete)).
		Unique(true).Select(cleanupshardwalk.FieldShard).Strings(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("cleanup: read the shards walked before: %w", err)
	}
	// An inventory pass confirms its own observations: a confirming walk has no such shard.
	pending = slices.DeleteFunc(pending, func(sh string) bool { return sh == inventoryShard })
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
			return fmt.Errorf("cleanup: %s is newer than the registered metadata %s: register the table's current metadata (or sync it from its catalog) before scanning", c.key, live.Refs.MetadataLocation)
		}
	}
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
