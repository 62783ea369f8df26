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
	"github.com/tidemark/tidemark/ent/predicate"
	"github.com/tidemark/tidemark/ent/usageactordaily"
	"github.com/tidemark/tidemark/ent/usageactormonthly"
	"github.com/tidemark/tidemark/ent/usagedaily"
	"github.com/tidemark/tidemark/ent/usagename"
)

// Point is one bucket of a usage series.
type Point struct {
	Start          time.Time
	Reads, Writes  int64
	DistinctActors int
	// DistinctJobs per day; for a week, the largest daily figure (jobs are not kept per week).
	DistinctJobs int
}

// ActorCount is an actor's reads and writes in a range.
type ActorCount struct {
	Actor         string
	Reads, Writes int64
}

// NameSeen is a name usage was reported under.
type NameSeen struct {
	Namespace, Name string
	FirstAt, LastAt time.Time
	Current         bool // the asset's current name
}

// Series is an asset's usage over a range.
type Series struct {
	AssetID        uuid.UUID
	From, To       time.Time // days From..To, inclusive
	Granularity    string
	Points         []Point
	Reads, Writes  int64
	DistinctActors int
	LastRead       *time.Time
	LastWrite      *time.Time
	LateRecords    int64 // attributed after the fact
	TopActors      []ActorCount
	NamesSeen      []NameSeen
}

// Granularities.
const (
	Daily  = "day"
	Weekly = "week"
)

// MaxRangeDays bounds a series.
const MaxRangeDays = 3660

// Series returns an asset's usage from the rollups (never the raw events, which expire), across
// every name it had: usage is keyed on the ID.
func (s *Service) Series(ctx context.Context, id uuid.UUID, from, to time.Time, granularity string) (Series, error) {
	if granularity != Daily && granularity != Weekly {
		return Series{}, invalid("granularity", "granularity must be day or week, not %q", granularity)
	}
	from, to = from.UTC().Truncate(24*time.Hour), to.UTC().Truncate(24*time.Hour)
	if to.Before(from) {
		return Series{}, invalid("to", "to (%s) is before from (%s)", Day(to), Day(from))
	}
	if to.Sub(from) > MaxRangeDays*24*time.Hour {
		return Series{}, invalid("from", "a series spans at most %d days", MaxRangeDays)
	}
	a, err := s.cat.Get(ctx, id)
	if err != nil {
		return Series{}, err
	}
	days, err := s.db.UsageDaily.Query().Where(usagedaily.AssetID(id), usagedaily.DayGTE(Day(from)), usagedaily.DayLTE(Day(to))).
		Order(ent.Asc(usagedaily.FieldDay)).All(ctx)
	if err != nil {
		return Series{}, fmt.Errorf("usage: read rollups: %w", err)
	}
	inRange := []predicate.UsageActorDaily{usageactordaily.AssetID(id), usageactordaily.DayGTE(Day(from)), usageactordaily.DayLTE(Day(to))}
	perActor, err := s.actorTotals(ctx, id, from, to)
	if err != nil {
		return Series{}, err
	}
	var weekly []*ent.UsageActorDaily // distinct actors per week need the days
	if granularity == Weekly {
		if weekly, err = s.db.UsageActorDaily.Query().Where(inRange...).
			Select(usageactordaily.FieldDay, usageactordaily.FieldActor).All(ctx); err != nil {
			return Series{}, fmt.Errorf("usage: read actor rollups: %w", err)
		}
	}
	out := Series{AssetID: id, From: from, To: to, Granularity: granularity, Points: []Point{}, TopActors: []ActorCount{}}
	bucket := func(day string) time.Time {
		t, _ := time.Parse(time.DateOnly, day)
		if granularity == Weekly {
			t = t.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7)) // back to Monday
		}
		return t
	}
	points := map[time.Time]*Point{}
	var order []time.Time
	for _, d := range days {
		b := bucket(d.Day)
		p := points[b]
		if p == nil {
			p = &Point{Start: b}
			points[b] = p
			order = append(order, b)
		}
		p.Reads += d.Reads
		p.Writes += d.Writes
		p.DistinctJobs = max(p.DistinctJobs, d.DistinctJobs)
		if granularity == Daily {
			p.DistinctActors = d.DistinctActors
		}
		out.Reads += d.Reads
		out.Writes += d.Writes
		out.LateRecords += d.LateRecords
		out.LastRead = later(out.LastRead, d.LastReadAt)
		out.LastWrite = later(out.LastWrite, d.LastWriteAt)
	}
	weekActors := map[time.Time]map[string]bool{}
	for _, r := range weekly {
		b := bucket(r.Day)
		if weekActors[b] == nil {
			weekActors[b] = map[string]bool{}
		}
		weekActors[b][r.Actor] = true
	}
	for b, set := range weekActors {
		if p := points[b]; p != nil {
			p.DistinctActors = len(set)
		}
	}
	for _, b := range order {
		out.Points = append(out.Points, *points[b])
	}
	out.DistinctActors = len(perActor)
	for _, c := range perActor {
		out.TopActors = append(out.TopActors, ActorCount(c))
	}
	slices.SortFunc(out.TopActors, func(a, b ActorCount) int {
		return cmp.Or(cmp.Compare(b.Reads+b.Writes, a.Reads+a.Writes), cmp.Compare(a.Actor, b.Actor))
	})
	if len(out.TopActors) > 10 {
		out.TopActors = out.TopActors[:10]
	}
	if out.NamesSeen, err = s.namesSeen(ctx, a); err != nil {
		return Series{}, err
	}
	return out, nil
}

