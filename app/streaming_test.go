package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// hidden is what a user must never see of a streamed answer: its
// reasoning, its control tokens, raw Markdown markers.
var hidden = []string{"musing", "think", "<", ">", "SILENCE", "WANT_MORE", "**"}

func requireNothingHidden(t *testing.T, shown string) {
	t.Helper()
	for _, h := range hidden {
		require.NotContains(t, shown, h, "a partial showed what must stay hidden")
	}
}

// Through parley run: a reply grows as Telegram drafts while the model
// writes it (its first words shown while the model is still writing),
// never showing reasoning, a control token or a raw marker, and ends as
// one message with the finished text, stored as the reply.
func TestTelegramReplyGrowsAsDrafts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	gate := make(chan struct{})
	answer := "<think>a private musing</think>Here is **the answer**, grown word by word, and it ends well."
	b.model.Enqueue(llmtest.Text(answer).WithWordDeltas().WithDeltaGate(gate))
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")))

	fake.SendPrivate(ada, "tell me")
	for range 4 {
		gate <- struct{}{}
	}
	first := fake.WaitDrafts(t, ada.ID, 1, waitFor)
	require.Empty(t, fake.Sent(ada.ID), "the model is still writing: nothing sent yet")
	const final = "Here is the answer, grown word by word, and it ends well."
	require.True(t, strings.HasPrefix(final, first[0].Plain), "a draft is the start of the reply: %q", first[0].Plain)
	require.NotEmpty(t, first[0].Plain)
	close(gate)

	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, final, sent[0].Plain)
	require.Equal(t, "MarkdownV2", sent[0].ParseMode, "the finished reply keeps its bold")
	for _, d := range fake.Drafts(ada.ID) {
		requireNothingHidden(t, d.Plain)
		require.True(t, strings.HasPrefix(final, d.Plain), "draft %q", d.Plain)
	}
	r.stop(t)
	stored := b.storedMessagesOn(t, telegram.Platform, "4242")
	require.Len(t, stored, 2)
	require.Equal(t, "Here is **the answer**, grown word by word, and it ends well.", stored[1].Content)
	require.Len(t, fake.Sent(ada.ID), 1, "one message: the drafts are not messages")
}

// A silence shows nothing at all: no draft, no message.
func TestTelegramStreamedSilenceShowsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("<SILENCE>").WithDeltas(5))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendPrivate(ada, "good night")
	b.waitStored(t, telegram.Platform, "4242", 2)
	require.Empty(t, fake.Drafts(ada.ID))
	require.Empty(t, fake.Sent(ada.ID))
}

// A stream that breaks mid-answer is asked for again; the user gets the
// whole answer once, never the half as if it were whole.
func TestTelegramBrokenStreamIsAnsweredWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	answer := "A whole answer that the first stream broke in the middle of."
	b.model.Enqueue(llmtest.Text(answer).WithWordDeltas().WithStreamCut(4), llmtest.Text(answer).WithWordDeltas())
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendPrivate(ada, "go on")
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, answer, sent[0].Plain)
	require.Len(t, b.model.Requests(), 2, "asked again after the break")
	for _, d := range fake.Drafts(ada.ID) {
		require.True(t, strings.HasPrefix(answer, d.Plain), "draft %q", d.Plain)
	}
}

// Streaming off (bot.streaming.enabled: false, or the adapter's own
// streaming: off) sends the whole reply with no draft.
func TestStreamingOffSendsWholeReplies(t *testing.T) {
	t.Parallel()
	for name, extra := range map[string]string{
		"bot":     "bot: {streaming: {enabled: false}}",
		"adapter": "    streaming: off",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			fake := telegramtest.NewServer(t)
			b.model.Enqueue(llmtest.Text("Sent whole, as before.").WithWordDeltas())
			cfg := telegramConfig(fake, "")
			if name == "adapter" {
				cfg = telegramConfig(fake, extra)
			} else {
				cfg += extra + "\n"
			}
			b.start(t, b.writeConfig(t, cfg))
			fake.SendPrivate(ada, "hi")
			sent := fake.WaitSent(t, ada.ID, 1, waitFor)
			require.Equal(t, "Sent whole, as before.", sent[0].Plain)
			require.Empty(t, fake.Drafts(ada.ID))
			require.False(t, b.model.Requests()[0].Chat.Stream, "the model is not asked to stream")
		})
	}
}

