package budget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBucketTakesMoreThanItHoldsWithoutDeadlock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &Bucket{PerMinute: 60, Burst: 10} // one unit a second

	require.False(t, b.Earliest(25).After(t0), "a full bucket lets even a request larger than it go")
	b.Charge(t0, 25) // 15 in debt
	require.Equal(t, t0.Add(20*time.Second), b.Earliest(5), "5 more need the debt paid and 5 refilled")
	require.Equal(t, t0.Add(25*time.Second), b.Earliest(25), "more than the burst waits until it is full")

	b.Charge(t0.Add(20*time.Second), 5)
	b.Charge(t0, -5) // given back
	require.Equal(t, t0.Add(25*time.Second), b.Earliest(10))
}

func TestBucketHoldsNoMoreThanItsBurst(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &Bucket{PerMinute: 60, Burst: 2}
	b.Charge(t0, 1)
	// An hour idle refills it to 2, not to 3600.
	later := t0.Add(time.Hour)
	for range 2 {
		require.False(t, b.Earliest(1).After(later))
		b.Charge(later, 1)
	}
	require.Equal(t, later.Add(time.Second), b.Earliest(1))
	// Giving back to a full bucket does not overfill it.
	idle := later.Add(time.Hour)
	b.Charge(idle, -5)
	b.Charge(idle, 2)
	require.Equal(t, idle.Add(time.Second), b.Earliest(1))
}