type actorTotal struct {
	Actor  string `json:"actor"`
	Reads  int64  `json:"reads"`
	Writes int64  `json:"writes"`
}

// actorTotals sums each actor's reads and writes over days from..to: whole calendar months from
// the monthly rollup, the partial months at either end from the daily one, each summed by the
// database (one row per actor).
func (s *Service) actorTotals(ctx context.Context, id uuid.UUID, from, to time.Time) ([]actorTotal, error) {
	firstFull := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	if !firstFull.Equal(from) {
		firstFull = firstFull.AddDate(0, 1, 0)
	}
	afterFull := time.Date(to.Year(), to.Month(), 1, 0, 0, 0, 0, time.UTC) // first day of to's month
	if to.AddDate(0, 0, 1).Month() != to.Month() {
		afterFull = afterFull.AddDate(0, 1, 0) // to is a month's last day: its month is whole
	}
	sum := map[string]*actorTotal{}
	add := func(rows []actorTotal) {
		for _, r := range rows {
			t := sum[r.Actor]
			if t == nil {
				t = &actorTotal{Actor: r.Actor}
				sum[r.Actor] = t
			}
			t.Reads += r.Reads
			t.Writes += r.Writes
		}
	}
	daily := func(lo, hi time.Time) error { // days lo..hi inclusive
		if hi.Before(lo) {
			return nil
		}
		var rows []actorTotal
		err := s.db.UsageActorDaily.Query().Where(usageactordaily.AssetID(id), usageactordaily.DayGTE(Day(lo)), usageactordaily.DayLTE(Day(hi))).
			GroupBy(usageactordaily.FieldActor).
			Aggregate(ent.As(ent.Sum(usageactordaily.FieldReads), "reads"), ent.As(ent.Sum(usageactordaily.FieldWrites), "writes")).Scan(ctx, &rows)
		add(rows)
		return err
	}
	if !firstFull.Before(afterFull) { // no whole month inside: days only
		if err := daily(from, to); err != nil {
			return nil, fmt.Errorf("usage: read actor rollups: %w", err)
		}
	} else {
		var rows []actorTotal
		if err := s.db.UsageActorMonthly.Query().Where(usageactormonthly.AssetID(id),
			usageactormonthly.MonthGTE(firstFull.Format("2006-01")), usageactormonthly.MonthLT(afterFull.Format("2006-01"))).
			GroupBy(usageactormonthly.FieldActor).
			Aggregate(ent.As(ent.Sum(usageactormonthly.FieldReads), "reads"), ent.As(ent.Sum(usageactormonthly.FieldWrites), "writes")).Scan(ctx, &rows); err != nil {
			return nil, fmt.Errorf("usage: read monthly actor rollups: %w", err)
		}
		add(rows)
		if err := daily(from, firstFull.AddDate(0, 0, -1)); err != nil {
			return nil, fmt.Errorf("usage: read actor rollups: %w", err)
		}
		if err := daily(afterFull, to); err != nil {
			return nil, fmt.Errorf("usage: read actor rollups: %w", err)
		}
	}
	out := make([]actorTotal, 0, len(sum))
	for _, t := range sum {
		out = append(out, *t)
	}
	return out, nil
}