// A 429 storm on drafts: the partials are skipped, the finished reply
// still arrives, once.
func TestTelegramDraftStormDropsPartialsNotTheReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	fake.FloodWait("sendMessageDraft", time.Hour)
	gate := make(chan struct{})
	answer := "Every word of this answer reaches the user in the end."
	b.model.Enqueue(llmtest.Text(answer).WithWordDeltas().WithDeltaGate(gate))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendPrivate(ada, "storm")
	for range 3 {
		gate <- struct{}{}
	}
	require.Eventually(t, func() bool { return fake.Calls("sendMessageDraft") > 0 }, waitFor, 5*time.Millisecond,
		"a draft was tried")
	close(gate)
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, answer, sent[0].Plain)
	require.Empty(t, fake.Drafts(ada.ID), "every draft was refused")
	require.Len(t, fake.Sent(ada.ID), 1)
}

// On Discord a reply grows as
// one message edited while the model writes it, and ends with the finished text, nothing hidden ever shown.
func TestDiscordReplyGrowsByEdits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	gate := make(chan struct{})
	answer := "<think>a musing</think>Here is **the answer**, grown by edits, and finished."
	b.model.Enqueue(llmtest.Text(answer).WithWordDeltas().WithDeltaGate(gate))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)
	channel, _ := fake.SendDM(lin, "tell me")
	for range 4 {
		gate <- struct{}{}
	}
	grown := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool { return len(ms) == 1 }, waitFor)
	require.True(t, strings.HasPrefix("Here is the answer, grown by edits, and finished.", markuptest.Discord(grown[0].Content).Text),
		"the first words: %q", grown[0].Content)
	close(gate)
	done := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool {
		return len(ms) == 1 && markuptest.Discord(ms[0].Content).Text == "Here is the answer, grown by edits, and finished."
	}, waitFor)
	msg, ok := fake.Message(done[0].MessageID)
	require.True(t, ok)
	require.NotEmpty(t, msg.Edits, "grown by edits")
	for _, e := range fake.Edits(channel) {
		requireNothingHidden(t, markuptest.Discord(e.Content).Text)
	}
}

// On Slack a reply grows with
// the stream methods and ends as one message with the finished text.
func TestSlackReplyGrowsWithTheStreamMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := make(chan struct{})
	answer := "Here is an answer that Slack shows growing, word after word."
	b.model.Enqueue(llmtest.Text(answer).WithWordDeltas().WithDeltaGate(gate))
	fake := slacktest.NewServer(t)
	b.start(t, b.writeConfig(t, slackConfig(fake, "socket")))
	fake.WaitConnections(t, 1, waitFor)
	channel, _ := fake.SendDM(mei, "tell me")
	for range 5 {
		gate <- struct{}{}
	}
	fake.WaitBotMessages(t, channel, waitFor, func(ms []slacktest.BotMessage) bool { return len(ms) == 1 && ms[0].Streamed })
	close(gate)
	ms := fake.WaitBotMessages(t, channel, waitFor, func(ms []slacktest.BotMessage) bool {
		return len(ms) == 1 && !ms[0].Streaming && slacktest.Unescape(ms[0].Text) == answer
	})
	require.Equal(t, []string{answer}, unescapeAll(fake.Visible(channel)))
	require.Greater(t, len(ms[0].History), 1, "it grew")
}

func unescapeAll(texts []string) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = slacktest.Unescape(t)
	}
	return out
}

// longAnswer is a plain answer of n sentences, longer than a platform's
// message limit when n is large.
func longAnswer(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "Sentence %d of a long streamed answer goes on.", i+1)
	}
	return b.String()
}

