package turns

import "github.com/parleybot/parley/internal/backoff"

// completeBackoff spaces the tries to record a run's outcome (turn.go).
func completeBackoff() backoff.Policy {
	return backoff.Policy{Initial: completeRetryMin, Max: completeRetryMax}
}
