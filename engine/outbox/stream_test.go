package outbox_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/engine/outbox"
)

const waitFor = 5 * time.Second

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// streamingAdapter is a coretest.Adapter that streams, noting every call.
type streamingAdapter struct {
	*coretest.Adapter
	minInterval time.Duration
	refresh     time.Duration

	mu      sync.Mutex
	calls   []string
	busy    int // the next busy Updates refuse with ErrStreamBusy
	changed chan struct{}
}

func newStreamingAdapter() *streamingAdapter {
	return &streamingAdapter{Adapter: coretest.NewAdapter("web"), changed: make(chan struct{}, 100)}
}

func (a *streamingAdapter) note(call string) {
	a.mu.Lock()
	a.calls = append(a.calls, call)
	a.mu.Unlock()
	a.changed <- struct{}{}
}

func (a *streamingAdapter) Stream(context.Context, core.OutboundMessage) (core.Stream, error) {
	return &noteStream{a: a}, nil
}

func (a *streamingAdapter) StreamCapabilities() core.StreamCapabilities {
	return core.StreamCapabilities{Mode: "edits", MinInterval: a.minInterval, Refresh: a.refresh}
}

// waitCalls waits until the adapter has noted n calls and returns them.
func (a *streamingAdapter) waitCalls(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		a.mu.Lock()
		calls := append([]string(nil), a.calls...)
		a.mu.Unlock()
		if len(calls) >= n {
			return calls
		}
		select {
		case <-a.changed:
		case <-deadline:
			require.FailNow(t, "too few stream calls", "want %d, have %q", n, calls)
		}
	}
}

type noteStream struct{ a *streamingAdapter }

func (s *noteStream) Update(_ context.Context, text string) error {
	s.a.mu.Lock()
	busy := s.a.busy > 0
	if busy {
		s.a.busy--
	}
	s.a.mu.Unlock()
	if busy {
		s.a.note("busy " + text)
		return core.ErrStreamBusy
	}
	s.a.note("update " + text)
	return nil
}

func (s *noteStream) Finish(_ context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	s.a.note("finish " + msg.Text)
	return core.SendResult{PlatformMessageIDs: []string{"m1"}}, nil
}

func (s *noteStream) Abandon(context.Context) error { s.a.note("abandon"); return nil }
func (s *noteStream) Grown() []string               { return []string{"m1"} }

func newOutbox(t *testing.T, a core.Adapter, clock core.Clock, st outbox.Streaming) *outbox.Outbox {
	t.Helper()
	o, err := outbox.New(outbox.Config{Adapters: []core.Adapter{a}, Clock: clock, Logger: (&coretest.Logs{}).Logger(),
		Streaming: st, Metrics: sentCounter{}})
	require.NoError(t, err)
	return o
}

// upper shows raw text upper-cased, holding back anything after '<'.
func upper(raw string, _ core.TextFormat) string {
	if i := strings.IndexByte(raw, '<'); i >= 0 {
		raw = raw[:i]
	}
	return strings.ToUpper(raw)
}

// The reply grows at most once per interval (the platform's floor when
// it is higher), each update the latest visible text, then the finished
// text replaces it through Deliver's adapter.
func TestGrowerCoalescesToTheInterval(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	a := newStreamingAdapter()
	a.minInterval = time.Second
	o := newOutbox(t, a, clock, outbox.Streaming{Enabled: true, Interval: 400 * time.Millisecond, Visible: upper})
	g := o.Grow(context.Background(), a, core.OutboundMessage{ChannelThreadID: "c1"}, nil)
	require.NotNil(t, g)

	g.Raw("hel")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold), waitFor)
	clock.Advance(outbox.FirstHold)
	require.Equal(t, []string{"update HEL"}, a.waitCalls(t, 1))
	g.Raw("hello")
	g.Raw("hello wor")
	g.Raw("hello world <SIL")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold+time.Second), waitFor) // the platform's floor, not 400ms
	clock.Advance(time.Second)
	require.Equal(t, []string{"update HEL", "update HELLO WORLD "}, a.waitCalls(t, 2))

	res, err := g.Via(a).Send(context.Background(), core.OutboundMessage{Text: "Hello world."})
	require.NoError(t, err)
	require.Equal(t, []string{"m1"}, res.PlatformMessageIDs)
	require.Equal(t, []string{"update HEL", "update HELLO WORLD ", "finish Hello world."}, a.waitCalls(t, 3))
	g.Raw("late text is ignored")
	g.Abandon(context.Background())
	require.Len(t, a.waitCalls(t, 3), 3, "nothing after Finish")
	require.Equal(t, 2, g.Updates())
}

