package engine

import (
	"github.com/parleybot/parley/internal/backoff"
)

// The core's backoffs, in one place. Functions, not variables: a policy
// is a value no loop may change for another.

// listenBackoff spaces the tries to listen again for other replicas' work
// (listen.go).
func listenBackoff() backoff.Policy {
	return backoff.Policy{Initial: listenRetryMin, Max: listenRetryMax}
}
