package web

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// A tab that reads nothing while a reply grows fast holds one partial per
// reply, the newest, in the place of the first: it is never dropped for
// partials, and what it reads next is the whole text so far.
func TestSlowTabHoldsOnePartialPerReply(t *testing.T) {
	t.Parallel()
	a := New()
	s, verdict := a.hub.subscribe("client-0001", "192.0.2.1", streamCaps{})
	require.Equal(t, admitted, verdict)
	defer a.hub.leave(s)
	ctx := context.Background()
	_, err := a.Send(ctx, core.OutboundMessage{ChannelThreadID: "client-0001", Text: "before"})
	require.NoError(t, err)
	one, err := a.Stream(ctx, core.OutboundMessage{ChannelThreadID: "client-0001"})
	require.NoError(t, err)
	two, err := a.Stream(ctx, core.OutboundMessage{ChannelThreadID: "client-0001"})
	require.NoError(t, err)

	text := ""
	for i := range 3 * subscriberBuffer {
		text += strconv.Itoa(i) + " "
		require.NoError(t, one.Update(ctx, text))
		require.NoError(t, two.Update(ctx, "two: "+text))
	}

	evs := a.hub.take(s)
	require.Len(t, evs, 3, "the message, then one partial of each reply")
	require.Equal(t, "message", evs[0].name)
	for i, want := range []string{text, "two: " + text} {
		require.Equal(t, "partial", evs[i+1].name)
		var m wireMessage
		require.NoError(t, json.Unmarshal(evs[i+1].data, &m))
		require.Equal(t, want, m.Text)
	}
	select {
	case <-s.gone:
		require.FailNow(t, "partials dropped the tab")
	default:
	}
}

// A tab whose queue is full of messages misses a partial (the next one
// carries the whole text) but is not dropped for it.
func TestFullTabMissesAPartial(t *testing.T) {
	t.Parallel()
	h := newHub()
	s, verdict := h.subscribe("client-0001", "192.0.2.1", streamCaps{})
	require.Equal(t, admitted, verdict)
	defer h.leave(s)
	for range subscriberBuffer {
		require.Equal(t, 1, h.publish("client-0001", []event{{name: "message", data: []byte("{}")}}, true))
	}

	require.Equal(t, 0, h.publishPartial("client-0001", event{name: "partial", data: []byte("{}"), key: "w-1"}))

	require.Len(t, h.take(s), subscriberBuffer)
	select {
	case <-s.gone:
		require.FailNow(t, "a partial dropped the tab")
	default:
	}
	require.Equal(t, 1, h.publishPartial("client-0001", event{name: "partial", data: []byte("{}"), key: "w-1"}))
}
