package web

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// A page that stops reading must not block Send: once its buffer is full it
// is dropped (its stream closes; the page reconnects and reloads history),
// while a page that keeps up is unaffected.
func TestSlowSubscriberIsDroppedNotWaitedFor(t *testing.T) {
	t.Parallel()
	a := New()
	slow, verdict := a.hub.subscribe("client-0001", "192.0.2.1", streamCaps{})
	require.Equal(t, admitted, verdict)
	fast, verdict := a.hub.subscribe("client-0001", "192.0.2.1", streamCaps{})
	require.Equal(t, admitted, verdict)

	for i := 0; i < subscriberBuffer+1; i++ {
		if i < subscriberBuffer {
			select {
			case <-slow.gone:
				require.FailNow(t, "dropped too early", "after %d messages", i)
			default:
			}
		}
		_, err := a.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: "tick"})
		require.NoError(t, err)
		<-fast.wake // the fast page reads everything
		require.Len(t, a.hub.take(fast), 1)
	}

	select {
	case <-slow.gone:
	default:
		require.FailNow(t, "slow subscriber still subscribed")
	}
	select {
	case <-fast.gone:
		require.FailNow(t, "fast subscriber was dropped")
	default:
	}
	a.hub.leave(slow)
	a.hub.leave(fast)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, a.Stop(ctx))
}

// Typing signals are best effort: a full buffer skips them without dropping
// the page.
func TestTypingSkipsFullSubscriber(t *testing.T) {
	t.Parallel()
	a := New()
	s, verdict := a.hub.subscribe("client-0001", "192.0.2.1", streamCaps{})
	require.Equal(t, admitted, verdict)
	for i := 0; i < subscriberBuffer+10; i++ {
		require.NoError(t, a.Typing(context.Background(), "client-0001"))
	}
	require.Len(t, a.hub.take(s), subscriberBuffer)
	select {
	case <-s.gone:
		require.FailNow(t, "typing dropped the subscriber")
	default:
	}
	a.hub.leave(s)
}

// An idle stream keeps no buffer: its queue exists only while events wait.
func TestIdleSubscriberHoldsNoQueue(t *testing.T) {
	t.Parallel()
	h := newHub()
	s, verdict := h.subscribe("client-0001", "192.0.2.1", streamCaps{})
	require.Equal(t, admitted, verdict)
	require.Nil(t, s.queue)
	require.Equal(t, 1, h.publish("client-0001", []event{{name: "typing", data: []byte("{}")}}, false))
	<-s.wake
	require.Len(t, h.take(s), 1)
	require.Nil(t, s.queue, "taken events leave no buffer behind")
	h.leave(s)
}

