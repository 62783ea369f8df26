package app

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/usage"
)

// The adapters between domains: each domain declares what it needs (a function type) and app
// hands it the other domain's answer in that shape, so no domain imports a peer.

// MigrationWriters gives completed runs to the migrations whose new asset they wrote: a writer
// job stating a new version is a deploy the cutover streak may have to span.
func MigrationWriters(rec *reconcile.Service) func(context.Context, []lineage.CompletedRun) error {
	return func(ctx context.Context, runs []lineage.CompletedRun) error {
		out := make([]reconcile.WriterRun, 0, len(runs))
		for _, r := range runs {
			if r.Version == "" || len(r.Outputs) == 0 {
				continue
			}
			w := reconcile.WriterRun{RunID: r.RunID, JobID: r.JobID, At: r.At, Version: r.Version}
			for _, o := range r.Outputs {
				w.Outputs = append(w.Outputs, o.ID)
			}
			out = append(out, w)
		}
		if len(out) == 0 || rec == nil {
			return nil
		}
		return rec.ObserveWriters(ctx, out)
	}
}

// LineageWriters finds, in lineage's record of runs, the runs that wrote an asset during a
// window: a migration names them where its new side holds duplicated keys.
func LineageWriters(l *lineage.Service) func(ctx context.Context, asset uuid.UUID, from, to time.Time, limit int) ([]reconcile.Writer, error) {
	return func(ctx context.Context, asset uuid.UUID, from, to time.Time, limit int) ([]reconcile.Writer, error) {
		runs, err := l.WritersOf(ctx, asset, from, to, limit)
		if err != nil {
			return nil, err
		}
		out := make([]reconcile.Writer, len(runs))
		for i, r := range runs {
			out[i] = reconcile.Writer{RunID: r.ID, JobAssetID: r.JobAssetID, State: r.State, StartedAt: r.StartedAt, EndedAt: r.EndedAt}
		}
		return out, nil
	}
}

// MigrationRelations gives an asset's dataset migrations as lineage relations (migrated_to),
// so the move shows in both assets' lineage answers.
func MigrationRelations(rec *reconcile.Service) func(ctx context.Context, id uuid.UUID) ([]lineage.Relation, error) {
	return func(ctx context.Context, id uuid.UUID) ([]lineage.Relation, error) {
		ps, err := rec.PairsOf(ctx, id) // from memory: this runs for every lineage answer
		if err != nil {
			return nil, err
		}
		out := make([]lineage.Relation, 0, len(ps))
		for _, p := range ps {
			out = append(out, lineage.Relation{From: p.OldAssetID, To: p.NewAssetID, Kind: "migrated_to", Ref: p.ID})
		}
		return out, nil
	}
}

// UsageOfRuns counts completed OpenLineage runs as usage: inputs read, outputs written.
func UsageOfRuns(use *usage.Service) func(context.Context, []lineage.CompletedRun) error {
	seen := func(refs []lineage.DatasetRef) []usage.Seen {
		out := make([]usage.Seen, len(refs))
		for i, r := range refs {
			out[i] = usage.Seen{ID: r.ID, Namespace: r.Namespace, Name: r.Name, Version: r.Version}
		}
		return out
	}
	return func(ctx context.Context, runs []lineage.CompletedRun) error {
		out := make([]usage.RunUsage, len(runs))
		for i, r := range runs {
			out[i] = usage.RunUsage{RunID: r.RunID, JobID: r.JobID, At: r.At, Actor: r.Actor, Inputs: seen(r.Inputs), Outputs: seen(r.Outputs)}
		}
		return use.FromRuns(ctx, out)
	}
}

// recordServedUse keeps a served table's commit (a write) or load (a read) in its usage.
func (a *App) recordServedUse(ctx context.Context, asset uuid.UUID, kind, actor, key string, at time.Time) error {
	return a.recordServed(ctx, usage.Record{AssetID: asset, Kind: kind, Actor: actor, At: at, Source: "iceberg-rest", IdempotencyKey: key})
}

// recordServedScan keeps a served table's scan report in its usage: a read of the version it names.
func (a *App) recordServedScan(ctx context.Context, asset uuid.UUID, actor, key, version string, at time.Time) error {
	return a.recordServed(ctx, usage.Record{AssetID: asset, Kind: "read", Actor: actor, At: at, Source: "iceberg-rest", IdempotencyKey: key, Version: version})
}

func (a *App) recordServed(ctx context.Context, rec usage.Record) error {
	res, err := a.Usage.Record(ctx, []usage.Record{rec})
	if err != nil {
		return err
	}
	if len(res) == 1 && res[0].Status == usage.StatusRefused {
		return fmt.Errorf("app: usage refused the record: %s", res[0].Reason)
	}
	return nil
}

// proposePurges has the cleanup bot propose a purge just recorded, without waiting for its next
// round; a failure is logged, and the round proposes it anyway.
func (a *App) proposePurges(ctx context.Context) {
	if _, err := a.Cleanup.ProposePurges(context.WithoutCancel(ctx)); err != nil {
		a.Log.Warn("the purge is recorded; proposing it now failed, the cleanup bot's next round will", "err", err)
	}
}
