package discord

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

// startStream starts a reply in channel ch.
func startStream(t *testing.T, b *testBundle, ch, key string, format core.TextFormat) core.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	s, err := b.adapter.Stream(ctx, core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: key, Format: format})
	require.NoError(t, err)
	return s
}

func update(s core.Stream, text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return s.Update(ctx, text)
}

func finish(s core.Stream, ch, key, text string, format core.TextFormat) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return s.Finish(ctx, core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: key, Text: text, Format: format})
}

// editContents lists the contents of edits.
func editContents(edits []discordtest.Edit) []string {
	out := make([]string, len(edits))
	for i, e := range edits {
		out[i] = e.Content
	}
	return out
}

func TestStreamedReplyGrowsOneMessageByEdits(t *testing.T) {
	t.Parallel()
	b, clock := newPacedBundle(t, 5)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-40", core.FormatText)
	require.Empty(t, s.Grown(), "nothing shows before the first update")
	require.Empty(t, b.srv.Sent(ch))

	require.NoError(t, update(s, "Hello"))
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1, "the first words create the message")
	require.Equal(t, "Hello", sent[0].Content)
	require.Equal(t, "run-40.0", sent[0].Nonce, "the nonce of the reply's first part in Send")
	require.True(t, sent[0].EnforceNonce)
	require.Equal(t, ids(sent), s.Grown())

	clock.Advance(time.Second)
	require.NoError(t, update(s, "Hello, wor"))
	clock.Advance(time.Second)
	require.NoError(t, update(s, "Hello, world! How"))
	require.NoError(t, update(s, "Hello, world! How"), "the same text again changes nothing")
	clock.Advance(time.Second)
	res, err := finish(s, ch, "run-40", "Hello, world! How are you?", core.FormatText)
	require.NoError(t, err)

	sent = b.srv.Sent(ch)
	require.Len(t, sent, 1, "one message")
	require.Equal(t, "Hello, world! How are you?", sent[0].Content)
	require.Equal(t, []string{"Hello, wor", "Hello, world! How", "Hello, world! How are you?"}, editContents(sent[0].Edits))
	require.Equal(t, []time.Time{t0.Add(time.Second), t0.Add(2 * time.Second), t0.Add(3 * time.Second)},
		[]time.Time{sent[0].Edits[0].At, sent[0].Edits[1].At, sent[0].Edits[2].At})
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, ids(sent), s.Grown())
	require.Zero(t, b.srv.RateLimited())

	require.ErrorContains(t, update(s, "more"), "already ended")
	_, err = finish(s, ch, "run-40", "again", core.FormatText)
	require.ErrorContains(t, err, "already ended")
}

func TestStreamKeepsDiscordsEditLimit(t *testing.T) {
	t.Parallel()
	b, clock := newPacedBundle(t, 5)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-41", core.FormatText)
	// Updates four times a second, faster than the core ever asks: the
	// adapter itself keeps Discord's 5 edits per 5 s.
	var text strings.Builder
	var busy, shown int
	for i := range 60 {
		text.WriteString("w" + strconv.Itoa(i) + " ")
		switch err := update(s, text.String()); {
		case err == nil:
			shown++
		default:
			require.ErrorIs(t, err, core.ErrStreamBusy)
			busy++
		}
		clock.Advance(250 * time.Millisecond)
	}
	clock.Advance(5 * time.Second)
	_, err := finish(s, ch, "run-41", text.String()+"end", core.FormatText)
	require.NoError(t, err)

	require.Zero(t, b.srv.RateLimited(), "no edit found the limit by a 429")
	require.Positive(t, busy, "updates past the limit were skipped")
	edits := b.srv.Edits(ch)
	require.GreaterOrEqual(t, len(edits), 15, "about one edit a second over 15 s")
	for i, e := range edits {
		n := 0
		for _, f := range edits[:i+1] {
			if f.At.After(e.At.Add(-5 * time.Second)) {
				n++
			}
		}
		require.LessOrEqual(t, n, 5, "edit %d at %v", i+1, e.At.Sub(t0))
	}
	visible := b.srv.Visible(ch)
	require.Len(t, visible, 1)
	require.Equal(t, text.String()+"end", visible[0].Content)
}

func TestAbandonDeletesTheGrownMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-42", core.FormatText)
	require.NoError(t, update(s, "Let me think"))
	grown := s.Grown()
	require.Len(t, grown, 1)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, s.Abandon(ctx))
	require.Empty(t, b.srv.Visible(ch), "the user sees nothing left")
	m, ok := b.srv.Message(grown[0])
	require.True(t, ok)
	require.True(t, m.Deleted)
	require.ErrorContains(t, s.Abandon(ctx), "already ended")

	// Abandoning a reply that never grew deletes nothing.
	s = startStream(t, b, ch, "run-43", core.FormatText)
	require.NoError(t, s.Abandon(ctx))
	require.Equal(t, 1, b.srv.Calls("messages.delete"))
}

