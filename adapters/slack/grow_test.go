package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/pace/pacetest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
)

// growBundle is a started adapter (events mode, unpaced unless configure
// paces it) on a clock the test moves, the DM with ada the replies grow
// in, and the DM with grace, where Send shows what a finished reply
// should look like.
type growBundle struct {
	*testBundle
	clock   *pacetest.Clock
	dm, ref string
}

func newGrowBundle(t *testing.T, configure ...func(*Adapter)) *growBundle {
	t.Helper()
	clock := pacetest.NewClock(t0)
	srv := slacktest.NewServer(t, slacktest.WithNow(clock.Now))
	b := newBundleOn(t, srv, ModeEvents, append([]func(*Adapter){func(a *Adapter) { a.clock = clock }}, configure...)...)
	b.start(t)
	srv.AddUser(ada)
	srv.AddUser(grace)
	ctx, cancel := contextWithTimeout()
	defer cancel()
	dm, err := b.adapter.OpenDM(ctx, ada.ID)
	require.NoError(t, err)
	ref, err := b.adapter.OpenDM(ctx, grace.ID)
	require.NoError(t, err)
	return &growBundle{testBundle: b, clock: clock, dm: dm, ref: ref}
}

// stream starts a reply in ada's DM.
func (b *growBundle) stream(t *testing.T, format core.TextFormat) core.Stream {
	t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	st, err := b.adapter.Stream(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Format: format})
	require.NoError(t, err)
	return st
}

// finish finishes st with text.
func (b *growBundle) finish(t *testing.T, st core.Stream, text string, format core.TextFormat) core.SendResult {
	t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	res, err := st.Finish(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Text: text, Format: format})
	require.NoError(t, err)
	return res
}

// sendParts is what Send posts for text: the messages it makes in
// grace's DM, as posted.
func (b *growBundle) sendParts(t *testing.T, text string, format core.TextFormat) []string {
	t.Helper()
	before := len(b.srv.Sent(b.ref))
	ctx, cancel := contextWithTimeout()
	defer cancel()
	_, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: b.ref, Text: text, Format: format})
	require.NoError(t, err)
	var out []string
	for _, m := range b.srv.Sent(b.ref)[before:] {
		out = append(out, m.Text)
	}
	return out
}

// methods lists the Web API methods of a message's history.
func methods(m slacktest.BotMessage) []string {
	out := make([]string, len(m.History))
	for i, r := range m.History {
		out[i] = r.Method
	}
	return out
}

// update is st.Update bounded in time.
func update(st core.Stream, text string) error {
	ctx, cancel := contextWithTimeout()
	defer cancel()
	return st.Update(ctx, text)
}

func TestStreamedReplyEndsAsOneMessageWithTheFinishedText(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t)
	require.Equal(t, core.StreamCapabilities{Mode: "stream", MinInterval: 600 * time.Millisecond}, b.adapter.StreamCapabilities())
	st := b.stream(t, core.FormatRichText)

	require.NoError(t, update(st, "Hello"))
	require.Zero(t, b.srv.Calls("chat.startStream"), "the word being written waits for the next update")
	// The core closed the open marker for the partial: only what is
	// settled, up to the last space, is appended.
	require.NoError(t, update(st, "Hello **wor**"))
	ms := b.srv.BotMessages(b.dm)
	require.Len(t, ms, 1)
	ts := ms[0].TS
	require.True(t, ms[0].Streaming)
	require.Equal(t, "Hello ", ms[0].Text)
	require.NoError(t, update(st, "Hello **world** & <@U0GRACE001>, how are you"))
	m, _ := b.srv.BotMessage(b.dm, ts)
	require.Equal(t, "Hello **world** &amp; &lt;@U0GRACE001&gt;, how are ", m.Text, "escaped as Send escapes: nobody is pinged")
	require.Equal(t, "**world** &amp; &lt;@U0GRACE001&gt;, how are ", m.History[1].Text, "only the new text is appended")
	require.Equal(t, []string{ts}, st.Grown())

	final := "Hello **world** & <@U0GRACE001>, how are you?"
	res := b.finish(t, st, final, core.FormatRichText)
	require.Equal(t, []string{ts}, res.PlatformMessageIDs)
	require.Equal(t, b.sendParts(t, final, core.FormatRichText), b.srv.Visible(b.dm), "one message, exactly what Send posts")
	m, _ = b.srv.BotMessage(b.dm, ts)
	require.False(t, m.Streaming || m.Markdown)
	require.Equal(t, []string{"chat.startStream", "chat.appendStream", "chat.stopStream", "chat.update"}, methods(m))

	st = b.stream(t, core.FormatRichText)
	require.NoError(t, update(st, "Again "))
	b.finish(t, st, "Again.", core.FormatRichText)
	require.Equal(t, 1, strings.Count(b.logs.String(), "slack replies grow with chat.startStream"), "decided and logged once")
	require.Equal(t, "stream", b.adapter.StreamCapabilities().Mode)
}

