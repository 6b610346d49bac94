package slacktest_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// slackCode is the error code of a Web API call that answered ok:false.
func slackCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

func TestBotReactionsAsSlackAnswers(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithEchoOwn(false))
	ch, userTS := tb.srv.SendDM(tb.alice, "I passed!")
	_, botTS, err := tb.api.PostMessage(ch, slack.MsgOptionText("Well done", false))
	require.NoError(t, err)

	ref := slack.NewRefToMessage(ch, userTS)
	require.NoError(t, tb.api.AddReaction("thumbsup", ref))
	require.NoError(t, tb.api.AddReaction("tada", ref))
	require.Equal(t, "already_reacted", slackCode(tb.api.AddReaction("+1", ref)), "thumbsup is +1")
	require.Equal(t, []string{"+1", "tada"}, tb.srv.BotReactions(ch, userTS))
	require.NoError(t, tb.api.AddReaction("heart", slack.NewRefToMessage(ch, botTS)), "its own messages too")
	require.NoError(t, tb.api.AddReaction("+1::skin-tone-3", ref))

	require.Equal(t, "invalid_name", slackCode(tb.api.AddReaction("no_such_emoji", ref)))
	require.Equal(t, "invalid_name", slackCode(tb.api.AddReaction("+1::skin-tone-9", ref)))
	require.Equal(t, "message_not_found", slackCode(tb.api.AddReaction("tada", slack.NewRefToMessage(ch, "1.000001"))))
	require.Equal(t, "channel_not_found", slackCode(tb.api.AddReaction("tada", slack.NewRefToMessage("D0NOPE", userTS))))

	require.NoError(t, tb.api.RemoveReaction("+1", ref))
	require.Equal(t, "no_reaction", slackCode(tb.api.RemoveReaction("thumbsup", ref)))
	tb.srv.WaitBotReactions(t, ch, userTS, []string{"tada", "+1::skin-tone-3"}, wait)
	require.Equal(t, 9, tb.srv.Calls("reactions.add"))
	require.Equal(t, 2, tb.srv.Calls("reactions.remove"))
}

func TestReactionsRateLimited(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithEchoOwn(false))
	ch, ts := tb.srv.SendDM(tb.alice, "hi")
	tb.srv.RateLimitNext("reactions.add", 2*time.Second)
	err := tb.api.AddReaction("tada", slack.NewRefToMessage(ch, ts))
	var limited *slack.RateLimitedError
	require.ErrorAs(t, err, &limited)
	require.Equal(t, 2*time.Second, limited.RetryAfter)
	require.Empty(t, tb.srv.BotReactions(ch, ts), "a 429 reacts with nothing")
	require.NoError(t, tb.api.AddReaction("tada", slack.NewRefToMessage(ch, ts)))
	require.Equal(t, []string{"tada"}, tb.srv.BotReactions(ch, ts))
}

// innerOf is the inner event of a Socket Mode events_api envelope.
func innerOf(t *testing.T, e socketmode.Event) any {
	t.Helper()
	outer, ok := e.Data.(slackevents.EventsAPIEvent)
	require.True(t, ok, "data is %T", e.Data)
	return outer.InnerEvent.Data
}

func TestUsersReactionsEditsAndDeletesOverSocketMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	receive(t, c.hellos)
	ch, userTS := tb.srv.SendDM(tb.alice, "my cat is Tom")
	receive(t, c.events)
	_, botTS, err := tb.api.PostMessage(ch, slack.MsgOptionText("Nice cat", false))
	require.NoError(t, err)
	own, _ := message(t, receive(t, c.events))
	require.Equal(t, tb.srv.BotUserID(), own.User, "the bot's own message comes back")

	tb.srv.ReactDM(tb.alice, botTS, "thumbsup", false)
	added, ok := innerOf(t, receive(t, c.events)).(*slackevents.ReactionAddedEvent)
	require.True(t, ok)
	require.Equal(t, tb.alice.ID, added.User)
	require.Equal(t, "+1", added.Reaction, "as slack names it")
	require.Equal(t, tb.srv.BotUserID(), added.ItemUser)
	require.Equal(t, slackevents.Item{Type: "message", Channel: ch, Timestamp: botTS}, added.Item)
	tb.srv.ReactDM(tb.alice, botTS, "+1", true)
	removed, ok := innerOf(t, receive(t, c.events)).(*slackevents.ReactionRemovedEvent)
	require.True(t, ok)
	require.Equal(t, "+1", removed.Reaction)

	// The bot's own reaction comes back as an event too.
	require.NoError(t, tb.api.AddReaction("eyes", slack.NewRefToMessage(ch, userTS)))
	mine, ok := innerOf(t, receive(t, c.events)).(*slackevents.ReactionAddedEvent)
	require.True(t, ok)
	require.Equal(t, tb.srv.BotUserID(), mine.User)
	require.Equal(t, tb.alice.ID, mine.ItemUser)

	tb.srv.EditDM(tb.alice, userTS, "my cat is Tim")
	edit, _ := message(t, receive(t, c.events))
	require.Equal(t, "message_changed", edit.SubType)
	require.Equal(t, "my cat is Tim", edit.Message.Text)
	require.Equal(t, userTS, edit.Message.Timestamp)
	require.Equal(t, "my cat is Tom", edit.PreviousMessage.Text)

	tb.srv.UnfurlDM(tb.alice, userTS, "https://example.com")
	unfurl, _ := message(t, receive(t, c.events))
	require.Equal(t, "message_changed", unfurl.SubType)
	require.Equal(t, unfurl.PreviousMessage.Text, unfurl.Message.Text, "an unfurl leaves the text")
	require.Len(t, unfurl.Message.Attachments, 1)

	id := tb.srv.DeleteDM(tb.alice, userTS)
	del, cb := message(t, receive(t, c.events))
	require.Equal(t, id, cb.EventID)
	require.Equal(t, "message_deleted", del.SubType)
	require.Equal(t, userTS, del.DeletedTimeStamp)
	require.Equal(t, "my cat is Tim", del.PreviousMessage.Text)
	require.Equal(t, "message_not_found", slackCode(tb.api.AddReaction("tada", slack.NewRefToMessage(ch, userTS))), "the message is gone")
}

func TestUsersReactionOverEventsAPI(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithEchoOwn(false))
	rc := newReceiver(t, tb.srv.SigningSecret(), always(http.StatusOK))
	tb.srv.UseEventsAPI(rc.url)
	ch, _ := tb.srv.SendDM(tb.alice, "hi")
	receive(t, rc.hits)
	_, botTS, err := tb.api.PostMessage(ch, slack.MsgOptionText("Hello", false))
	require.NoError(t, err)

	id := tb.srv.ReactDM(tb.alice, botTS, "tea", false)
	h := receive(t, rc.hits)
	require.True(t, h.verified)
	added, ok := h.event.InnerEvent.Data.(*slackevents.ReactionAddedEvent)
	require.True(t, ok, "inner event is %T", h.event.InnerEvent.Data)
	require.Equal(t, "tea", added.Reaction)
	require.Equal(t, ch, added.Item.Channel)
	tb.srv.WaitAcked(t, id, wait)
}
