package core

import (
	"time"

	"github.com/parleybot/parley/internal/backoff"
)

// The core's backoffs, in one place. Functions, not variables: a policy
// is a value no loop may change for another.

// listenBackoff spaces the tries to listen again for other replicas' work
// (listen.go).
func listenBackoff() backoff.Policy {
	return backoff.Policy{Initial: listenRetryMin, Max: listenRetryMax}
}

// completeBackoff spaces the tries to record a run's outcome (turn.go).
func completeBackoff() backoff.Policy {
	return backoff.Policy{Initial: completeRetryMin, Max: completeRetryMax}
}

// sendRetry spaces the tries of a scheduled message that failed
// (send.go): 30s, doubling, at most 2^10 times that.
func sendRetry() backoff.Policy {
	return backoff.Policy{Initial: 30 * time.Second, Max: 30 * time.Second << 10}
}

// jobRetry spaces the tries of a job whose turn failed (jobs.go): a
// minute, doubling, at most 2^10 times that.
func jobRetry() backoff.Policy {
	return backoff.Policy{Initial: time.Minute, Max: time.Minute << 10}
}
