package cleanup

// Shard walks of a scan and the observations of unreferenced files they record.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupshardwalk"
)

// candidate is a listed file the metadata did not reference before the walk.
type candidate struct {
	key     string
	size    int64
	modTime time.Time
	newly   bool // confirmed by this walk for the first time
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
	for i, d := range out {
		if d.sr == nil {
			// Stopped before this shard's turn: it is a hole like a failed walk, and says so.
			rep.Shards = append(rep.Shards, ShardReport{Shard: shards[i], Outcome: outcomeNotReached})
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
			if c.newly {
				rep.NewlyConfirmedBytes += c.size
			}
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
			res.err = fmt.Errorf("cleanup: shard lease: %w", err)
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
			res.mismatch = fmt.Errorf("cleanup: listed %s, which is not under the table location %s after normalizing: the comparison would be unsafe", p, loc)
			return res.mismatch
		}
		if pre.hasPath(pathOnly) {
			res.mismatch = fmt.Errorf("cleanup: listed %s, but the metadata references the same path under another scheme or authority: stopping this table's scan, since one file with two names cannot be compared safely", p)
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
				if r.ConfirmedAt == nil {
					u.SetConfirmedAt(now)
					c.newly = true
				}
				confirmed = append(confirmed, c)
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
