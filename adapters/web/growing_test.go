package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
)

// startReply starts a streamed reply to thread as the core does.
func (b *testBundle) startReply(t *testing.T, thread string, format core.TextFormat) core.Stream {
	t.Helper()
	st, err := b.adapter.Stream(context.Background(), core.OutboundMessage{ConversationID: 1, ChannelThreadID: thread, Format: format})
	require.NoError(t, err)
	return st
}

// nextPartial reads the next event, which must be a partial reply.
func (s *stream) nextPartial(t *testing.T) wireMessage {
	t.Helper()
	ev := s.next(t)
	require.Equal(t, "partial", ev.Name, "event %s %s", ev.Name, ev.Data)
	var m wireMessage
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &m))
	return m
}

// requireNextIsMarker proves nothing else came before it: the test sends
// a marker message and it is the next event.
func (b *testBundle) requireNextIsMarker(t *testing.T, s *stream, thread string) {
	t.Helper()
	ids := b.send(t, thread, "marker")
	m := s.nextMessage(t)
	require.Equal(t, ids[0], m.ID, "an event came before the marker: %+v", m)
	require.Equal(t, "marker", m.Text)
}

// A reply streamed to an open page as the core streams it: each update is
// a "partial" event with the reply's id and the whole text so far,
// rendered as a message is; Finish sends one "message" event with the
// same id, which the page puts in place of the partial. Nothing else.
func TestStreamedReplyGrowsThenArrivesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")
	require.Equal(t, core.StreamCapabilities{Mode: "events"}, b.adapter.StreamCapabilities())

	reply := b.startReply(t, "client-0001", core.FormatRichText)
	grows := []string{"Here is", "Here is **the plan**", "Here is **the plan**:\n\n1. Read"}
	var id string
	for _, text := range grows {
		require.NoError(t, reply.Update(context.Background(), text))
		p := s.nextPartial(t)
		if id == "" {
			id = p.ID
		}
		require.Equal(t, id, p.ID, "every partial of a reply has its id")
		require.Equal(t, "assistant", p.Role)
		require.Equal(t, text, p.Text, "the whole text so far, never a delta")
		require.Equal(t, b.now.Format("2006-01-02T15:04:05Z"), p.At)
	}
	require.True(t, strings.HasPrefix(id, "w-"), id)
	require.Contains(t, s.lastHTML(t, reply, grows[2]), "<strong>the plan</strong>")

	final := "Here is **the plan**:\n\n1. Read the log.\n2. Fix the test."
	res, err := reply.Finish(context.Background(), core.OutboundMessage{ConversationID: 1, ChannelThreadID: "client-0001",
		Text: final, Format: core.FormatRichText})
	require.NoError(t, err)
	require.Equal(t, []string{id}, res.PlatformMessageIDs, "the finished message keeps the reply's id")
	m := s.nextMessage(t)
	require.Equal(t, id, m.ID)
	require.Equal(t, final, m.Text)
	require.Contains(t, m.HTML, "<strong>the plan</strong>")
	require.Contains(t, m.HTML, "<li>Fix the test.</li>")
	b.requireNextIsMarker(t, s, "client-0001")
	require.Empty(t, reply.Grown(), "a partial is no platform message")

	// Done: nothing more goes out for it.
	require.Error(t, reply.Update(context.Background(), "late"))
	require.Error(t, reply.Abandon(context.Background()))
	_, err = reply.Finish(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: final})
	require.Error(t, err)
	b.requireNextIsMarker(t, s, "client-0001")
}

// lastHTML updates reply to text again and returns the partial's HTML.
func (s *stream) lastHTML(t *testing.T, reply core.Stream, text string) string {
	t.Helper()
	require.NoError(t, reply.Update(context.Background(), text))
	return s.nextPartial(t).HTML
}

// A partial is sanitised as a message is: what the model writes cannot
// run in the page.
func TestPartialIsSanitised(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")
	reply := b.startReply(t, "client-0001", core.FormatRichText)

	require.NoError(t, reply.Update(context.Background(),
		"**hi** <script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1))"))

	html := s.nextPartial(t).HTML
	require.Contains(t, html, "<strong>hi</strong>")
	for _, bad := range []string{"<script", "<img", "javascript:", "href"} {
		require.NotContains(t, html, bad, "no element or link that could run")
	}
	require.Contains(t, html, "&lt;script&gt;", "raw HTML shows as text")
}

// Abandon takes the partial back from the page with a "discard" event; a
// reply that never showed is taken back silently.
func TestAbandonedReplyIsTakenBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")

	reply := b.startReply(t, "client-0001", core.FormatRichText)
	require.NoError(t, reply.Update(context.Background(), "Let me th"))
	id := s.nextPartial(t).ID
	require.NoError(t, reply.Abandon(context.Background()))
	ev := s.next(t)
	require.Equal(t, "discard", ev.Name)
	require.JSONEq(t, `{"id": "`+id+`"}`, ev.Data)
	b.requireNextIsMarker(t, s, "client-0001")

	// Text that shows nothing yet is not pushed; so nothing to take back.
	silent := b.startReply(t, "client-0001", core.FormatRichText)
	require.NoError(t, silent.Update(context.Background(), "  \n"))
	require.NoError(t, silent.Abandon(context.Background()))
	b.requireNextIsMarker(t, s, "client-0001")
}

