package app

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

var lin = discordtest.User{ID: "310000000000000001", Username: "lin", GlobalName: "Lin Yu"}

func discordConfig(fake *discordtest.Server) string {
	return fmt.Sprintf(`adapters:
  web: {enabled: false}
  discord:
    token: "%s"
    api_url: "%s"
runs:
  debounce: 0s
`, fake.Token(), fake.URL())
}

func TestDiscordDMInReplyOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("Hi Lin!"))
	r := b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)

	fake.SendGuild("400000000000000001", "500000000000000001", lin, "hello server") // ignored
	channel, _ := fake.SendDM(lin, "hi bot")
	sent := fake.WaitShows(t, channel, waitFor, "Hi Lin!")
	require.NotEmpty(t, sent[0].Nonce, "every message carries a nonce")
	require.True(t, sent[0].EnforceNonce)
	require.Empty(t, fake.Sent("500000000000000001"), "a guild message is never answered")
	require.Len(t, b.model.Requests(), 1)

	r.stop(t)
	stored := b.storedMessagesOn(t, discord.Platform, channel)
	require.Len(t, stored, 2)
	require.Equal(t, "hi bot", stored[0].Content)
	require.Equal(t, sent[0].MessageID, stored[1].PlatformMessageID)
}

func TestDiscordLongReplyInThreeParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	var long strings.Builder
	for i := 0; long.Len() < 4500; i++ {
		fmt.Fprintf(&long, "Line %d of a long answer about the sea.\n", i)
	}
	text := strings.TrimSpace(long.String())
	b.model.Enqueue(llmtest.Text(text))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)
	channel, _ := fake.SendDM(lin, "tell me about the sea")
	// The parts were cut between lines; the line break at the cut is the
	// message boundary. (A reply that takes a while grows part by part:
	// wait until the whole of it reads.)
	read := func(ms []discordtest.SentMessage) string {
		shown := make([]string, len(ms))
		for i, m := range ms {
			shown[i] = markuptest.Discord(m.Content).Text
		}
		return strings.Join(shown, "\n")
	}
	sent := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool { return read(ms) == text }, waitFor)
	require.Len(t, sent, 3, "in order, nothing lost")
	for _, s := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(s.Content), 2000)
	}
}

func TestDiscordRateLimitHonouredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("after the limit"))
	// Sent whole: a reply that grows (under load) would post its first
	// words, and the limit would fall on them.
	b.start(t, b.writeConfig(t, discordConfig(fake)+"bot: {streaming: {enabled: false}}\n"))
	fake.WaitReady(t, waitFor)
	fake.RateLimitNext("messages", 500*time.Millisecond)
	start := time.Now()
	channel, _ := fake.SendDM(lin, "hi")
	sent := fake.WaitShows(t, channel, waitFor, "after the limit")
	require.GreaterOrEqual(t, sent[0].At.Sub(start), 500*time.Millisecond)
	require.Equal(t, 2, fake.Calls("messages"), "one limited, one delivered")
	require.Len(t, fake.Sent(channel), 1)
}

func TestDiscordGatewayDropDoesNotLoseTheReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	release := make(chan struct{})
	b.model.Enqueue(llmtest.Text("sent over REST").WithHold(release), llmtest.Text("second answer"))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)

	channel, _ := fake.SendDM(lin, "first")
	b.model.WaitRequests(t, 1, waitFor)
	// The gateway drops mid-turn; the reply goes out over REST anyway.
	fake.DisconnectGateway()
	close(release)
	fake.WaitShows(t, channel, waitFor, "sent over REST")

	// A DM sent while the gateway was down arrives after the RESUME.
	fake.SendDM(lin, "second")
	fake.WaitShows(t, channel, waitFor, "sent over REST", "second answer")
	require.Eventually(t, func() bool { return fake.Resumes() >= 1 }, waitFor, 10*time.Millisecond)
}
