package core

import (
	"time"

	"github.com/parleybot/parley/internal/backoff"
)

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
