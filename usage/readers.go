package usage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/usageevent"
)

// MaxJobReaders bounds the jobs JobReaders lists (it counts them all).
const MaxJobReaders = 100

// JobUse is a job's reads and writes of an asset through its completed OpenLineage runs.
type JobUse struct {
	Job           catalog.Summary
	Reads, Writes int64
}

// JobReaders is who used an asset through OpenLineage runs: the jobs, named.
type JobReaders struct {
	Jobs    []JobUse // most reads first, at most the limit asked for
	Total   int      // jobs that read or wrote the asset, in all
	Readers int      // jobs that read it, in all
	Writers int      // jobs that wrote it, in all
}

// JobReaders returns the jobs whose completed runs read or wrote an asset on days from..to,
// most reads first. A run's usage names its job, not a person (its actor is empty unless the
// job's events name an owner), so the actor rollups do not see these readers; they are counted
// from the raw events, which are kept for the retention (90 days by default), so a range
// reaching further back counts only what is still kept.
func (s *Service) JobReaders(ctx context.Context, id uuid.UUID, from, to time.Time, limit int) (JobReaders, error) {
	if limit < 1 || limit > MaxJobReaders {
		return JobReaders{}, invalid("limit", "limit must be from 1 to %d", MaxJobReaders)
	}
	type jobRow struct {
		JobID uuid.UUID `json:"job_asset_id"`
		Kind  string    `json:"kind"`
		N     int64     `json:"n"`
	}
	var rows []jobRow
	err := s.db.UsageEvent.Query().Where(usageevent.AssetID(id), usageevent.JobAssetIDNotNil(),
		usageevent.DayGTE(Day(from.UTC())), usageevent.DayLTE(Day(to.UTC()))).
		GroupBy(usageevent.FieldJobAssetID, usageevent.FieldKind).Aggregate(ent.As(ent.Count(), "n")).Scan(ctx, &rows)
	if err != nil {
		return JobReaders{}, fmt.Errorf("usage: jobs reading %s: %w", id, err)
	}
	per := map[uuid.UUID]*JobUse{}
	var all []*JobUse
	for _, r := range rows {
		u := per[r.JobID]
		if u == nil {
			u = &JobUse{Job: catalog.Summary{ID: r.JobID}}
			per[r.JobID] = u
			all = append(all, u)
		}
		if r.Kind == string(usageevent.KindRead) {
			u.Reads += r.N
		} else {
			u.Writes += r.N
		}
	}
	out := JobReaders{Total: len(all)}
	for _, u := range all {
		if u.Reads > 0 {
			out.Readers++
		}
		if u.Writes > 0 {
			out.Writers++
		}
	}
	slices.SortFunc(all, func(a, b *JobUse) int {
		return cmp.Or(cmp.Compare(b.Reads, a.Reads), cmp.Compare(b.Writes, a.Writes), cmp.Compare(a.Job.ID.String(), b.Job.ID.String()))
	})
	if len(all) > limit {
		all = all[:limit]
	}
	ids := make([]uuid.UUID, 0, len(all))
	for _, u := range all {
		ids = append(ids, u.Job.ID)
	}
	sums, err := s.cat.Summaries(ctx, ids)
	if err != nil {
		return JobReaders{}, err
	}
	out.Jobs = make([]JobUse, 0, len(all))
	for _, u := range all {
		if sum, ok := sums[u.Job.ID]; ok {
			u.Job = sum
		}
		out.Jobs = append(out.Jobs, *u)
	}
	return out, nil
}