func TestRefusedStreamsGrowByEditsDecidedOnce(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"not_allowed_token_type", "missing_scope", "method_not_supported_for_channel_type", "unknown_method"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			b := newGrowBundle(t)
			b.srv.RefuseStreams(code)
			for i, words := range [][]string{{"First ", "First reply", "First reply & more."}, {"Second ", "Second reply."}} {
				st := b.stream(t, core.FormatText)
				for _, w := range words[:len(words)-1] {
					require.NoError(t, update(st, w))
					if i == 0 {
						// Paced by the core for streaming, the first
						// reply keeps chat.update's pace itself.
						require.ErrorIs(t, update(st, w+"and "), core.ErrStreamBusy)
					}
					b.clock.Advance(editInterval)
				}
				b.finish(t, st, words[len(words)-1], core.FormatText)
			}
			require.Equal(t, 1, b.srv.Calls("chat.startStream"), "decided once: the second reply did not ask")
			require.Equal(t, []string{"First reply &amp; more.", "Second reply."}, b.srv.Visible(b.dm))
			first := b.srv.BotMessages(b.dm)[0]
			require.Equal(t, []string{"chat.postMessage", "chat.update", "chat.update"}, methods(first))
			require.Equal(t, "First ", first.History[0].Text, "posted with the first words")
			logs := b.logs.String()
			require.Equal(t, 1, strings.Count(logs, "slack replies grow by chat.update"), "logged once")
			require.Contains(t, logs, code, "the log says why")
			require.Equal(t, core.StreamCapabilities{Mode: "edits", MinInterval: 1200 * time.Millisecond}, b.adapter.StreamCapabilities())
		})
	}
}

func TestRestartedTextGoesOnByEdits(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t)
	st := b.stream(t, core.FormatRichText)
	require.NoError(t, update(st, "The answer is 4 "))
	ts := st.Grown()[0]

	// The model started over: what a stream shows can only grow, so the
	// stream is stopped and the message updated from now on.
	require.NoError(t, update(st, "Sorry, the answer is 5"))
	m, _ := b.srv.BotMessage(b.dm, ts)
	require.False(t, m.Streaming)
	require.Equal(t, "Sorry, the answer is 5", m.Text)
	require.ErrorIs(t, update(st, "Sorry, the answer is 5, as"), core.ErrStreamBusy, "edits keep chat.update's pace")
	b.clock.Advance(editInterval)
	require.NoError(t, update(st, "Sorry, the answer is 5, as 2 + 3"))

	final := "Sorry, the answer is **5**, as 2 + 3 = 5."
	res := b.finish(t, st, final, core.FormatRichText)
	require.Equal(t, []string{ts}, res.PlatformMessageIDs)
	require.Equal(t, b.sendParts(t, final, core.FormatRichText), b.srv.Visible(b.dm))
	m, _ = b.srv.BotMessage(b.dm, ts)
	require.Equal(t, []string{"chat.startStream", "chat.stopStream", "chat.update", "chat.update", "chat.update"}, methods(m))
}

func TestAbandonDeletesWhatGrew(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{StreamingAuto, StreamingEdits} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := newGrowBundle(t, func(a *Adapter) { a.Streaming = mode })
			st := b.stream(t, core.FormatRichText)
			require.NoError(t, update(st, "Thinking about it "))
			ts := st.Grown()[0]
			ctx, cancel := contextWithTimeout()
			defer cancel()
			require.NoError(t, st.Abandon(ctx))
			require.Empty(t, b.srv.Visible(b.dm), "nothing of the reply is left")
			m, _ := b.srv.BotMessage(b.dm, ts)
			require.True(t, m.Deleted)
			want := []string{"chat.postMessage", "chat.delete"}
			if mode == StreamingAuto {
				want = []string{"chat.startStream", "chat.stopStream", "chat.delete"}
			}
			require.Equal(t, want, methods(m))
			_, err := st.Finish(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Text: "late"})
			require.Error(t, err, "an abandoned reply is not finished")

			st = b.stream(t, core.FormatRichText)
			require.NoError(t, st.Abandon(ctx), "a reply that never grew")
			require.Len(t, b.srv.BotMessages(b.dm), 1, "made nothing")
		})
	}
}

// longText is a reply of several thousand characters: paragraphs, a code
// block, characters Slack escapes.
func longText(format core.TextFormat) string {
	var sb strings.Builder
	for i := range 60 {
		fmt.Fprintf(&sb, "Paragraph %d: fish & chips, **bold** words and `code` for <@U0GRACE001> until the line is long enough.\n\n", i)
		if i == 30 {
			sb.WriteString("```go\n" + strings.Repeat("fmt.Println(\"a line of code\")\n", 40) + "```\n\n")
		}
	}
	if format == core.FormatText {
		return strings.ReplaceAll(sb.String(), "**", "")
	}
	return sb.String()
}

