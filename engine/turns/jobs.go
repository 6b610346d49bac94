package turns

import "github.com/parleybot/parley/core"

// jobOutcome settles the job a run executed, from how the run ended.
func (s *speaker) jobOutcome(t *core.Turn, c core.RunCompletion, silent bool) *core.JobOutcome {
	if t.Job == nil || t.Job.Kind != core.JobProactive {
		return nil // a recurring job moved on when its turn was queued
	}
	now := s.cfg.Clock.Now().UTC()
	switch c.Status {
	case core.RunSucceeded:
		if silent {
			return &core.JobOutcome{Status: core.JobSent, Error: "silent: the follow-up turn chose to say nothing"}
		}
		return &core.JobOutcome{Status: core.JobSent}
	case core.RunCanceled:
		// A newer message or a shutdown stopped it: look again now (a user
		// who wrote makes it stale).
		return &core.JobOutcome{Status: core.JobPending, DueAt: now, Error: c.Error}
	default:
		if t.Job.Attempts >= s.cfg.JobMaxAttempts {
			return &core.JobOutcome{Status: core.JobFailed, Error: c.Error}
		}
		return &core.JobOutcome{Status: core.JobPending, DueAt: now.Add(core.JobRetry().Delay(t.Job.Attempts)), Error: c.Error}
	}
}
