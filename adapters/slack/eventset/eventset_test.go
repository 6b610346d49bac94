package eventset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventSet(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewSet(time.Hour, 4)
	require.Equal(t, New, s.Begin("a", now))
	require.Equal(t, InFlight, s.Begin("a", now))
	s.Forget("a")
	require.Equal(t, New, s.Begin("a", now))
	s.Finish("a", now)
	require.Equal(t, Done, s.Begin("a", now.Add(59*time.Minute)))
	require.Equal(t, New, s.Begin("a", now.Add(61*time.Minute)), "forgotten after the ttl")

	// Full: the oldest half goes.
	s = NewSet(time.Hour, 4)
	for i, id := range []string{"1", "2", "3", "4"} {
		s.Begin(id, now.Add(time.Duration(i)*time.Second))
		s.Finish(id, now.Add(time.Duration(i)*time.Second))
	}
	require.Equal(t, New, s.Begin("5", now.Add(5*time.Second)))
	require.Equal(t, Done, s.Begin("4", now.Add(6*time.Second)), "the newest are kept")
	require.Equal(t, New, s.Begin("1", now.Add(6*time.Second)), "the oldest were dropped")
}