// A page that reconnects mid-stream is not sent the partials it missed,
// as messages or at all: its first event is the next partial, with the
// whole text. The history, the core's, holds no partial.
func TestReconnectMidStreamReplaysNoPartial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, closeFirst := b.openStreamFrom(t, "client-0001", "192.0.2.1")
	reply := b.startReply(t, "client-0001", core.FormatRichText)
	require.NoError(t, reply.Update(context.Background(), "One"))
	id := first.nextPartial(t).ID
	closeFirst()
	waitOpenStreams(t, b.adapter, 0)

	// Written while no page is open: it reaches no one, and is kept nowhere.
	require.NoError(t, reply.Update(context.Background(), "One two"))
	again, _ := b.openStreamFrom(t, "client-0001", "192.0.2.1")
	status, _, body := b.get(t, "/web/history?client_id=client-0001")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"messages": []}`, body, "a partial is not a stored message")

	require.NoError(t, reply.Update(context.Background(), "One two three"))
	p := again.nextPartial(t)
	require.Equal(t, id, p.ID)
	require.Equal(t, "One two three", p.Text)
	_, err := reply.Finish(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001",
		Text: "One two three.", Format: core.FormatRichText})
	require.NoError(t, err)
	m := again.nextMessage(t)
	require.Equal(t, id, m.ID)
	require.Equal(t, "One two three.", m.Text)
	b.requireNextIsMarker(t, again, "client-0001")
	require.Empty(t, b.core.messages(), "the core was handed nothing")
}

// Every open page of the client watches the reply grow; other clients
// see nothing of it.
func TestEveryTabSeesTheReplyGrow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tabs := []*stream{b.openStream(t, "client-0001"), b.openStream(t, "client-0001")}
	other := b.openStream(t, "client-0002")

	reply := b.startReply(t, "client-0001", core.FormatText)
	require.NoError(t, reply.Update(context.Background(), "plain *text*"))
	_, err := reply.Finish(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: "plain *text* done"})
	require.NoError(t, err)
	for _, s := range tabs {
		p := s.nextPartial(t)
		require.Equal(t, "plain *text*", p.Text)
		require.Empty(t, p.HTML, "text is shown as written")
		m := s.nextMessage(t)
		require.Equal(t, p.ID, m.ID)
		require.Equal(t, "plain *text* done", m.Text)
	}
	b.requireNextIsMarker(t, other, "client-0002")
}

// A finished reply that cannot go out takes its partial back, so no page
// keeps half a reply as if it were whole.
func TestFinishThatFailsTakesThePartialBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")
	reply := b.startReply(t, "client-0001", core.FormatRichText)
	require.NoError(t, reply.Update(context.Background(), "Half"))
	id := s.nextPartial(t).ID

	_, err := reply.Finish(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: " ", Format: core.FormatRichText})
	require.True(t, core.IsPermanent(err), "got %v", err)
	ev := s.next(t)
	require.Equal(t, "discard", ev.Name)
	require.JSONEq(t, `{"id": "`+id+`"}`, ev.Data)
}

// adapters.web.streaming: auto and edits both stream over the event
// stream; off streams nothing (no mode, Stream refuses, so the core sends
// whole replies); anything else is a config error naming the key.
func TestStreamingConfig(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"auto", "edits"} {
		a := web.New()
		a.Streaming = mode
		require.NoError(t, a.Validate(), mode)
		require.Equal(t, core.StreamCapabilities{Mode: "events"}, a.StreamCapabilities(), mode)
	}
	require.Equal(t, "auto", web.New().Streaming, "the default")

	a := web.New()
	a.Streaming = "drafts"
	require.EqualError(t, a.Validate(), `web adapter: adapters.web.streaming is "drafts"; it must be auto, edits or off`)
}

// Streaming off: the page gets replies whole, as messages, and never a
// partial.
func TestStreamingOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.adapter.Streaming = "off"
	require.NoError(t, b.adapter.Validate())
	s := b.openStream(t, "client-0001")

	require.Equal(t, core.StreamCapabilities{}, b.adapter.StreamCapabilities())
	_, err := b.adapter.Stream(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Format: core.FormatRichText})
	require.ErrorContains(t, err, "adapters.web.streaming")
	b.requireNextIsMarker(t, s, "client-0001")
}

// Stream checks what Send checks: no thread, a stopped adapter.
func TestStreamRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.adapter.Stream(context.Background(), core.OutboundMessage{Format: core.FormatRichText})
	require.True(t, core.IsPermanent(err), "got %v", err)

	reply := b.startReply(t, "client-0001", core.FormatRichText)
	require.NoError(t, b.adapter.Stop(context.Background()))
	require.ErrorContains(t, reply.Update(context.Background(), "late"), "stopped")
	_, err = b.adapter.Stream(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001"})
	require.ErrorContains(t, err, "stopped")
}
