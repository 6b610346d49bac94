package app

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run on Discord with bot.ack_reaction: "👀": the user's
// message wears the bot's 👀 while the model works on the answer, and
// the reply arrives. Where the adapter can take a reaction back
// (core.Unreactor), it is gone once the reply is out.
func TestDiscordAckReactionWhileTheModelWorks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	gate := make(chan struct{})
	b.model.Enqueue(llmtest.Text("Let me think… yes.").WithHold(gate))
	b.start(t, b.writeConfig(t, discordConfig(fake)+"bot:\n  ack_reaction: \"👀\"\n"))
	fake.WaitReady(t, waitFor)

	channel, msg := fake.SendDM(lin, "is it going to rain?")
	b.model.WaitRequests(t, 1, waitFor)
	waitBotReactions(t, fake, msg, []string{"👀"})
	require.Empty(t, fake.Sent(channel), "no answer yet: the model is still working")

	close(gate)
	fake.WaitShows(t, channel, waitFor, "Let me think… yes.")
	if _, ok := any(discord.New()).(core.Unreactor); ok {
		waitBotReactions(t, fake, msg, nil)
	}
}

// Without bot.ack_reaction the bot reacts to nothing.
func TestDiscordNoAckReactionByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	gate := make(chan struct{})
	b.model.Enqueue(llmtest.Text("No rain today.").WithHold(gate))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)

	channel, msg := fake.SendDM(lin, "is it going to rain?")
	b.model.WaitRequests(t, 1, waitFor)
	close(gate)
	fake.WaitShows(t, channel, waitFor, "No rain today.")
	require.Empty(t, fake.BotReactions(msg))
}

// waitBotReactions waits until the bot's reactions on the user's message
// msg are exactly want.
func waitBotReactions(t *testing.T, fake *discordtest.Server, msg string, want []string) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Equal(fake.BotReactions(msg), want) },
		waitFor, 5e6, "the bot's reactions on the message never became %q", want)
}
