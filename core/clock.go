package core

import "time"

// Clock tells the time. Logic reads time only through a Clock so tests can
// control it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }
