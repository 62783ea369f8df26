package usage

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/usagebacklog"
)

// On PostgreSQL a batch's rollups are not written in the transaction that stores its events.
// Concurrent batches over the same assets update the same rollup rows, so each waited for the
// other's whole transaction (the lineage writes after the rollups included) to commit: with 4
// ingest clients most of a batch's time went to those waits. Instead the transaction stores the
// events and one usage_backlogs row naming them; once it commits, one writer per process adds the
// rollups of every batch committed meanwhile in one transaction, and each caller's commit returns
// only when its rollups are in (so an answer still means the rollups count it). The rollup that
// deletes a backlog row adds its events, so they count once whoever gets there; a row left by a
// crash or a failed rollup is added by the usage job (RollBacklog) once it is BacklogAge old, and
// before any "real usage" answer.

// BacklogAge is how old a backlog row must be before RollBacklog takes it: older than any rollup
// after commit takes (rollTimeout), so the sweep does not queue behind live ones.
const BacklogAge = 2 * time.Minute

// rollTimeout bounds one rollup after commit; the callers waiting on it are then answered, and
// their backlog rows wait for RollBacklog.
const rollTimeout = time.Minute

// rollJob is one committed batch's rollup: its backlog row and the events it inserted.
type rollJob struct {
	backlog int
	rows    []row
	wake    chan rollWake // exactly one message: the round's result, or the turn to lead
}

type rollWake struct {
	lead bool
	err  error
}

// roller runs the rollups after commit: the first caller to find none running leads a round
// (every job queued by then, one transaction) and hands the next round to the first job queued
// meanwhile, so no caller serves others' rounds after its own.
type roller struct {
	mu      sync.Mutex
	queue   []*rollJob
	running bool
}

// do queues j and returns once its round is done, with the round's error.
func (r *roller) do(j *rollJob, run func([]*rollJob) error) error {
	r.mu.Lock()
	r.queue = append(r.queue, j)
	lead := !r.running
	r.running = true
	r.mu.Unlock()
	if !lead {
		// A round is bounded by rollTimeout, so this wait is too.
		if w := <-j.wake; !w.lead {
			return w.err
		}
	}
	r.mu.Lock()
	jobs := r.queue
	r.queue = nil
	r.mu.Unlock()
	err := safely(run, jobs)
	r.mu.Lock()
	var next *rollJob
	if len(r.queue) > 0 {
		next = r.queue[0]
	} else {
		r.running = false
	}
	r.mu.Unlock()
	for _, o := range jobs {
		if o != j {
			o.wake <- rollWake{err: err}
		}
	}
	if next != nil {
		next.wake <- rollWake{lead: true}
	}
	return err
}

// safely runs a round, a panic turned into its error: the waiters, and the next round's
// leader, must hear from it.
func safely(run func([]*rollJob) error, jobs []*rollJob) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("usage: rollups after commit panicked: %v", p)
		}
	}()
	return run(jobs)
}

// rollupAfterCommit notes the rows (the events this transaction inserted, with their ids) in
// the backlog and adds them to the rollups once tx commits, before its Commit returns. A failed
// rollup is logged, not returned: the events are stored, and RollBacklog adds them later.
func (s *Service) rollupAfterCommit(ctx context.Context, tx *ent.Tx, rows []row, ids []int) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := tx.UsageBacklog.Create().SetEventIds(ids).SetCreatedAt(s.clock()).Save(ctx)
	if err != nil {
		return fmt.Errorf("usage: note the rollups to add: %w", err)
	}
	j := &rollJob{backlog: b.ID, rows: rows, wake: make(chan rollWake, 1)}
	tx.OnCommit(func(next ent.Committer) ent.Committer {
		return ent.CommitFunc(func(ctx context.Context, tx *ent.Tx) error {
			if err := next.Commit(ctx, tx); err != nil {
				return err
			}
			if err := s.rolls.do(j, s.rollJobs); err != nil {
				s.log.Warn("usage: adding rollups after commit failed; the usage job adds them later", "backlog", j.backlog, "err", err)
			}
			return nil
		})
	})
	return nil
}