func (s *Service) namesSeen(ctx context.Context, a catalog.Asset) ([]NameSeen, error) {
	rows, err := s.db.UsageName.Query().Where(usagename.AssetID(a.ID)).Order(ent.Asc(usagename.FieldFirstAt)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("usage: names seen: %w", err)
	}
	out := make([]NameSeen, 0, len(rows))
	for _, r := range rows {
		out = append(out, NameSeen{Namespace: r.Namespace, Name: r.Name, FirstAt: r.FirstAt.UTC(), LastAt: r.LastAt.UTC(),
			Current: a.Status != catalog.StatusDeleted && r.Namespace == a.Namespace && r.Name == a.Name})
	}
	return out, nil
}

func later(a, b *time.Time) *time.Time {
	if b == nil {
		return a
	}
	if a == nil || b.After(*a) {
		t := b.UTC()
		return &t
	}
	return a
}

// Ranked is an asset with its usage in a window.
type Ranked struct {
	Asset         catalog.Summary
	Reads, Writes int64
}

// MaxTop bounds Top.
const MaxTop = 1000

// Top ranks assets by reads (or writes) over the last window days, from the rollups.
func (s *Service) Top(ctx context.Context, kind string, window time.Duration, limit int) ([]Ranked, error) {
	if kind != "read" && kind != "write" {
		return nil, invalid("kind", "kind must be read or write, not %q", kind)
	}
	if limit < 1 || limit > MaxTop {
		return nil, invalid("limit", "limit must be from 1 to %d", MaxTop)
	}
	if window <= 0 || window > MaxRangeDays*24*time.Hour {
		return nil, invalid("window", "window must be positive and at most %d days", MaxRangeDays)
	}
	since := Day(s.clock().Add(-window))
	order := usagedaily.FieldReads
	if kind == "write" {
		order = usagedaily.FieldWrites
	}
	type topRow struct {
		AssetID uuid.UUID `json:"asset_id"`
		Reads   int64     `json:"reads"`
		Writes  int64     `json:"writes"`
	}
	var rows []topRow
	err := s.db.UsageDaily.Query().Where(usagedaily.DayGTE(since)).GroupBy(usagedaily.FieldAssetID).
		Aggregate(ent.As(ent.Sum(usagedaily.FieldReads), "reads"), ent.As(ent.Sum(usagedaily.FieldWrites), "writes")).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("usage: rank assets: %w", err)
	}
	count := func(r topRow) int64 {
		if order == usagedaily.FieldWrites {
			return r.Writes
		}
		return r.Reads
	}
	slices.SortFunc(rows, func(a, b topRow) int {
		return cmp.Or(cmp.Compare(count(b), count(a)), cmp.Compare(a.AssetID.String(), b.AssetID.String()))
	})
	var out []Ranked
	var ids []uuid.UUID
	for _, r := range rows {
		if len(out) == limit {
			break
		}
		if (kind == "read" && r.Reads > 0) || (kind == "write" && r.Writes > 0) {
			out = append(out, Ranked{Asset: catalog.Summary{ID: r.AssetID}, Reads: r.Reads, Writes: r.Writes})
			ids = append(ids, r.AssetID)
		}
	}
	sums, err := s.cat.Summaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if sum, ok := sums[out[i].Asset.ID]; ok {
			out[i].Asset = sum
		}
	}
	return out, nil
}

func invalid(field, format string, args ...any) error {
	return &catalog.Error{Kind: catalog.ErrInvalid, Field: field, Message: "usage: " + fmt.Sprintf(format, args...)}
}
