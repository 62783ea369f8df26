package notify

// The dispatcher: delivers the outbox's messages to their webhooks, whoever wrote them (cleanup
// with a proposal, reconcile with a finding, the notifier for subscribers).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"entgo.io/ent/dialect/sql"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/outboxmessage"

	"github.com/tidemark/tidemark/internal/loop"
)

// MaxAttempts is how often a notification is tried before it is marked failed.
const MaxAttempts = 20

// dispatchBatch is how many messages one replica claims at a time.
const dispatchBatch = 10

// Dispatch delivers due outbox messages, each at least once: a message is marked delivered only
// after its webhook answered 2xx; otherwise it is retried with exponential backoff (30 s
// doubling, at most an hour) up to MaxAttempts. On PostgreSQL due rows are claimed with FOR
// UPDATE SKIP LOCKED, so replicas dispatch different messages.
func (s *Service) Dispatch(ctx context.Context) (delivered, failed int, err error) {
	for {
		var msgs []*ent.OutboxMessage
		now := s.clock()
		err := s.tx(ctx, func(tx *ent.Tx) error {
			q := tx.OutboxMessage.Query().Where(outboxmessage.StateEQ(outboxmessage.StatePending), outboxmessage.NextAttemptAtLTE(now)).
				Order(ent.Asc(outboxmessage.FieldID)).Limit(dispatchBatch)
			if !s.sqlite {
				q = q.ForUpdate(sql.WithLockAction(sql.SkipLocked))
			}
			var err error
			if msgs, err = q.All(ctx); err != nil {
				return err
			}
			// Hold them long enough for the whole batch to be sent, each delivery taking up to
			// the client's timeout, so another replica does not send them at the same time: a
			// duplicate then needs a real failure (a crash), never a slow receiver.
			hold := time.Duration(len(msgs))*s.client.Timeout + time.Minute
			for _, m := range msgs {
				if err := tx.OutboxMessage.UpdateOne(m).SetNextAttemptAt(now.Add(hold)).Exec(ctx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || len(msgs) == 0 {
			return delivered, failed, err
		}
		for _, m := range msgs {
			if ctx.Err() != nil {
				return delivered, failed, ctx.Err()
			}
			derr := s.deliver(ctx, m)
			if derr != nil {
				derr = errors.New(redact(derr.Error(), m.URL))
			}
			u := s.db.OutboxMessage.UpdateOne(m).AddAttempts(1)
			switch {
			case derr == nil:
				u.SetState(outboxmessage.StateDelivered).SetDeliveredAt(s.clock()).SetLastError("")
				delivered++
			case m.Attempts+1 >= MaxAttempts:
				u.SetState(outboxmessage.StateFailed).SetLastError(derr.Error())
				failed++
			default:
				backoff := min(30*time.Second<<min(m.Attempts, 10), time.Hour)
				u.SetNextAttemptAt(s.clock().Add(backoff)).SetLastError(derr.Error())
			}
			if err := u.Exec(context.WithoutCancel(ctx)); err != nil {
				return delivered, failed, err
			}
		}
	}
}

func (s *Service) deliver(ctx context.Context, m *ent.OutboxMessage) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader([]byte(m.Payload)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", m.ID.String())
	req.Header.Set("X-Tidemark-Event", m.Event)
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("notify: webhook answered %s", res.Status)
	}
	return nil
}

// DispatchJob delivers the outbox's notifications every interval (WithInterval), at start too.
func (s *Service) DispatchJob() *loop.Job {
	return &loop.Job{Name: "notify: delivering notifications", Interval: s.interval, AtStart: true, Log: s.log,
		Step: func(ctx context.Context) error { _, _, err := s.Dispatch(ctx); return err }}
}
