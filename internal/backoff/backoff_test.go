package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDelayGrowsAndIsCapped(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: time.Second, Max: 30 * time.Second}
	var got []time.Duration
	for attempt := range 7 {
		got = append(got, p.Delay(attempt))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 30 * time.Second, 30 * time.Second}, got)
	require.Equal(t, 30*time.Second, p.Delay(1000), "a large attempt neither overflows nor runs long")
	require.Equal(t, time.Second, p.Delay(-1))
}

func TestDelayWithoutMaxSaturates(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: time.Second}
	require.Equal(t, 4*time.Second, p.Delay(2))
	require.Positive(t, p.Delay(200), "no cap: the delay saturates instead of wrapping negative")
}

func TestMultiplier(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: time.Second, Max: time.Minute, Multiplier: 1.5}
	require.Equal(t, 2250*time.Millisecond, p.Delay(2))
}

func TestJitterStaysWithinHalfAndWhole(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: 500 * time.Millisecond, Max: time.Minute, Jitter: true}
	for range 1000 {
		d := p.Delay(3) // 4s before jitter
		require.GreaterOrEqual(t, d, 2*time.Second)
		require.LessOrEqual(t, d, 4*time.Second)
	}
}

func TestNext(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second}
	require.Equal(t, 200*time.Millisecond, p.Next(0), "a loop starting from zero gets Initial")
	require.Equal(t, 400*time.Millisecond, p.Next(200*time.Millisecond))
	require.Equal(t, 5*time.Second, p.Next(4*time.Second))
	require.Equal(t, 5*time.Second, p.Next(5*time.Second))
}