// A partial the platform has no slot for is tried again an interval
// later with the text by then; Abandon takes back what grew.
func TestGrowerRetriesASkippedPartialAndAbandons(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	a := newStreamingAdapter()
	a.busy = 1
	o := newOutbox(t, a, clock, outbox.Streaming{Enabled: true, Interval: 400 * time.Millisecond, Visible: upper})
	g := o.Grow(context.Background(), a, core.OutboundMessage{ChannelThreadID: "c1"}, nil)
	g.Raw("one")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold), waitFor)
	clock.Advance(outbox.FirstHold)
	require.Equal(t, []string{"busy ONE"}, a.waitCalls(t, 1))
	g.Raw("one two")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold+400*time.Millisecond), waitFor)
	clock.Advance(400 * time.Millisecond)
	require.Equal(t, []string{"busy ONE", "update ONE TWO"}, a.waitCalls(t, 2))
	g.Abandon(context.Background())
	require.Equal(t, []string{"busy ONE", "update ONE TWO", "abandon"}, a.waitCalls(t, 3))
}

// Streaming off, an adapter that cannot stream, or one whose mode is
// off: no Grower, the reply goes whole; a nil Grower is safe to use.
func TestNoGrowerWhenNotStreaming(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	a := newStreamingAdapter()
	off := newOutbox(t, a, clock, outbox.Streaming{Enabled: false, Visible: upper})
	require.Nil(t, off.Grow(context.Background(), a, core.OutboundMessage{}, nil))
	plain := coretest.NewAdapter("web")
	on := newOutbox(t, plain, clock, outbox.Streaming{Enabled: true, Visible: upper})
	g := on.Grow(context.Background(), plain, core.OutboundMessage{}, nil)
	require.Nil(t, g)
	require.Nil(t, g.OnRaw())
	require.Equal(t, core.Adapter(plain), g.Via(plain))
	g.Raw("x")
	g.Abandon(context.Background())
}

// A reply finished before its first words have waited FirstHold goes out
// whole: no partial at all.
func TestGrowerSendsAQuickReplyWhole(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	a := newStreamingAdapter()
	o := newOutbox(t, a, clock, outbox.Streaming{Enabled: true, Interval: 400 * time.Millisecond, Visible: upper})
	g := o.Grow(context.Background(), a, core.OutboundMessage{ChannelThreadID: "c1"}, nil)
	g.Raw("quick")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold), waitFor) // the first words wait
	_, err := g.Via(a).Send(context.Background(), core.OutboundMessage{Text: "Quick."})
	require.NoError(t, err)
	require.Equal(t, []string{"finish Quick."}, a.waitCalls(t, 1))
	require.Zero(t, g.Updates())
}

// A partial left unchanged for the adapter's Refresh (a Telegram draft
// expires) is shown again, once per Refresh while nothing changes.
func TestGrowerShowsAnUnchangedPartialAgain(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	a := newStreamingAdapter()
	a.refresh = 20 * time.Second
	o := newOutbox(t, a, clock, outbox.Streaming{Enabled: true, Interval: 400 * time.Millisecond, Visible: upper})
	g := o.Grow(context.Background(), a, core.OutboundMessage{ChannelThreadID: "c1"}, nil)
	g.Raw("thinking it over")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold), waitFor)
	clock.Advance(outbox.FirstHold)
	require.Equal(t, []string{"update THINKING IT OVER"}, a.waitCalls(t, 1))
	// The model pauses (a slow tool call): 20 s later the same text again.
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold+20*time.Second), waitFor)
	clock.Advance(20 * time.Second)
	require.Equal(t, []string{"update THINKING IT OVER", "update THINKING IT OVER"}, a.waitCalls(t, 2))
	g.Raw("thinking it over, done")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold+20*time.Second+400*time.Millisecond), waitFor)
	clock.Advance(400 * time.Millisecond)
	require.Equal(t, "update THINKING IT OVER, DONE", a.waitCalls(t, 3)[2])
	g.Abandon(context.Background())
}

// sentCounter is the Outbox's metrics; the tests read the adapters.
type sentCounter struct{ core.Metrics }

func (sentCounter) Sent(core.Platform, string) {}

func (a *streamingAdapter) EditMessage(_ context.Context, id string, msg core.OutboundMessage) error {
	a.note("edit " + id + " " + msg.Text)
	return nil
}

func (a *streamingAdapter) DeleteMessage(_ context.Context, _, id string) error {
	a.note("delete " + id)
	return nil
}

