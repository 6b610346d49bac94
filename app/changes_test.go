package app

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// userTexts are the user messages a model request holds, in order.
func userTexts(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

// Through parley run on Discord: a user edits a message the bot answered
// and deletes another; the next turn reads the edited text and not the
// deleted one, and the store keeps the deleted message's row without
// its text. A message queued behind a running turn and edited before its
// own turn starts is answered as edited.
func TestDiscordEditsAndDeletesReachTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	hold := make(chan struct{})
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		switch r.LastUserMessage() {
		case "my cat is Tom":
			return llmtest.Text("Nice cat.")
		case "my pin is 1234":
			return llmtest.Text("Noted.")
		case "one moment":
			return llmtest.Text("Sure.").WithHold(hold)
		}
		return llmtest.Text("Answered.")
	})
	r := b.start(t, b.writeConfig(t, discordConfig(fake)))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(r.stderr.String())
		}
	})
	fake.WaitReady(t, waitFor)

	channel, cat := fake.SendDM(lin, "my cat is Tom")
	fake.WaitSent(t, channel, 1, waitFor)
	_, pin := fake.SendDM(lin, "my pin is 1234")
	fake.WaitSent(t, channel, 2, waitFor)
	fake.EditDM(lin, cat, "my cat is Tim")
	fake.DeleteDM(lin, pin)

	// A turn held at the model; the next message waits behind it and is
	// edited before its turn starts.
	fake.SendDM(lin, "one moment")
	require.Eventually(t, func() bool { return slices.Contains(lastUsers(b), "one moment") }, waitFor, 5e6)
	_, typo := fake.SendDM(lin, "what do yuo know?")
	fake.EditDM(lin, typo, "what do you know?")
	waitStored(t, b, channel, "what do you know?")
	close(hold)
	fake.WaitSent(t, channel, 4, waitFor)

	requireEditsReachedTheModel(t, b, discord.Platform, channel, pin)
}

// requireEditsReachedTheModel checks the last turn of an edit test: it
// answers "what do you know?" (edited from a typo while it waited), reads
// "my cat is Tim" (edited from Tom) and not "my pin is 1234" (deleted),
// whose row, message pin of thread on p, is kept without its text.
func requireEditsReachedTheModel(t *testing.T, b *testBundle, p core.Platform, thread, pin string) {
	t.Helper()
	reqs := b.model.Requests()
	last := userTexts(reqs[len(reqs)-1])
	require.Equal(t, "what do you know?", last[len(last)-1], "the queued turn answers the edited text")
	require.Contains(t, last, "my cat is Tim")
	require.NotContains(t, last, "my cat is Tom")
	require.NotContains(t, last, "my pin is 1234", "a deleted message leaves the window")

	var deleted *core.Message
	for _, m := range b.storedMessagesOn(t, p, thread) {
		if m.PlatformMessageID == pin {
			deleted = &m
		}
	}
	require.NotNil(t, deleted, "the deleted message keeps its row")
	require.Empty(t, deleted.Content, "without its text")
	require.True(t, deleted.Deleted())
}

// lastUsers are the last user messages of the model's requests so far.
func lastUsers(b *testBundle) []string {
	var out []string
	for _, r := range b.model.Requests() {
		out = append(out, r.LastUserMessage())
	}
	return out
}

// waitStored waits until the conversation on channel stores a user
// message with text.
func waitStored(t *testing.T, b *testBundle, channel, text string) {
	t.Helper()
	st := b.openStoreFile(t)
	require.Eventually(t, func() bool {
		conv, err := st.ConversationByThread(context.Background(), discord.Platform, channel)
		if err != nil {
			return false
		}
		msgs, err := st.RecentMessages(context.Background(), conv.ID, 50)
		if err != nil {
			return false
		}
		for _, m := range msgs {
			if m.Role == core.RoleUser && m.Content == text {
				return true
			}
		}
		return false
	}, waitFor, 5e6, "no stored message %q", text)
}

// Through parley run on Telegram: a user's edit (edited_message) replaces
// the stored text, and the next turn reads it.
func TestTelegramEditReachesTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("Answered.") })
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	first := fake.SendPrivate(ada, "my cat is Tom")
	fake.WaitSent(t, ada.ID, 1, waitFor)
	fake.EditPrivate(ada, first.Message.ID, "my cat is Tim")
	fake.SendPrivate(ada, "what is my cat called?")
	fake.WaitSent(t, ada.ID, 2, waitFor)
	reqs := b.model.Requests()
	users := userTexts(reqs[len(reqs)-1])
	require.Equal(t, []string{"my cat is Tim", "what is my cat called?"}, users)
	stored := b.storedMessagesOn(t, telegram.Platform, "4242")
	require.Equal(t, "my cat is Tim", stored[0].Content)
	require.NotEmpty(t, stored[0].Metadata[core.EditedAtKey])
}

