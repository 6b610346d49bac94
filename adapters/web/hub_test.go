package web

import (
	"context"
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
	slow, ok := a.hub.subscribe("client-0001")
	require.True(t, ok)
	fast, ok := a.hub.subscribe("client-0001")
	require.True(t, ok)

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
		<-fast.ch // the fast page reads everything
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
	s, ok := a.hub.subscribe("client-0001")
	require.True(t, ok)
	for i := 0; i < subscriberBuffer+10; i++ {
		require.NoError(t, a.Typing(context.Background(), "client-0001"))
	}
	require.Len(t, s.ch, subscriberBuffer)
	select {
	case <-s.gone:
		require.FailNow(t, "typing dropped the subscriber")
	default:
	}
	a.hub.leave(s)
}
