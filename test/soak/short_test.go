//go:build linux

package soak

import (
	"testing"
	"time"

	"github.com/parleybot/parley/store"
)

// The short form runs with every `go test ./...` (CI runs it with -race;
// the replicas are built without it): each form under 20 s on two cores.
// The tests do not run in parallel: they measure, and each keeps both
// cores busy. Their lease is 8 s, not the long form's 5 s: a send that
// waits out a 429 longer than the lease allows is cut off and handed
// back, and a loaded CI machine should not spend its time on that.

func TestSoakShortPostgres(t *testing.T) {
	soak(t, params{
		driver:        store.DriverPostgres,
		replicas:      3,
		conversations: 100,
		jobs:          1000,
		dueWindow:     4 * time.Second,
		dueLead:       3 * time.Second,
		kills:         3,
		killGap:       [2]time.Duration{700 * time.Millisecond, 1500 * time.Millisecond},
		jobLease:      8 * time.Second,
		faultGap:      [2]int{10, 40},
		settle:        40 * time.Second,
		seeders:       16,
	})
}

func TestSoakShortSQLite(t *testing.T) {
	soak(t, params{
		driver:        store.DriverSQLite,
		replicas:      1,
		conversations: 40,
		jobs:          300,
		dueWindow:     3 * time.Second,
		dueLead:       2 * time.Second,
		kills:         3,
		killGap:       [2]time.Duration{500 * time.Millisecond, 1000 * time.Millisecond},
		jobLease:      8 * time.Second,
		faultGap:      [2]int{10, 40},
		settle:        40 * time.Second,
		seeders:       8,
	})
}