func TestLongReplyGrowsIntoSendsParts(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{StreamingAuto, StreamingEdits} {
		for _, format := range []core.TextFormat{core.FormatText, core.FormatRichText} {
			t.Run(mode+"/"+string(format), func(t *testing.T) {
				t.Parallel()
				b := newGrowBundle(t, func(a *Adapter) { a.Streaming = mode })
				final := longText(format)
				st := b.stream(t, format)
				most := 0
				for n := 500; n < len(final); n += 500 {
					for final[n] != ' ' {
						n++
					}
					err := update(st, final[:n])
					require.NoError(t, err, "at %d", n)
					most = max(most, len(st.Grown()))
					b.clock.Advance(editInterval)
				}
				require.NoError(t, update(st, final))
				most = max(most, len(st.Grown()))
				parts := b.sendParts(t, final, format)
				require.Greater(t, len(parts), 2)
				require.Equal(t, len(parts), most, "the reply went on in new messages as it grew")
				res := b.finish(t, st, final, format)
				require.Equal(t, parts, b.srv.Visible(b.dm), "the finished parts are exactly Send's")
				require.Equal(t, st.Grown(), res.PlatformMessageIDs)
				ms := b.srv.BotMessages(b.dm)
				for _, m := range ms {
					require.False(t, m.Streaming || m.Deleted)
				}
				if mode == StreamingAuto {
					require.Equal(t, "chat.startStream", ms[0].History[0].Method, "it streamed until it outgrew one message")
				}
			})
		}
	}
}

func TestRateLimitStormSkipsPartialsButNotTheFinal(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{StreamingAuto, StreamingEdits} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := newGrowBundle(t, func(a *Adapter) { a.Streaming = mode })
			method := map[string]string{StreamingAuto: "chat.appendStream", StreamingEdits: "chat.update"}[mode]
			st := b.stream(t, core.FormatText)
			require.NoError(t, update(st, "Counting one "))

			b.srv.RateLimitCalls(method, 3, 3*time.Second)
			text := "Counting one "
			for i := range 3 {
				text += "two "
				require.ErrorIs(t, update(st, text), core.ErrStreamBusy, "a 429 on a partial is skipped")
				require.Equal(t, i+1, b.srv.RateLimited())
				for range 2 {
					b.clock.Advance(time.Second)
					require.ErrorIs(t, update(st, text+"three "), core.ErrStreamBusy)
				}
				require.Equal(t, i+1, b.srv.RateLimited(), "no partial is tried before Retry-After passes")
				b.clock.Advance(time.Second)
			}
			require.NoError(t, update(st, text+"three "), "the storm passed")

			// The final meets the rest of the storm and waits it out.
			b.srv.RateLimitCalls("chat.update", 2, time.Second)
			done := pacetest.Go(t, func(ctx context.Context) error {
				_, err := st.Finish(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Text: "Counting one two three four."})
				return err
			})
			for range 2 {
				b.clock.WaitForTimer(t, b.clock.Now().Add(time.Second), waitFor)
				b.clock.AdvanceToNext(t)
			}
			require.NoError(t, pacetest.Await(t, done))
			require.Equal(t, []string{"Counting one two three four."}, b.srv.Visible(b.dm), "the final arrived")
			require.Equal(t, 5, b.srv.RateLimited())
		})
	}
}

func TestPartialsTakeOnlyFreeSlots(t *testing.T) {
	t.Parallel()
	// send_rate's default: three posts at once to a channel, then one a
	// second. Partials take what is free and never wait.
	b := newGrowBundle(t, func(a *Adapter) { a.Streaming, a.SendRate = StreamingEdits, New().SendRate })
	st := b.stream(t, core.FormatText)
	for _, w := range []string{"one ", "one two ", "one two three "} {
		require.NoError(t, update(st, w))
	}
	require.ErrorIs(t, update(st, "one two three four "), core.ErrStreamBusy, "no slot free: skipped at once")
	require.Equal(t, 2, b.srv.Calls("chat.update"))

	done := pacetest.Go(t, func(ctx context.Context) error {
		_, err := st.Finish(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Text: "one two three four five."})
		return err
	})
	b.clock.WaitForTimer(t, b.clock.Now().Add(2*time.Second), waitFor)
	require.Equal(t, 2, b.srv.Calls("chat.update"), "the final waits for its slot")
	b.clock.AdvanceToNext(t)
	require.NoError(t, pacetest.Await(t, done))
	require.Equal(t, []string{"one two three four five."}, b.srv.Visible(b.dm))
}