// A reply a dead process stored while it was finishing the one message
// it had grown is finished in place when sent again: that message is
// edited to the finished text, nothing is deleted or sent anew. One too
// long for a message is replaced: what grew is deleted, the reply sent.
func TestResendFinishesAGrownReplyInPlace(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	a := newStreamingAdapter()
	a.MaxLength = 100
	o := newOutbox(t, a, clock, outbox.Streaming{})
	conv := core.Conversation{ID: 1, ChannelThreadID: "c1"}
	m := &core.Message{ID: 7, ConversationID: 1, Role: core.RoleAssistant, Content: "The finished answer.", Delivery: core.DeliverySending}
	outbox.NoteGrown(m, []string{"g1"})
	release, err := o.Resend(context.Background(), a, conv, m)
	require.NoError(t, err)
	release()
	require.Equal(t, []string{"edit g1 The finished answer."}, a.waitCalls(t, 1))
	require.Empty(t, a.Sent(), "nothing sent anew")
	require.Equal(t, core.DeliverySent, m.Delivery)
	require.Equal(t, "g1", m.PlatformMessageID)

	long := &core.Message{ID: 8, ConversationID: 1, Role: core.RoleAssistant, Content: strings.Repeat("word ", 30), Delivery: core.DeliverySending}
	outbox.NoteGrown(long, []string{"g2"})
	release, err = o.Resend(context.Background(), a, conv, long)
	require.NoError(t, err)
	release()
	require.Equal(t, "delete g2", a.waitCalls(t, 2)[1])
	require.Len(t, a.Sent(), 2, "sent anew, in the two parts it takes")
}

// A streamed reply that ends with files finishes its text first, then
// sends the files once, without the text again; with no text, what grew
// is taken back and the files go alone.
func TestAStreamedReplyWithFilesFinishesItsTextThenSendsThem(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	a := newStreamingAdapter()
	o := newOutbox(t, a, clock, outbox.Streaming{Enabled: true, Interval: 400 * time.Millisecond, Visible: upper})
	pic := []core.OutboundFile{{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: []byte("png")}}

	g := o.Grow(context.Background(), a, core.OutboundMessage{ChannelThreadID: "c1"}, nil)
	g.Raw("here is")
	clock.WaitForTimer(t, t0.Add(outbox.FirstHold), waitFor)
	clock.Advance(outbox.FirstHold)
	require.Equal(t, []string{"update HERE IS"}, a.waitCalls(t, 1))
	res, err := o.Send(context.Background(), g.Via(a), core.OutboundMessage{ChannelThreadID: "c1", Text: "Here is Miso.", Files: pic})
	require.NoError(t, err)
	require.Equal(t, []string{"update HERE IS", "finish Here is Miso."}, a.waitCalls(t, 2))
	sent := a.Sent()
	require.Len(t, sent, 1, "the files, once")
	require.Equal(t, pic, sent[0].Files)
	require.Empty(t, sent[0].Text, "the text is above them already")
	require.Len(t, res.PlatformMessageIDs, 2, "the finished text's message and the files'")

	g = o.Grow(context.Background(), a, core.OutboundMessage{ChannelThreadID: "c1"}, nil)
	_, err = o.Send(context.Background(), g.Via(a), core.OutboundMessage{ChannelThreadID: "c1", Files: pic})
	require.NoError(t, err)
	require.Equal(t, "abandon", a.waitCalls(t, 3)[2], "nothing to finish with: what grew goes")
	require.Len(t, a.Sent(), 2)
}

// A streamed reply with files a dead process left sending: its grown
// message is finished in place, and its files follow under their own key
// (the one a live finish sends them with, so a platform that drops
// repeated keys drops them if they went already).
func TestResendFinishesAGrownReplyThenItsFiles(t *testing.T) {
	t.Parallel()
	a := newStreamingAdapter()
	a.MaxLength = 100
	o := newOutbox(t, a, coretest.NewClock(t0), outbox.Streaming{})
	conv := core.Conversation{ID: 1, ChannelThreadID: "c1"}
	m := &core.Message{ID: 9, ConversationID: 1, Role: core.RoleAssistant, Content: "Your list.", Delivery: core.DeliverySending}
	m.AttachFiles(miso)
	outbox.NoteGrown(m, []string{"g1"})
	release, err := o.Resend(context.Background(), a, conv, m)
	require.NoError(t, err)
	release()
	require.Equal(t, []string{"edit g1 Your list."}, a.waitCalls(t, 1))
	sent := a.Sent()
	require.Len(t, sent, 1)
	require.Equal(t, miso, sent[0].Files)
	require.Empty(t, sent[0].Text)
	require.Equal(t, m.IdempotencyKey()+".files", sent[0].IdempotencyKey)
	require.Equal(t, core.DeliverySent, m.Delivery)
	require.Equal(t, "g1", m.PlatformMessageID)
}