// Through parley run: a streamed answer longer than Telegram's 4,096
// characters grows as a draft for its first part, then one for the next
// (its own draft id), and ends as the messages Send would have split it
// into, each draft the start of its part.
func TestTelegramLongStreamedReplyGrowsPartByPart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.llmTimeout = "20s"
	answer := longAnswer(130) // about 6,200 characters
	// Over 6 s: a chat takes a message a second after a short burst,
	// drafts included, so the second part gets its drafts too.
	b.model.Enqueue(llmtest.Text(answer).WithDeltas(120).WithStreamDelay(6 * time.Second))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))

	fake.SendPrivate(ada, "tell me a lot")
	want := markup.SplitTelegram(answer, 4096)
	require.Len(t, want, 2)
	sent := fake.WaitSent(t, ada.ID, len(want), waitFor)
	var parts []string
	for i, m := range sent {
		r, err := markuptest.TelegramV2(want[i].Text)
		require.NoError(t, err)
		require.Equal(t, r.Text, m.Plain, "part %d as Send splits it", i+1)
		parts = append(parts, m.Plain)
	}
	ids := map[int64]string{}
	for _, d := range fake.Drafts(ada.ID) {
		require.LessOrEqual(t, len(d.Plain), 4096)
		ids[d.DraftID] = d.Plain
		require.True(t, strings.HasPrefix(parts[0], d.Plain) || strings.HasPrefix(parts[1], d.Plain),
			"draft %d shows the start of a part: %q", d.DraftID, d.Plain)
	}
	require.Len(t, ids, 2, "one draft id per part")
}

// On Discord a streamed answer longer than 2,000 characters grows its
// first message, then a second, and ends as the parts Send makes.
func TestDiscordLongStreamedReplyGrowsPartByPart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	b.llmTimeout = "20s"
	answer := longAnswer(80) // about 3,700 characters
	b.model.Enqueue(llmtest.Text(answer).WithDeltas(80).WithStreamDelay(4 * time.Second))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)
	channel, _ := fake.SendDM(lin, "tell me a lot")
	want := markup.SplitDiscord(answer, 2000)
	require.Len(t, want, 2)
	done := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool {
		return len(ms) == 2 && ms[0].Content == want[0].Text && ms[1].Content == want[1].Text
	}, waitFor)
	first, ok := fake.Message(done[0].MessageID)
	require.True(t, ok)
	require.NotEmpty(t, first.Edits, "the first part grew by edits")
	for _, m := range fake.AllSent() {
		require.False(t, m.Deleted, "nothing was taken back: %q", m.Content)
	}
}

// A 429 storm on Discord's edits, through parley run: the partials it
// catches are skipped (none is queued behind retry_after), and the
// finished reply still ends the message, once.
func TestDiscordEditStormDropsPartialsNotTheReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmTimeout = "20s"
	fake := discordtest.NewServer(t)
	answer := longAnswer(12)
	b.model.Enqueue(llmtest.Text(answer).WithDeltas(40).WithStreamDelay(4 * time.Second))
	for range 6 {
		fake.RateLimitNext("messages.edit", 700*time.Millisecond)
	}
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)
	channel, _ := fake.SendDM(lin, "storm")
	done := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool {
		return len(ms) == 1 && ms[0].Content == answer
	}, waitFor)
	msg, _ := fake.Message(done[0].MessageID)
	require.Equal(t, answer, msg.Edits[len(msg.Edits)-1].Content, "the last edit is the finished reply")
	require.Positive(t, fake.RateLimited(), "the storm hit")
	for _, e := range msg.Edits {
		require.True(t, strings.HasPrefix(answer, e.Content), "edit %q", e.Content)
	}
	require.Len(t, fake.Sent(channel), 1, "one message")
}

// A 429 storm on Slack's appendStream, through parley run: partials are
// skipped while it lasts, the stream still ends with the whole answer.
func TestSlackStreamStormDropsPartialsNotTheReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmTimeout = "20s"
	fake := slacktest.NewServer(t)
	answer := longAnswer(12)
	b.model.Enqueue(llmtest.Text(answer).WithDeltas(40).WithStreamDelay(3 * time.Second))
	fake.RateLimitCalls("chat.appendStream", 3, time.Second)
	b.start(t, b.writeConfig(t, slackConfig(fake, "socket")))
	fake.WaitConnections(t, 1, waitFor)
	channel, _ := fake.SendDM(mei, "storm")
	fake.WaitBotMessages(t, channel, waitFor, func(ms []slacktest.BotMessage) bool {
		return len(ms) == 1 && !ms[0].Streaming && slacktest.Unescape(ms[0].Text) == answer
	})
	require.Positive(t, fake.RateLimited(), "the storm hit")
	require.Equal(t, []string{answer}, unescapeAll(fake.Visible(channel)))
}
