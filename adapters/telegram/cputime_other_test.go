//go:build !linux

package telegram_test

import (
	"testing"
	"time"
)

// processCPU is not known here: the benchmarks report rates only.
func processCPU(*testing.B, int) time.Duration { return 0 }