// Through parley run on Discord: a user's reaction to the bot's reply is
// kept with it and starts no turn; the next turn reads it as the emoji
// with a short quote of the reply, before the user's next message.
func TestDiscordReactionReachesTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t, discordtest.WithStrictIntents())
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("Tea is brewing.") })
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)
	channel, _ := fake.SendDM(lin, "make me tea")
	reply := fake.WaitSent(t, channel, 1, waitFor)[0]
	// The reply's platform id is stored with its run's completion, a
	// moment after the send: a reaction before then finds no message (a
	// known limit).
	st := b.openStoreFile(t)
	require.Eventually(t, func() bool {
		conv, err := st.ConversationByThread(context.Background(), discord.Platform, channel)
		if err != nil {
			return false
		}
		_, err = st.MessageByPlatformID(context.Background(), conv.ID, reply.MessageID, core.RoleAssistant)
		return err == nil
	}, waitFor, 5e6)
	fake.ReactDM(lin, reply.MessageID, "👍", false)
	fake.ReactDM(lin, reply.MessageID, "🍵", false)
	fake.ReactDM(lin, reply.MessageID, "🍵", true) // taken back
	waitReactions(t, b, channel, []string{"👍"})
	require.Len(t, b.model.Requests(), 1, "a reaction starts no turn")

	fake.SendDM(lin, "thanks")
	fake.WaitSent(t, channel, 2, waitFor)
	reqs := b.model.Requests()
	require.Equal(t, "[They reacted 👍 to your message \u201cTea is brewing.\u201d]\nthanks", reqs[len(reqs)-1].LastUserMessage())
}

// waitReactions waits until the bot's first message on channel has
// exactly the reactions want.
func waitReactions(t *testing.T, b *testBundle, channel string, want []string) {
	t.Helper()
	st := b.openStoreFile(t)
	require.Eventually(t, func() bool {
		conv, err := st.ConversationByThread(context.Background(), discord.Platform, channel)
		if err != nil {
			return false
		}
		msgs, err := st.RecentMessages(context.Background(), conv.ID, 50)
		if err != nil {
			return false
		}
		for _, m := range msgs {
			if m.Role == core.RoleAssistant {
				return slices.Equal(core.MessageReactions(m), want)
			}
		}
		return false
	}, waitFor, 5e6, "the reply's reactions are not %q", want)
}

// Through parley run on Discord: the model reacts to the user's message
// with tool react, and says something too.
func TestDiscordModelReacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "react", `{"emoji":"🎉"}`)))
	b.model.Enqueue(llmtest.Text("Congratulations!"))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)
	channel, msg := fake.SendDM(lin, "I passed my exam!")
	fake.WaitShows(t, channel, waitFor, "Congratulations!")
	require.Equal(t, []string{"🎉"}, fake.BotReactions(msg))
	reqs := b.model.Requests()
	require.Contains(t, reqs[0].ToolNames(), "react")
}

// Through parley run on Telegram: a user's reactions (message_reaction,
// the whole set before and after) are kept with the bot's reply and read
// by the next turn; they start none.
func TestTelegramReactionReachesTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("Tea is brewing.") })
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendPrivate(ada, "make me tea")
	reply := fake.WaitSent(t, ada.ID, 1, waitFor)[0]
	st := b.openStoreFile(t)
	stored := func() []core.Message {
		conv, err := st.ConversationByThread(context.Background(), telegram.Platform, "4242")
		if err != nil {
			return nil
		}
		msgs, _ := st.RecentMessages(context.Background(), conv.ID, 10)
		return msgs
	}
	require.Eventually(t, func() bool {
		ms := stored()
		return len(ms) == 2 && ms[1].PlatformMessageID != ""
	}, waitFor, 5e6, "the reply's platform id is stored")
	fake.ReactPrivate(ada, reply.MessageID, nil, []string{"👍", "🔥"})
	fake.ReactPrivate(ada, reply.MessageID, []string{"👍", "🔥"}, []string{"🔥"})
	require.Eventually(t, func() bool {
		ms := stored()
		return len(ms) == 2 && slices.Equal(core.MessageReactions(ms[1]), []string{"🔥"})
	}, waitFor, 5e6, "the reply keeps the reaction left")
	require.Len(t, b.model.Requests(), 1, "reactions start no turn")
	fake.SendPrivate(ada, "thanks")
	fake.WaitSent(t, ada.ID, 2, waitFor)
	reqs := b.model.Requests()
	require.Equal(t, "[They reacted 🔥 to your message \u201cTea is brewing.\u201d]\nthanks", reqs[len(reqs)-1].LastUserMessage())
}
