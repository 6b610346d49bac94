package terminal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// startReply starts a streamed reply as the core does.
func (b *testBundle) startReply(t *testing.T, format core.TextFormat) core.Stream {
	t.Helper()
	st, err := b.adapter.Stream(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Format: format})
	require.NoError(t, err)
	return st
}

func (b *testBundle) finish(t *testing.T, st core.Stream, text string, format core.TextFormat) []string {
	t.Helper()
	res, err := st.Finish(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Text: text, Format: format})
	require.NoError(t, err)
	return res.PlatformMessageIDs
}

// A streamed reply prints as it arrives, on one line after the bot's
// name, each update adding only its new words; Finish adds the rest and
// the prompt. The terminal shows the reply once, as Send would have.
func TestStreamedReplyPrintsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	require.Equal(t, core.StreamCapabilities{Mode: "print"}, b.adapter.StreamCapabilities())
	st := b.startReply(t, core.FormatText)

	require.NoError(t, st.Update(context.Background(), "Hel"))
	b.out.waitFor(t, "> \nSubaru: Hel")
	require.NoError(t, st.Update(context.Background(), "Hello wor"))
	b.out.waitFor(t, "> \nSubaru: Hello wor")
	// Trailing white space waits for the words after it.
	require.NoError(t, st.Update(context.Background(), "Hello world, \n"))
	b.out.waitFor(t, "> \nSubaru: Hello world,")
	ids := b.finish(t, st, "Hello world, how are you?", core.FormatText)

	b.out.waitFor(t, "> \nSubaru: Hello world, how are you?\n> ")
	require.Len(t, ids, 1)
	require.Empty(t, st.Grown())

	require.Error(t, st.Update(context.Background(), "late"), "never after Finish")
	require.Error(t, st.Abandon(context.Background()))
	require.Equal(t, "> \nSubaru: Hello world, how are you?\n> ", b.out.String())
}

// The model's Markdown grows as plain text, no marker ever printed, and
// ends exactly as Send prints the finished reply.
func TestStreamedMarkdownPrintsPlain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	st := b.startReply(t, core.FormatRichText)

	for _, step := range []struct{ md, shown string }{
		{"# Plan", "Plan"},
		{"# Plan\n\n**Bold**", "Plan\n\nBold"},
		{"# Plan\n\n**Bold** step: run `go test`", "Plan\n\nBold step: run go test"},
		{"# Plan\n\n**Bold** step: run `go test` and read [the log](https://ci.example.com/1).\n\n- one",
			"Plan\n\nBold step: run go test and read the log (https://ci.example.com/1).\n\n• one"},
	} {
		require.NoError(t, st.Update(context.Background(), step.md))
		b.out.waitFor(t, "> \nSubaru: "+step.shown)
	}
	b.finish(t, st, "# Plan\n\n**Bold** step: run `go test` and read [the log](https://ci.example.com/1).\n\n- one\n- two",
		core.FormatRichText)

	// The same as TestRichTextPrintsWithoutMarkers shows for Send.
	b.out.waitFor(t, "> \nSubaru: Plan\n\nBold step: run go test and read the log (https://ci.example.com/1).\n\n• one\n• two\n> ")
}

// A reply rewritten as it grows (the text no longer extends what was
// printed) starts again on a new line; the finished reply reads whole on
// its last line.
func TestRewrittenReplyStartsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	st := b.startReply(t, core.FormatText)

	require.NoError(t, st.Update(context.Background(), "Hello wor"))
	require.NoError(t, st.Update(context.Background(), "Hi there"))
	b.finish(t, st, "Hi there.", core.FormatText)

	b.out.waitFor(t, "> \nSubaru: Hello wor\nSubaru: Hi there.\n> ")
}

