package benchdb

import (
	"context"
	"database/sql"
	"time"

	"github.com/tidemark/tidemark/storage"
)

// IngestRows reads every row an OpenLineage ingest writes, ahead of a COPY ceiling: pre, the
// rows that existed before the run (created before before), and timed, the run's. Rows the run
// rewrote for assets that existed (search docs) count as old: a known gap, in COPY's favour.
func IngestRows(ctx context.Context, src *sql.DB, before time.Time) (pre, timed []Rows) {
	type part struct{ table, cols, old string } // old: which rows existed before ("": none did)
	ts := "'" + before.UTC().Format(time.RFC3339Nano) + "'"
	existed := func(col string) string { return col + " IN (SELECT id FROM assets WHERE created_at < " + ts + ")" }
	parts := []part{
		{"assets", "id, kind, status, version, description, created_at, updated_at", existed("t.id")},
		{"asset_names", "asset_id, namespace, name, valid_from", "t.valid_from < " + ts},
		{"audit_events", "id, at, actor, action, asset_id, after, request_id", "t.at < " + ts},
		{"search_docs", "id, asset_id, kind, status, namespace, name, name_key, t_name, t_former, t_labels, t_body, asset_version", existed("t.asset_id")},
		{"search_facets", "doc_id, facet, value", existed("(SELECT d.asset_id FROM search_docs d WHERE d.id = t.doc_id)")},
		// Assets created beforehand have no facets, columns or labels: every such row is the run's.
		{"asset_facets", "asset_id, name, value, event_time, updated_at", ""},
		{"columns", "id, asset_id, field_id, path, type, ordinal, source_doc, description, added_at, removed_at", ""},
		{"schema_changes", "id, asset_id, at, source, schema_id, changes", ""},
		{"labels", "id, asset_id, column_id, kind, value, source, from_asset_id, from_column_id, added_at, added_by, removed_at, removed_by", ""},
		{"lineage_events", "id, event_key, kind, event_type, event_time, run_id, job_asset_id, producer, payload, received_at", ""},
		{"runs", "id, job_asset_id, state, state_time, started_at, ended_at, parent_run_id, event_count, created_at, updated_at", ""},
		{"run_ios", "run_id, asset_id, role, first_seen", ""},
		{"lineage_edges", "from_id, to_id, first_seen, last_seen, last_run_id", ""},
		{"lineage_states", "id, last_activity, dropped_at", ""},
		{"usage_events", "event_key, asset_id, kind, actor, job_asset_id, source, query_id, namespace, name, at, day, received_at", ""},
		{"usage_dailies", "asset_id, day, reads, writes, distinct_actors, distinct_jobs, last_read_at, last_write_at, updated_at", ""},
		{"usage_actor_dailies", "asset_id, day, actor, reads, writes", ""},
		{"usage_actor_monthlies", "asset_id, month, actor, reads, writes", ""},
		{"usage_names", "asset_id, namespace, name, first_at, last_at", ""},
		{"usage_job_dailies", "day, asset_id, job_asset_id", ""},
	}
	for _, p := range parts {
		if p.old == "" {
			timed = append(timed, ReadRows(ctx, src, p.table, p.cols, ""))
			continue
		}
		pre = append(pre, ReadRows(ctx, src, p.table, p.cols, p.old))
		timed = append(timed, ReadRows(ctx, src, p.table, p.cols, "("+p.old+") IS NOT TRUE"))
	}
	return pre, timed
}

// CopyAll writes rows into dst with one COPY per table, in one transaction, and returns how long
// that took.
func CopyAll(ctx context.Context, dst *storage.DB, rows []Rows) time.Duration {
	start := time.Now()
	tx, err := dst.SQL.BeginTx(ctx, nil)
	Must(err)
	for _, r := range rows {
		CopyRows(ctx, tx, r)
	}
	Must(tx.Commit())
	return time.Since(start)
}