// rollJobs adds the rollups of the jobs whose backlog rows are still there, in one transaction
// (its own: the callers' transactions have committed, and their contexts may end meanwhile).
func (s *Service) rollJobs(jobs []*rollJob) error {
	ctx, cancel := context.WithTimeout(context.Background(), rollTimeout)
	defer cancel()
	if s.rollFault != nil {
		if err := s.rollFault(); err != nil {
			return err
		}
	}
	ids := make([]int, len(jobs))
	for i, j := range jobs {
		ids[i] = j.backlog
	}
	return s.cat.InTx(ctx, func(ctx context.Context, tx *ent.Tx) error {
		taken, err := takeBacklog(ctx, tx, ids)
		if err != nil {
			return err
		}
		var rows []row
		for _, j := range jobs {
			if taken[j.backlog] {
				rows = append(rows, j.rows...)
			}
		}
		return s.rollup(ctx, tx, rows)
	})
}

// takeBacklog deletes the backlog rows and returns those it deleted: this transaction's to add.
// A row another transaction deleted first (and committed) is not returned; one it holds makes
// this wait for its outcome.
func takeBacklog(ctx context.Context, tx *ent.Tx, ids []int) (map[int]bool, error) {
	res, err := tx.QueryContext(ctx, "DELETE FROM usage_backlogs WHERE id = ANY($1::bigint[]) RETURNING id", intArray(ids))
	if err != nil {
		return nil, fmt.Errorf("usage: take the rollup backlog: %w", err)
	}
	defer res.Close()
	taken := map[int]bool{}
	for res.Next() {
		var id int
		if err := res.Scan(&id); err != nil {
			return nil, err
		}
		taken[id] = true
	}
	return taken, res.Err()
}

// RollBacklog adds the rollups of backlog rows at least BacklogAge old (left by a crash or a
// failed rollup after commit), one row a transaction, and returns how many events it added. Only
// PostgreSQL has a backlog.
func (s *Service) RollBacklog(ctx context.Context) (int, error) {
	if s.sqlite {
		return 0, nil
	}
	olds, err := s.db.UsageBacklog.Query().Where(usagebacklog.CreatedAtLTE(s.clock().Add(-BacklogAge))).
		Order(ent.Asc(usagebacklog.FieldID)).Limit(1000).All(ctx)
	if err != nil {
		return 0, fmt.Errorf("usage: read the rollup backlog: %w", err)
	}
	added := 0
	for _, b := range olds {
		err := s.cat.InTx(ctx, func(ctx context.Context, tx *ent.Tx) error {
			taken, err := takeBacklog(ctx, tx, []int{b.ID})
			if err != nil || !taken[b.ID] {
				return err
			}
			rows, err := storedRows(ctx, tx, b.EventIds)
			if err != nil {
				return err
			}
			added += len(rows)
			return s.rollup(ctx, tx, rows)
		})
		if err != nil {
			return added, err
		}
	}
	return added, nil
}

// storedRows reads back the stored events with the given ids, as far as the rollups need them.
// An event purged meanwhile (past the retention) is gone from the rollups' days anyway.
func storedRows(ctx context.Context, tx *ent.Tx, ids []int) ([]row, error) {
	res, err := tx.QueryContext(ctx, `SELECT event_key, asset_id, kind, actor, job_asset_id, namespace, name, at, late
		FROM usage_events WHERE id = ANY($1::bigint[])`, intArray(ids))
	if err != nil {
		return nil, fmt.Errorf("usage: read the backlog's events: %w", err)
	}
	defer res.Close()
	var rows []row
	for res.Next() {
		var r row
		var job uuid.NullUUID
		if err := res.Scan(&r.key, &r.assetID, &r.kind, &r.actor, &job, &r.namespace, &r.name, &r.at, &r.late); err != nil {
			return nil, err
		}
		if job.Valid {
			r.jobID = &job.UUID
		}
		r.at = r.at.UTC()
		rows = append(rows, r)
	}
	return rows, res.Err()
}

// intArray is ids as a PostgreSQL array literal (a bigint[] parameter).
func intArray(ids []int) string {
	b := make([]byte, 0, 2+8*len(ids))
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(append(b, '}'))
}
