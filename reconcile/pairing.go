package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
type pairs struct {
	mu      sync.Mutex
	at      time.Time
	byAsset map[uuid.UUID][]Pair
}

func (p *pairs) drop() {
	p.mu.Lock()
	p.byAsset = nil
	p.mu.Unlock()
}

// PairsOf returns the migrations an asset is the old or new side of, from memory refreshed at
// most every pairsTTL.
func (s *Service) PairsOf(ctx context.Context, asset uuid.UUID) ([]Pair, error) {
	s.pairs.mu.Lock()
	defer s.pairs.mu.Unlock()
	if now := time.Now(); s.pairs.byAsset == nil || now.Sub(s.pairs.at) > pairsTTL {
		rows, err := s.db.DatasetMigration.Query().
			Select(datasetmigration.FieldOldAssetID, datasetmigration.FieldNewAssetID).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("reconcile: read migrations: %w", err)
		}
		by := make(map[uuid.UUID][]Pair, 2*len(rows))
		for _, r := range rows {
			p := Pair{ID: r.ID, OldAssetID: r.OldAssetID, NewAssetID: r.NewAssetID}
			by[r.OldAssetID] = append(by[r.OldAssetID], p)
			by[r.NewAssetID] = append(by[r.NewAssetID], p)
		}
		s.pairs.byAsset, s.pairs.at = by, now
	}
	return slices.Clone(s.pairs.byAsset[asset]), nil
}
