package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/datasetmigration"
)

// Pair is a migration's two assets.
type Pair struct {
	ID, OldAssetID, NewAssetID uuid.UUID
}

// pairsTTL bounds how long another replica's new migration may be missing from lineage answers.
const pairsTTL = 10 * time.Second

// pairs holds every migration's two assets by asset, so a lineage answer finds the start's
// migrations without a query (they are few and change rarely; this process's changes drop it).
// Answers never wait on a refresh: once the snapshot is older than pairsTTL, one caller reads
// the migrations again while the others answer from the snapshot they have.
type pairs struct {
	cur        atomic.Pointer[pairSnapshot]
	refreshing atomic.Bool
}

type pairSnapshot struct {
	at      time.Time // zero: dropped, read again before answering
	byAsset map[uuid.UUID][]Pair
}

// drop makes the next answer read the migrations again. A refresh that read them before the
// drop does not replace it: it swaps only the snapshot it started from.
func (p *pairs) drop() { p.cur.Store(&pairSnapshot{}) }

// PairsOf returns the migrations an asset is the old or new side of, from memory refreshed at
// most every pairsTTL.
func (s *Service) PairsOf(ctx context.Context, asset uuid.UUID) ([]Pair, error) {
	snap := s.pairs.cur.Load()
	usable := snap != nil && !snap.at.IsZero()
	if usable && time.Since(snap.at) <= pairsTTL {
		return slices.Clone(snap.byAsset[asset]), nil
	}
	if !s.pairs.refreshing.CompareAndSwap(false, true) {
		if usable {
			return slices.Clone(snap.byAsset[asset]), nil // another answer is reading them again
		}
	} else {
		defer s.pairs.refreshing.Store(false)
	}
	at := time.Now()
	rows, err := s.db.DatasetMigration.Query().
		Select(datasetmigration.FieldOldAssetID, datasetmigration.FieldNewAssetID).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read migrations: %w", err)
	}
	next := &pairSnapshot{at: at, byAsset: make(map[uuid.UUID][]Pair, 2*len(rows))}
	for _, r := range rows {
		p := Pair{ID: r.ID, OldAssetID: r.OldAssetID, NewAssetID: r.NewAssetID}
		next.byAsset[r.OldAssetID] = append(next.byAsset[r.OldAssetID], p)
		next.byAsset[r.NewAssetID] = append(next.byAsset[r.NewAssetID], p)
	}
	s.pairs.cur.CompareAndSwap(snap, next)
	return slices.Clone(next.byAsset[asset]), nil
}
