package llm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Recording an unchanged state is on every model call's path: it must not
// allocate.
// (Not parallel: AllocsPerRun refuses to run in a parallel test.)
func TestRecordHealthUnchangedDoesNotAllocate(t *testing.T) {
	c, err := New(Config{BaseURL: "http://localhost:11434/v1"})
	require.NoError(t, err)
	c.recordHealth(nil)
	require.Zero(t, testing.AllocsPerRun(100, func() { c.recordHealth(nil) }))

	failure := &Error{Message: "llm: 502 Bad Gateway", health: HealthServerError}
	c.recordHealth(failure)
	require.Zero(t, testing.AllocsPerRun(100, func() { c.recordHealth(failure) }))
	require.Equal(t, HealthServerError, c.Health().State)
}