func TestLongStreamedReplyEndsAsSendsParts(t *testing.T) {
	t.Parallel()
	for _, format := range []core.TextFormat{core.FormatText, core.FormatRichText} {
		t.Run(string(format)+"_format", func(t *testing.T) {
			t.Parallel()
			b, clock := newPacedBundle(t, 5)
			ch := b.greet(t, ada)
			other := b.greet(t, grace)
			var text strings.Builder
			for i := 0; utf8.RuneCountInString(text.String()) < 4600; i++ {
				text.WriteString("Sentence **" + strconv.Itoa(i) + "** of the answer, with some wörds.")
				if i%9 == 8 {
					text.WriteString("\n\n")
				} else {
					text.WriteString(" ")
				}
			}
			full := text.String()
			s := startStream(t, b, ch, "run-44", format)
			parts := 0 // the most parts an update showed
			for n := 150; n < len(full); n += 150 {
				partial := strings.ToValidUTF8(full[:n], "")
				if err := update(s, partial); err == nil {
					// What the user sees is Send's parts of the text so far.
					require.Equal(t, bodyContents(partial, format), contents(b.srv.Visible(ch)), "after %d bytes", n)
					parts = max(parts, len(b.srv.Visible(ch)))
				} else {
					require.ErrorIs(t, err, core.ErrStreamBusy)
				}
				clock.Advance(time.Second)
			}
			require.Equal(t, 3, parts, "the reply grew past two limits")
			clock.Advance(5 * time.Second)
			res, err := finish(s, ch, "run-44", full, format)
			require.NoError(t, err)

			_, err = b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: other, Text: full, Format: format, IdempotencyKey: "whole"})
			require.NoError(t, err)
			want := contents(b.srv.Visible(other))
			require.Len(t, want, 3)
			got := b.srv.Visible(ch)
			require.Equal(t, want, contents(got), "the finished parts are Send's")
			require.Equal(t, ids(got), res.PlatformMessageIDs)
			require.Equal(t, ids(got), s.Grown(), "every part grew")
			for i, m := range got {
				require.Equal(t, "run-44."+strconv.Itoa(i), m.Nonce)
			}
			require.Zero(t, b.srv.RateLimited())
		})
	}
}

// bodyContents is what Send sends for text.
func bodyContents(text string, format core.TextFormat) []string {
	var out []string
	for _, b := range textBodies(core.OutboundMessage{Text: text, Format: format}) {
		out = append(out, b.Content)
	}
	return out
}

func TestRateLimitStormSkipsPartialsNotTheFinal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-45", core.FormatText)
	require.NoError(t, update(s, "One"))

	b.srv.RateLimitNext("messages.edit", 2*time.Second)
	err := update(s, "One, two")
	require.ErrorContains(t, err, "rate limited")
	require.NotErrorIs(t, err, core.ErrStreamBusy)
	require.ErrorIs(t, update(s, "One, two, three"), core.ErrStreamBusy, "skipped until retry_after, without asking Discord")
	require.Equal(t, 1, b.srv.Calls("messages.edit"))
	eventually(t, func() bool { return update(s, "One, two, three, four") == nil }, "partials go again after retry_after")

	b.srv.RateLimitNext("messages.edit", 100*time.Millisecond)
	b.srv.RateLimitNext("messages.edit", 100*time.Millisecond)
	res, err := finish(s, ch, "run-45", "One, two, three, four, five.", core.FormatText)
	require.NoError(t, err, "the final is retried through the storm")

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Equal(t, "One, two, three, four, five.", sent[0].Content)
	require.Equal(t, []string{"One, two, three, four", "One, two, three, four, five."}, editContents(sent[0].Edits))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, 3, b.srv.RateLimited())
	require.Equal(t, 5, b.srv.Calls("messages.edit"), "1 limited partial, 1 partial, the final twice limited and once through")
}

func TestStreamingOff(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.Streaming = "off" })
	ch := b.greet(t, ada)
	require.Equal(t, core.StreamCapabilities{Mode: "", MinInterval: time.Second}, b.adapter.StreamCapabilities())
	_, err := b.adapter.Stream(context.Background(), core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-46"})
	require.ErrorContains(t, err, "adapters.discord.streaming")
	_, err = b.send(ch, "run-46", "sent whole")
	require.NoError(t, err)
	require.Equal(t, []string{"sent whole"}, contents(b.srv.Sent(ch)))

	for mode, want := range map[string]string{"auto": "edits", "edits": "edits"} {
		a := New()
		a.Streaming = mode
		require.Equal(t, want, a.StreamCapabilities().Mode, mode)
	}
	require.Equal(t, "auto", New().Streaming, "the default")
}