// The caps count streams from subscribe to leave, per client, per
// address and in all, and the counts go when the streams do.
func TestHubCaps(t *testing.T) {
	t.Parallel()
	h := newHub()
	caps := streamCaps{perClient: 2, perIP: 3, total: 4}
	a1, v := h.subscribe("client-a", "192.0.2.1", caps)
	require.Equal(t, admitted, v)
	a2, v := h.subscribe("client-a", "192.0.2.1", caps)
	require.Equal(t, admitted, v)
	_, v = h.subscribe("client-a", "192.0.2.9", caps)
	require.Equal(t, tooManyForClient, v, "a third page of one client, from anywhere")
	b1, v := h.subscribe("client-b", "192.0.2.1", caps)
	require.Equal(t, admitted, v)
	_, v = h.subscribe("client-c", "192.0.2.1", caps)
	require.Equal(t, tooManyForIP, v, "a fourth stream from one address")
	c1, v := h.subscribe("client-c", "192.0.2.2", caps)
	require.Equal(t, admitted, v)
	require.Equal(t, 4, h.openStreams())

	// Full: from an address holding none, the oldest stream of the one
	// holding the most (3) makes room; it ends, and stops counting at
	// once.
	d1, v := h.subscribe("client-d", "192.0.2.3", caps)
	require.Equal(t, admitted, v)
	select {
	case <-a1.gone:
	default:
		require.FailNow(t, "the oldest stream of 192.0.2.1 was not ended")
	}
	require.True(t, h.wasEvicted(a1))
	require.False(t, h.wasEvicted(a2))
	require.Equal(t, 4, h.openStreams())
	h.mu.Lock()
	require.Equal(t, map[string]int{"192.0.2.1": 2, "192.0.2.2": 1, "192.0.2.3": 1}, h.perIP)
	require.Equal(t, 2, h.top)
	h.mu.Unlock()
	// 2 is 2 more than none: 192.0.2.1's next makes room. Then every
	// address holds one, and another is refused rather than taking
	// turns with them.
	e1, v := h.subscribe("client-e", "192.0.2.4", caps)
	require.Equal(t, admitted, v)
	require.True(t, h.wasEvicted(a2))
	require.Equal(t, 2, h.evictions())
	_, v = h.subscribe("client-f", "192.0.2.5", caps)
	require.Equal(t, hubFull, v, "every address holds one")

	// A dropped stream still counts until its handler leaves.
	h.mu.Lock()
	h.dropLocked(c1)
	h.mu.Unlock()
	_, v = h.subscribe("client-f", "192.0.2.5", caps)
	require.Equal(t, hubFull, v)

	for _, s := range []*subscriber{a1, a2, b1, c1, d1, e1} {
		h.leave(s) // an evicted stream's handler leaves too; it is not counted twice
	}
	require.Equal(t, 0, h.openStreams())
	h.mu.Lock()
	require.Empty(t, h.perClient, "no count is kept for a client with no stream")
	require.Empty(t, h.perIP)
	require.Empty(t, h.subs)
	require.Empty(t, h.byIP)
	require.Empty(t, h.holders)
	require.Zero(t, h.top)
	h.mu.Unlock()
	d, v := h.subscribe("client-d", "192.0.2.3", caps)
	require.Equal(t, admitted, v)
	h.leave(d)
	h.close()
	_, v = h.subscribe("client-d", "192.0.2.3", caps)
	require.Equal(t, hubClosed, v)
}

// Random opens and closes from a few addresses against small caps: the
// counts always agree with the streams counted, the total cap holds, and
// an eviction always takes from an address holding at least two more
// than the newcomer's.
func TestHubCountsHoldUnderChurn(t *testing.T) {
	t.Parallel()
	h := newHub()
	caps := streamCaps{perClient: 3, perIP: 6, total: 10}
	rng := rand.New(rand.NewPCG(30, 4))
	var open []*subscriber
	for i := range 20000 {
		if len(open) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(open))
			h.leave(open[j])
			open = append(open[:j], open[j+1:]...)
			continue
		}
		ip := fmt.Sprintf("192.0.2.%d", rng.IntN(8))
		h.mu.Lock()
		before, evictedBefore := map[string]int{}, h.evicted
		for k, v := range h.perIP {
			before[k] = v
		}
		h.mu.Unlock()
		s, v := h.subscribe(fmt.Sprintf("client-%d", rng.IntN(12)), ip, caps)
		if v != admitted {
			continue
		}
		open = append(open, s)
		h.mu.Lock()
		if h.evicted > evictedBefore {
			for victim, n := range before {
				if victim != ip && h.perIP[victim] == n-1 {
					require.GreaterOrEqual(t, n, before[ip]+2, "op %d: evicted from %s (%d) for %s (%d)", i, victim, n, ip, before[ip])
				}
			}
		}
		counted, most := map[string]int{}, 0
		for ipKey, l := range h.byIP {
			counted[ipKey] = l.Len()
			most = max(most, l.Len())
		}
		require.Equal(t, h.perIP, counted, "op %d", i)
		require.Equal(t, most, h.top, "op %d", i)
		require.LessOrEqual(t, h.open, caps.total, "op %d", i)
		h.mu.Unlock()
	}
	for _, s := range open {
		h.leave(s)
	}
	require.Zero(t, h.openStreams())
	require.Positive(t, h.evictions(), "the churn made some room")
}