// A reply taken back after it began to print ends with a quiet mark and
// the prompt; one that printed nothing leaves nothing.
func TestAbandonedReplyIsMarked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")

	quiet := b.startReply(t, core.FormatRichText)
	require.NoError(t, quiet.Update(context.Background(), " "))
	require.NoError(t, quiet.Abandon(context.Background()))
	require.Equal(t, "> ", b.out.String())

	st := b.startReply(t, core.FormatText)
	require.NoError(t, st.Update(context.Background(), "Let me check"))
	require.NoError(t, st.Abandon(context.Background()))
	b.out.waitFor(t, "> \nSubaru: Let me check (withdrawn)\n> ")
	_, err := st.Finish(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada", Text: "late"})
	require.Error(t, err, "never after Abandon")
}

// Something else printed while a reply grows (a reminder, a notice)
// starts on its own line; the reply then starts again below it, so it
// still reads whole.
func TestSendWhileAReplyGrows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	st := b.startReply(t, core.FormatText)

	require.NoError(t, st.Update(context.Background(), "Hello"))
	b.send(t, "Reminder: tea")
	b.out.waitFor(t, "> \nSubaru: Hello\nSubaru: Reminder: tea\n> ")
	require.NoError(t, st.Update(context.Background(), "Hello world"))
	b.finish(t, st, "Hello world!", core.FormatText)

	b.out.waitFor(t, "> \nSubaru: Hello\nSubaru: Reminder: tea\n> \nSubaru: Hello world!\n> ")
}

// A line the user enters while a reply grows ends the reply's line on
// the screen (the terminal echoes it, not Out): the reply starts again
// at the start of the next line.
func TestTypingWhileAReplyGrows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	st := b.startReply(t, core.FormatText)
	require.NoError(t, st.Update(context.Background(), "Hello"))
	b.out.waitFor(t, "> \nSubaru: Hello")

	b.typeLines(t, "wait")
	b.waitMessages(t, 1)
	require.NoError(t, st.Update(context.Background(), "Hello world"))
	b.finish(t, st, "Hello world.", core.FormatText)

	b.out.waitFor(t, "> \nSubaru: HelloSubaru: Hello world.\n> ")
}

// A reply that never grew is printed by Finish as Send prints it.
func TestFinishWithoutUpdatesPrintsAsSend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	st := b.startReply(t, core.FormatText)

	ids := b.finish(t, st, "All at once.", core.FormatText)

	require.Len(t, ids, 1)
	b.out.waitFor(t, "> \nSubaru: All at once.\n> ")
}

// adapters.terminal.streaming: auto and edits print as the reply arrives;
// off prints replies whole (no mode, Stream refuses, so the core sends
// them whole); anything else is a config error naming the key.
func TestStreamingConfig(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"auto", "edits"} {
		a := New()
		a.Streaming = mode
		require.NoError(t, a.Validate(), mode)
		require.Equal(t, core.StreamCapabilities{Mode: "print"}, a.StreamCapabilities(), mode)
	}
	require.Equal(t, "auto", New().Streaming, "the default")

	a := New()
	a.Streaming = "drafts"
	require.EqualError(t, a.Validate(), `terminal adapter: adapters.terminal.streaming is "drafts"; it must be auto, edits or off`)

	a.Streaming = "off"
	require.NoError(t, a.Validate())
	require.Equal(t, core.StreamCapabilities{}, a.StreamCapabilities())
	_, err := a.Stream(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada"})
	require.ErrorContains(t, err, "adapters.terminal.streaming")
}

// Nothing prints once the adapter stopped.
func TestStreamAfterStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.out.waitFor(t, "> ")
	st := b.startReply(t, core.FormatText)
	require.NoError(t, b.adapter.Stop(context.Background()))

	require.EqualError(t, st.Update(context.Background(), "late"), "printing to terminal: terminal adapter is stopped")
	_, err := b.adapter.Stream(context.Background(), core.OutboundMessage{ChannelThreadID: "console:ada"})
	require.EqualError(t, err, "printing to terminal: terminal adapter is stopped")
	require.Equal(t, "> ", b.out.String())
}