func TestStreamingOff(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t, func(a *Adapter) { a.Streaming = StreamingOff })
	require.Equal(t, core.StreamCapabilities{}, b.adapter.StreamCapabilities())
	ctx, cancel := contextWithTimeout()
	defer cancel()
	_, err := b.adapter.Stream(ctx, core.OutboundMessage{ChannelThreadID: b.dm})
	require.ErrorContains(t, err, "adapters.slack.streaming")
	require.Empty(t, b.srv.BotMessages(b.dm))
}

func TestStreamingConfig(t *testing.T) {
	t.Parallel()
	require.Equal(t, StreamingAuto, New().Streaming, "the default")
	for _, v := range []string{"auto", "edits", "off"} {
		a := New()
		a.BotToken, a.AppToken, a.Streaming = "xoxb-1", "xapp-1", v
		require.NoError(t, a.Validate(), v)
	}
	a := New()
	a.BotToken, a.AppToken, a.Streaming = "xoxb-1", "xapp-1", "drafts"
	err := a.Validate()
	require.ErrorContains(t, err, "adapters.slack.streaming")
	require.ErrorContains(t, err, `"drafts"`)
}

func TestMessageEditor(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t, func(a *Adapter) { a.SendRate = pace.Limits{} })
	ctx, cancel := contextWithTimeout()
	defer cancel()
	res, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: b.dm, Text: "half an ans"})
	require.NoError(t, err)
	ts := res.PlatformMessageIDs[0]

	final := "The **whole** answer & more."
	require.NoError(t, b.adapter.EditMessage(ctx, ts, core.OutboundMessage{ChannelThreadID: b.dm, Text: final, Format: core.FormatRichText}))
	require.Equal(t, b.sendParts(t, final, core.FormatRichText), b.srv.Visible(b.dm), "rendered as Send renders it")

	// A text over the limit: the first part only, the caller sends the rest.
	long := longText(core.FormatRichText)
	require.NoError(t, b.adapter.EditMessage(ctx, ts, core.OutboundMessage{ChannelThreadID: b.dm, Text: long, Format: core.FormatRichText}))
	require.Equal(t, b.sendParts(t, long, core.FormatRichText)[:1], b.srv.Visible(b.dm))

	// A stream a crash left open is stopped, then edited.
	st := b.stream(t, core.FormatRichText)
	require.NoError(t, update(st, "Left streaming "))
	open := st.Grown()[0]
	require.NoError(t, b.adapter.EditMessage(ctx, open, core.OutboundMessage{ChannelUserID: ada.ID, Text: "Recovered."}))
	m, _ := b.srv.BotMessage(b.dm, open)
	require.Equal(t, "Recovered.", m.Text)
	require.False(t, m.Streaming)

	var pe *core.PermanentError
	require.ErrorAs(t, b.adapter.EditMessage(ctx, "1.000001", core.OutboundMessage{ChannelThreadID: b.dm, Text: "x"}), &pe, "a message that is not there")

	require.NoError(t, b.adapter.DeleteMessage(ctx, b.dm, ts))
	require.NoError(t, b.adapter.DeleteMessage(ctx, b.dm, ts), "already gone is not an error")
	require.NoError(t, b.adapter.DeleteMessage(ctx, ada.ID, open), "addressed by user id")
	require.Empty(t, b.srv.Visible(b.dm))
}

func TestReplyThatNeverGrewIsSent(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t)
	st := b.stream(t, core.FormatRichText)
	require.NoError(t, update(st, "Hi"), "one word being written: nothing to show yet")
	require.Empty(t, st.Grown())
	res := b.finish(t, st, "Hi!", core.FormatRichText)
	require.Equal(t, []string{"Hi!"}, b.srv.Visible(b.dm))
	m, _ := b.srv.BotMessage(b.dm, res.PlatformMessageIDs[0])
	require.Equal(t, []string{"chat.postMessage"}, methods(m), "sent as Send sends it")
}

func TestGrownMessageDeletedMeanwhileIsPostedAnew(t *testing.T) {
	t.Parallel()
	b := newGrowBundle(t, func(a *Adapter) { a.Streaming = StreamingEdits })
	st := b.stream(t, core.FormatText)
	require.NoError(t, update(st, "Hello there "))
	old := st.Grown()[0]
	ctx, cancel := contextWithTimeout()
	defer cancel()
	require.NoError(t, b.adapter.DeleteMessage(ctx, b.dm, old), "an admin deletes it")
	res := b.finish(t, st, "Hello there, Ada.", core.FormatText)
	require.Equal(t, []string{"Hello there, Ada."}, b.srv.Visible(b.dm))
	require.NotEqual(t, []string{old}, res.PlatformMessageIDs)
}
