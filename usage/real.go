package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/usageactordaily"
	"github.com/tidemark/tidemark/ent/usagedaily"
)

// Downstream lists the assets downstream of an asset (through lineage). The cleanup bot passes
// the lineage graph's; usage does not depend on lineage.
type Downstream func(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error)

// RealUsage is what the cleanup bot may rely on before calling an asset unused.
//
// It counts, for the asset ID (under every name it held) and the whole UTC days from..to:
//   - Reads and Writes: usage events (query-log records and completed OpenLineage runs, each
//     counted once by its idempotency key) from the daily rollups;
//   - LastRead / LastWrite: the latest read and write time in the window;
//   - DistinctReaders: actors with at least one read (records without an actor are not a reader);
//   - DownstreamRead: whether any asset downstream (as the given Downstream function says) had a
//     read in the window, and which ones did.
//
// It does not count what Tidemark never hears of (engines that send no query logs, jobs that
// emit no OpenLineage), and records refused as too late (older than the lateness) are not in it.
type RealUsage struct {
	AssetID         uuid.UUID
	From, To        time.Time
	Reads, Writes   int64
	LastRead        *time.Time
	LastWrite       *time.Time
	DistinctReaders int
	DownstreamRead  bool
	ReadDownstream  []uuid.UUID
	NamesSeen       []NameSeen
}

// Real summarises an asset's real usage in a window. downstream may be nil (no lineage check).
func (s *Service) Real(ctx context.Context, id uuid.UUID, from, to time.Time, downstream Downstream) (RealUsage, error) {
	series, err := s.Series(ctx, id, from, to, Daily)
	if err != nil {
		return RealUsage{}, err
	}
	out := RealUsage{AssetID: id, From: series.From, To: series.To, Reads: series.Reads, Writes: series.Writes,
		LastRead: series.LastRead, LastWrite: series.LastWrite, NamesSeen: series.NamesSeen, ReadDownstream: []uuid.UUID{}}
	readers, err := s.db.UsageActorDaily.Query().Where(usageactordaily.AssetID(id), usageactordaily.DayGTE(Day(from)),
		usageactordaily.DayLTE(Day(to)), usageactordaily.ReadsGT(0)).GroupBy(usageactordaily.FieldActor).Strings(ctx)
	if err != nil {
		return RealUsage{}, fmt.Errorf("usage: readers: %w", err)
	}
	out.DistinctReaders = len(readers)
	if downstream == nil {
		return out, nil
	}
	ids, err := downstream(ctx, id)
	if err != nil {
		return RealUsage{}, err
	}
	for part := range chunk(ids) {
		read, err := s.db.UsageDaily.Query().Where(usagedaily.AssetIDIn(part...), usagedaily.DayGTE(Day(from)),
			usagedaily.DayLTE(Day(to)), usagedaily.ReadsGT(0)).GroupBy(usagedaily.FieldAssetID).Strings(ctx)
		if err != nil {
			return RealUsage{}, fmt.Errorf("usage: downstream reads: %w", err)
		}
		for _, r := range read {
			if u, err := uuid.Parse(r); err == nil {
				out.ReadDownstream = append(out.ReadDownstream, u)
			}
		}
	}
	out.DownstreamRead = len(out.ReadDownstream) > 0
	return out, nil
}
