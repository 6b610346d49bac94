//go:build linux && soak

package soak

import (
	"testing"
	"time"

	"github.com/parleybot/parley/store"
)

// The long form (issue 12): go test -tags soak -run Soak -v ./test/soak/

func TestSoakPostgres(t *testing.T) {
	soak(t, params{
		driver:        store.DriverPostgres,
		replicas:      3,
		conversations: 500,
		jobs:          10_000,
		dueWindow:     10 * time.Second,
		dueLead:       10 * time.Second,
		kills:         10,
		killGap:       [2]time.Duration{500 * time.Millisecond, 1200 * time.Millisecond},
		jobLease:      5 * time.Second,
		faultGap:      [2]int{20, 60},
		settle:        2 * time.Minute,
		seeders:       16,
	})
}

func TestSoakSQLite(t *testing.T) {
	soak(t, params{
		driver:        store.DriverSQLite,
		replicas:      1,
		conversations: 500,
		jobs:          10_000,
		dueWindow:     10 * time.Second,
		dueLead:       4 * time.Second,
		kills:         20,
		killGap:       [2]time.Duration{200 * time.Millisecond, 800 * time.Millisecond},
		jobLease:      5 * time.Second,
		faultGap:      [2]int{20, 60},
		settle:        2 * time.Minute,
		seeders:       8,
	})
}
