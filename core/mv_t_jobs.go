package core

// jobOutcome settles the job a run executed, from how the run ended.
func (d *Dispatcher) jobOutcome(t *Turn, c RunCompletion, silent bool) *JobOutcome {
	if t.Job == nil || t.Job.Kind != JobProactive {
		return nil // a recurring job moved on when its turn was queued
	}
	now := d.cfg.Clock.Now().UTC()
	switch c.Status {
	case RunSucceeded:
		if silent {
			return &JobOutcome{Status: JobSent, Error: "silent: the follow-up turn chose to say nothing"}
		}
		return &JobOutcome{Status: JobSent}
	case RunCanceled:
		// A newer message or a shutdown stopped it: look again now (a user
		// who wrote makes it stale).
		return &JobOutcome{Status: JobPending, DueAt: now, Error: c.Error}
	default:
		if t.Job.Attempts >= d.cfg.JobMaxAttempts {
			return &JobOutcome{Status: JobFailed, Error: c.Error}
		}
		return &JobOutcome{Status: JobPending, DueAt: now.Add(jobRetry().Delay(t.Job.Attempts)), Error: c.Error}
	}
}
