package jobs

import (
	"time"

	"github.com/parleybot/parley/internal/backoff"
)

// sendRetry spaces the tries of a scheduled message that failed
// (send.go): 30s, doubling, at most 2^10 times that.
func sendRetry() backoff.Policy {
	return backoff.Policy{Initial: 30 * time.Second, Max: 30 * time.Second << 10}
}
