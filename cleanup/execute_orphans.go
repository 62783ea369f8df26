package cleanup

// Executing orphan_files proposals: their listed files go through the deletion loop (delete.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/tidemark/tidemark/ent"
)

// executeOrphans deletes the proposal's pending files (exactly those listed when it was
// approved) in batches. Before each batch it re-reads every table sharing the location and
// looks for foreign tenants; each file is deleted only if no table references it, it is still
// there, the same size, and still older than the threshold the proposal states.
func (s *Service) executeOrphans(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, fmt.Errorf("cleanup: read the evidence of proposal %s: %w", p.ID, err)
	}
	threshold, err := time.ParseDuration(ev.AgeThreshold)
	if err != nil {
		threshold = DefaultAgeThreshold
	}
	g := func(ctx context.Context) (*refSet, icebergio.IO, string, error) {
		live, err := s.tables.Open(ctx, p.AssetID)
		if err != nil {
			return nil, nil, "", err
		}
		keep, err := s.keepAt(ctx, p.AssetID, live.Refs.Location, live, live.IO, "")
		if err != nil {
			var stopped *stopError
			if errors.As(err, &stopped) {
				// What was observed here proves nothing while a stranger lives here: the bot
				// must not propose the same files again before scans confirm them anew.
				if ferr := s.forgetObservations(ctx, p.AssetID); ferr != nil {
					return nil, nil, "", ferr
				}
			}
			return nil, nil, "", err
		}
		return keep, live.IO, live.Refs.Location, nil
	}
	return s.deletePending(ctx, p, held, rep, progress, threshold, g)
}
