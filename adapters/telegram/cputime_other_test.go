//go:build !unix

package telegram_test

import (
	"testing"
	"time"
)

// cpuTime is not known here: the benchmarks report rates only.
func cpuTime(*testing.B) time.Duration { return 0 }
