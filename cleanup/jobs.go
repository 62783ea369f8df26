package cleanup

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/internal/loop"
)

// ProposeJob is one round of the cleanup bot every interval: re-evaluate and open proposals,
// then, inside the maintenance window, execute the ones people approved. Nil when every is 0.
func (s *Service) ProposeJob(every time.Duration) *loop.Job {
	if every <= 0 {
		return nil
	}
	return &loop.Job{Name: "cleanup: proposals and execution", Interval: every, Log: s.log, Step: s.proposeAndExecute}
}

func (s *Service) proposeAndExecute(ctx context.Context) error {
	var errs []error
	if rep, err := s.Propose(ctx); err != nil {
		errs = append(errs, err)
	} else if rep.Opened+rep.Withdrawn+rep.Expired > 0 {
		s.log.Info("cleanup proposals", "opened", rep.Opened, "withdrawn", rep.Withdrawn, "expired", rep.Expired)
	}
	if !s.InWindow() || ctx.Err() != nil {
		return errors.Join(errs...) // deletions wait for the maintenance window
	}
	if rep, err := s.Execute(ctx, uuid.Nil, nil); err != nil {
		errs = append(errs, err) // the next round resumes the execution
	} else if rep.Proposals > 0 {
		s.log.Info("cleanup executed", "proposals", rep.Proposals, "executed", rep.Executed, "stopped", rep.Stopped, "files_deleted", rep.Deleted, "bytes", rep.Bytes)
	}
	return errors.Join(errs...)
}