func TestStreamingConfig(t *testing.T) {
	t.Parallel()
	a, err := decodeConfig(t, "streaming: edits\n")
	require.NoError(t, err)
	require.Equal(t, "edits", a.Streaming)
	require.NoError(t, a.Validate())

	a, err = decodeConfig(t, "streaming: drafts\n")
	require.NoError(t, err)
	require.EqualError(t, a.Validate(), `discord adapter: adapters.discord.streaming must be auto, edits or off, got "drafts"`)
}

func TestFinishOfAReplyThatNeverGrewIsSend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-47", core.FormatText)
	long := strings.Repeat("a", 1500) + "\n\n" + strings.Repeat("b", 1500)
	res, err := finish(s, ch, "run-47", long, core.FormatText)
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Equal(t, bodyContents(long, core.FormatText), contents(sent))
	require.Equal(t, []string{"run-47.0", "run-47.1"}, []string{sent[0].Nonce, sent[1].Nonce})
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Zero(t, b.srv.Calls("messages.edit"))
	require.Empty(t, s.Grown())
}

func TestStreamCreateKeepsItsNonce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-48", core.FormatText)
	// Discord creates the message, and its answer is lost.
	b.srv.LoseNextAnswer("messages")
	require.Error(t, update(s, "Hel"))
	require.Empty(t, s.Grown())
	require.NoError(t, update(s, "Hello"))
	require.Len(t, b.srv.Sent(ch), 1, "the create again returned the message it had made")
	require.NoError(t, update(s, "Hello, world"))
	res, err := finish(s, ch, "run-48", "Hello, world!", core.FormatText)
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Equal(t, "Hello, world!", sent[0].Content)
	require.Equal(t, "run-48.0", sent[0].Nonce)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)

	// A resend of the finished reply (a crash before it was recorded)
	// finds the same message.
	again, err := b.send(ch, "run-48", "Hello, world!")
	require.NoError(t, err)
	require.Equal(t, res.PlatformMessageIDs, again.PlatformMessageIDs)
	require.Len(t, b.srv.Sent(ch), 1)
}

func TestFinishAfterALostCreateShowsTheFinishedText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-49", core.FormatText)
	b.srv.LoseNextAnswer("messages")
	require.Error(t, update(s, "The first wo"))
	res, err := finish(s, ch, "run-49", "The first words, and the rest.", core.FormatText)
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1, "the nonce found the message the lost create made")
	require.Equal(t, "The first words, and the rest.", sent[0].Content, "and it shows the finished text")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestFinishReplacesAMessageDiscordRefusesToEdit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-50", core.FormatRichText)
	require.NoError(t, update(s, "Some **bold"))
	first := s.Grown()[0]
	b.srv.RefuseNextMarkup()
	res, err := finish(s, ch, "run-50", "Some **bold** text.", core.FormatRichText)
	require.NoError(t, err)
	visible := b.srv.Visible(ch)
	require.Len(t, visible, 1)
	require.NotEqual(t, first, visible[0].MessageID, "sent anew")
	require.Equal(t, bodyContents("Some **bold** text.", core.FormatRichText), contents(visible))
	require.Equal(t, ids(visible), res.PlatformMessageIDs)
	m, _ := b.srv.Message(first)
	require.True(t, m.Deleted)
}

// decodeConfig decodes adapters.discord from src, with a token.
func decodeConfig(t *testing.T, src string) (*Adapter, error) {
	t.Helper()
	var node yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("token: MTIz.abc.def\n"+src), &node))
	a := New()
	return a, config.Section{Node: node.Content[0], Path: "adapters.discord"}.Decode(a)
}

func TestSendAfterAnAbandonedReplyShowsItsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-51", core.FormatText)
	require.NoError(t, update(s, "Let me"))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, s.Abandon(ctx))

	// The same key again: its nonce names the deleted message.
	res, err := b.send(ch, "run-51", "Sorry, something went wrong.")
	require.NoError(t, err)
	visible := b.srv.Visible(ch)
	require.Equal(t, []string{"Sorry, something went wrong."}, contents(visible))
	require.Equal(t, ids(visible), res.PlatformMessageIDs)
	require.Equal(t, 1, b.srv.Calls("messages.edit"), "the edit found the message gone")
}
