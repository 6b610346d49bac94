package web

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

// n per window is a burst of n, then one every window/n; the wait it
// reports is exactly the time until the next one is allowed.
func TestKeyedLimiterBurstThenPace(t *testing.T) {
	t.Parallel()
	l := newKeyedLimiter(4, time.Minute, 100)
	for i := range 4 {
		ok, _ := l.take("a", t0)
		require.True(t, ok, "burst %d", i)
	}
	ok, wait := l.take("a", t0)
	require.False(t, ok)
	require.Equal(t, 15*time.Second, wait)
	ok, wait = l.take("a", t0.Add(10*time.Second))
	require.False(t, ok, "a refusal costs nothing but does not pass early")
	require.Equal(t, 5*time.Second, wait)
	ok, _ = l.take("a", t0.Add(15*time.Second))
	require.True(t, ok)
	ok, _ = l.take("b", t0.Add(15*time.Second))
	require.True(t, ok, "keys are independent")
	// A minute idle: the whole burst is back.
	for i := range 4 {
		ok, _ := l.take("a", t0.Add(75*time.Second))
		require.True(t, ok, "burst %d after idling", i)
	}
	ok, _ = l.take("a", t0.Add(75*time.Second))
	require.False(t, ok)

	var none *keyedLimiter = newKeyedLimiter(0, time.Minute, 100)
	require.Nil(t, none)
	ok, _ = none.take("a", t0)
	require.True(t, ok, "0 is no limit")
}

// A flood of new keys (addresses, client ids) costs bounded memory: past
// its maximum the limiter forgets the least recently used key, and once a
// key's bucket is full again it is forgotten at the next take.
func TestKeyedLimiterMemoryIsBounded(t *testing.T) {
	t.Parallel()
	l := newKeyedLimiter(20, time.Hour, 1000)
	for i := range 100_000 {
		l.take(fmt.Sprintf("key-%d", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	require.Equal(t, 1000, l.tracked())
	// The most recent keys are still limited...
	for range 19 {
		ok, _ := l.take("key-99999", t0.Add(100*time.Second))
		require.True(t, ok)
	}
	ok, _ := l.take("key-99999", t0.Add(100*time.Second))
	require.False(t, ok, "a recent key keeps its count")
	// ...and once every bucket is full again, one take forgets them all.
	l.take("late", t0.Add(3*time.Hour))
	require.Equal(t, 1, l.tracked())
}

func TestRecentSetIsBounded(t *testing.T) {
	t.Parallel()
	r := newRecentSet(3)
	for _, s := range []string{"a", "b", "c"} {
		r.add(s)
	}
	require.True(t, r.has("a")) // a is now the most recent
	r.add("d")                  // b goes
	require.False(t, r.has("b"))
	require.True(t, r.has("a"))
	require.True(t, r.has("c"))
	require.True(t, r.has("d"))
	require.Equal(t, 3, r.size())
}

func TestIPKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.1":             "192.0.2.1",
		"::ffff:192.0.2.1":      "192.0.2.1",
		"2001:db8:1:2:3:4:5:6":  "2001:db8:1:2::/64",
		"2001:db8:1:2::ff%eth0": "2001:db8:1:2::/64",
		"::1":                   "::/64",
	} {
		require.Equal(t, want, ipKey(netip.MustParseAddr(in)), in)
	}
	require.Equal(t, "unknown", ipKey(netip.Addr{}))
}

func TestWaitText(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		time.Millisecond:             "1 second",
		3 * time.Second:              "3 seconds",
		89 * time.Second:             "89 seconds",
		90 * time.Second:             "2 minutes",
		3 * time.Minute:              "3 minutes",
		59*time.Minute + time.Second: "60 minutes",
	} {
		require.Equal(t, want, waitText(d), d.String())
	}
}

// A flood of refusals logs a line a minute, with the count held back.
func TestNoticeSpacesWarnings(t *testing.T) {
	t.Parallel()
	var n notice
	ok, held := n.allow(t0)
	require.True(t, ok)
	require.Zero(t, held)
	for range 5 {
		ok, _ := n.allow(t0.Add(30 * time.Second))
		require.False(t, ok)
	}
	ok, held = n.allow(t0.Add(time.Minute))
	require.True(t, ok)
	require.Equal(t, 5, held)
}
