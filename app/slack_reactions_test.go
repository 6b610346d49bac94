package app

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// slackStored are the stored messages of the Slack conversation in
// channel, oldest first; none before it exists.
func slackStored(t *testing.T, b *testBundle, channel string) []core.Message {
	t.Helper()
	st := b.openStoreFile(t)
	conv, err := st.ConversationByThread(context.Background(), slack.Platform, channel)
	if err != nil {
		return nil
	}
	msgs, err := st.RecentMessages(context.Background(), conv.ID, 50)
	if err != nil {
		return nil
	}
	return msgs
}

// Through parley run on Slack, in both modes: a user's reactions to the
// bot's reply (Slack's names, +1 and tea) are kept with it as emoji and
// start no turn; the next turn reads the one left as the emoji with a
// short quote of the reply, before the user's next message.
func TestSlackReactionReachesTheModel(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"socket", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("Tea is brewing.") })
			fake, _ := startSlack(t, b, mode)
			channel, _ := fake.SendDM(mei, "make me tea")
			reply := fake.WaitSent(t, channel, 1, waitFor)[0]
			// The reply's ts is stored with its run's completion, a moment
			// after the send: a reaction before then finds no message (a
			// known limit, as on Discord).
			require.Eventually(t, func() bool {
				ms := slackStored(t, b, channel)
				return len(ms) == 2 && ms[1].PlatformMessageID == reply.TS
			}, waitFor, 5e6, "the reply's ts is stored")

			fake.ReactDM(mei, reply.TS, "+1", false)
			fake.ReactDM(mei, reply.TS, "tea", false)
			fake.ReactDM(mei, reply.TS, "tea", true) // taken back
			require.Eventually(t, func() bool {
				ms := slackStored(t, b, channel)
				return len(ms) == 2 && slices.Equal(core.MessageReactions(ms[1]), []string{"👍"})
			}, waitFor, 5e6, "the reply keeps the reaction left")
			require.Len(t, b.model.Requests(), 1, "a reaction starts no turn")

			fake.SendDM(mei, "thanks")
			fake.WaitSent(t, channel, 2, waitFor)
			reqs := b.model.Requests()
			require.Len(t, reqs, 2)
			require.Equal(t, "[They reacted 👍 to your message \u201cTea is brewing.\u201d]\nthanks", reqs[1].LastUserMessage())
		})
	}
}

// Through parley run on Slack: the model reacts to the user's message
// with tool react (🎉, which Slack calls tada) and says something too.
func TestSlackModelReacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "react", `{"emoji":"🎉"}`)))
	b.model.Enqueue(llmtest.Text("Congratulations!"))
	fake, _ := startSlack(t, b, "socket")
	channel, ts := fake.SendDM(mei, "I passed my exam!")
	fake.WaitShows(t, channel, waitFor, "Congratulations!")
	fake.WaitBotReactions(t, channel, ts, []string{"tada"}, waitFor)
	fake.WaitAcked(t, fake.LastEventID(), waitFor) // the echoes of the reaction and the reply
	require.Contains(t, b.model.Requests()[0].ToolNames(), "react")
	require.Len(t, b.model.Requests(), 2, "the bot's own reaction, echoed by Slack, starts no turn")
}

// Through parley run on Slack: a user edits a message the bot answered
// and deletes another; the next turn reads the edited text and not the
// deleted one, and the store keeps the deleted message's row without its
// text. A message queued behind a running turn and edited before its own
// turn starts is answered as edited; Slack's unfurl of a link changes
// nothing.
func TestSlackEditsAndDeletesReachTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
	fake, _ := startSlack(t, b, "socket")
	channel, cat := fake.SendDM(mei, "my cat is Tom")
	fake.WaitSent(t, channel, 1, waitFor)
	_, pin := fake.SendDM(mei, "my pin is 1234")
	fake.WaitSent(t, channel, 2, waitFor)
	fake.EditDM(mei, cat, "my cat is Tim")
	fake.UnfurlDM(mei, cat, "https://example.com/tim")
	fake.DeleteDM(mei, pin)

	// A turn held at the model; the next message waits behind it and is
	// edited before its turn starts.
	fake.SendDM(mei, "one moment")
	require.Eventually(t, func() bool { return slices.Contains(lastUsers(b), "one moment") }, waitFor, 5e6)
	_, typo := fake.SendDM(mei, "what do yuo know?")
	fake.EditDM(mei, typo, "what do you know?")
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(slackStored(t, b, channel), func(m core.Message) bool { return m.Content == "what do you know?" })
	}, waitFor, 5e6, "the edit is stored")
	close(hold)
	fake.WaitSent(t, channel, 4, waitFor)

	requireEditsReachedTheModel(t, b, slack.Platform, channel, pin)
}
