package slacktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// code is the Slack error code of err, "" for none.
func code(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

// methods lists the methods of a message's history.
func methods(m slacktest.BotMessage) []string {
	out := make([]string, len(m.History))
	for i, r := range m.History {
		out[i] = r.Method
	}
	return out
}

func TestStreamMethods(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	tb.srv.AddUser(tb.alice)
	dm, _, _, err := tb.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{tb.alice.ID}})
	require.NoError(t, err)

	ch, ts, err := tb.api.StartStreamContext(ctx, dm.ID, slack.MsgOptionMarkdownText("Hello "))
	require.NoError(t, err)
	require.Equal(t, dm.ID, ch)
	require.True(t, tb.srv.StreamOpen(dm.ID, ts))
	_, _, err = tb.api.AppendStreamContext(ctx, dm.ID, ts, slack.MsgOptionMarkdownText("**world**"))
	require.NoError(t, err)
	_, _, err = tb.api.AppendStreamContext(ctx, dm.ID, ts, slack.MsgOptionChunks(slack.NewMarkdownTextChunk(", "), slack.NewPlanUpdateChunk("plan")))
	require.NoError(t, err, "chunks carry markdown_text too")
	_, _, err = tb.api.AppendStreamContext(ctx, dm.ID, ts)
	require.Equal(t, "no_text", code(err))

	_, _, _, err = tb.api.UpdateMessageContext(ctx, dm.ID, ts, slack.MsgOptionText("early", false))
	require.Equal(t, "streaming_state_conflict", code(err), "a message is not edited while it streams")

	_, _, err = tb.api.StopStreamContext(ctx, dm.ID, ts, slack.MsgOptionMarkdownText("bye"))
	require.NoError(t, err)
	require.False(t, tb.srv.StreamOpen(dm.ID, ts))
	_, _, err = tb.api.AppendStreamContext(ctx, dm.ID, ts, slack.MsgOptionMarkdownText("late"))
	require.Equal(t, "message_not_in_streaming_state", code(err), "a stopped stream takes no more")
	_, _, err = tb.api.StopStreamContext(ctx, dm.ID, ts)
	require.Equal(t, "message_not_in_streaming_state", code(err))
	_, _, err = tb.api.AppendStreamContext(ctx, dm.ID, "1.000001", slack.MsgOptionMarkdownText("x"))
	require.Equal(t, "message_not_found", code(err))

	m, ok := tb.srv.BotMessage(dm.ID, ts)
	require.True(t, ok)
	require.Equal(t, "Hello **world**, bye", m.Text)
	require.True(t, m.Markdown && m.Streamed && !m.Streaming)
	require.Equal(t, []string{"chat.startStream", "chat.appendStream", "chat.appendStream", "chat.stopStream"}, methods(m))
	require.Equal(t, "**world**", m.History[1].Text)
	require.Equal(t, []string{"Hello **world**, bye"}, tb.srv.Visible(dm.ID))
}

func TestWaitShowsWaitsForTheFinishedText(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	tb.srv.AddUser(tb.alice)
	dm, _, _, err := tb.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{tb.alice.ID}})
	require.NoError(t, err)
	_, gone, err := tb.api.PostMessageContext(ctx, dm.ID, slack.MsgOptionText("to go", false))
	require.NoError(t, err)
	_, _, err = tb.api.DeleteMessageContext(ctx, dm.ID, gone)
	require.NoError(t, err)
	_, ts, err := tb.api.StartStreamContext(ctx, dm.ID, slack.MsgOptionMarkdownText("Fish "))
	require.NoError(t, err)

	f := &failures{TB: t}
	tb.srv.WaitShows(f, dm.ID, 20*time.Millisecond, "Fish & chips")
	require.Equal(t, []string{`slacktest: waited 20ms for ` + dm.ID +
		` to show ["Fish & chips"], it shows ["Fish "] (streams open: true)`}, f.msgs, "the failure tells what the DM shows")

	// The reply grows, stops, and is updated to its escaped mrkdwn, as the
	// adapter finishes a streamed reply.
	finished := make(chan error, 1)
	go func() {
		_, _, err := tb.api.AppendStreamContext(ctx, dm.ID, ts, slack.MsgOptionMarkdownText("& chips"))
		if err == nil {
			_, _, err = tb.api.StopStreamContext(ctx, dm.ID, ts)
		}
		if err == nil {
			_, _, _, err = tb.api.UpdateMessageContext(ctx, dm.ID, ts, slack.MsgOptionText("Fish &amp; chips", false))
		}
		finished <- err
	}()
	shown := tb.srv.WaitShows(t, dm.ID, wait, "Fish & chips")
	require.NoError(t, <-finished)
	require.Len(t, shown, 1, "a deleted message is not shown")
	require.Equal(t, ts, shown[0].TS)
	require.False(t, shown[0].Streaming, "a stream still open has not settled")
}

func TestStreamOutsideADMWantsItsRecipient(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	const chID = "C0GENERAL1"
	tb.srv.SendChannel(chID, tb.alice, "hi all")
	_, _, err := tb.api.StartStreamContext(context.Background(), chID, slack.MsgOptionMarkdownText("x"))
	require.Equal(t, "missing_recipient_user_id", code(err))
	_, _, err = tb.api.StartStreamContext(context.Background(), "C0NOWHERE1", slack.MsgOptionMarkdownText("x"))
	require.Equal(t, "channel_not_found", code(err))
	_, _, err = tb.api.StartStreamContext(context.Background(), chID, slack.MsgOptionMarkdownText("x"),
		slack.MsgOptionRecipientUserID(tb.alice.ID), slack.MsgOptionRecipientTeamID(tb.srv.TeamID()))
	require.NoError(t, err)
}

func TestRefuseStreams(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	tb.srv.AddUser(tb.alice)
	_, _, err := tb.api.PostMessageContext(ctx, tb.alice.ID, slack.MsgOptionText("posted", false))
	require.NoError(t, err)
	dm := tb.srv.DMChannelOf(tb.alice.ID)
	for _, c := range []string{"unknown_method", "not_allowed_token_type", "missing_scope", "method_not_supported_for_channel_type"} {
		tb.srv.RefuseStreams(c)
		_, _, err := tb.api.StartStreamContext(ctx, dm, slack.MsgOptionMarkdownText("x"))
		require.Equal(t, c, code(err))
	}
	tb.srv.RefuseStreams("")
	_, _, err = tb.api.StartStreamContext(ctx, dm, slack.MsgOptionMarkdownText("x"))
	require.NoError(t, err)
	require.Len(t, tb.srv.BotMessages(dm), 2, "refused streams made no message")
	require.Equal(t, []string{"chat.postMessage"}, methods(tb.srv.BotMessages(dm)[0]))
}

func TestUpdateAndDelete(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	chID, userTS := tb.srv.SendDM(tb.alice, "mine")
	_, ts, err := tb.api.PostMessageContext(ctx, chID, slack.MsgOptionText("first", false))
	require.NoError(t, err)

	_, _, text, err := tb.api.UpdateMessageContext(ctx, chID, ts, slack.MsgOptionText("second &amp; more", false), slack.MsgOptionBlocks())
	require.NoError(t, err)
	require.Equal(t, "second &amp; more", text)
	_, _, _, err = tb.api.UpdateMessageContext(ctx, chID, ts, slack.MsgOptionText("", false))
	require.Equal(t, "no_text", code(err))
	_, _, _, err = tb.api.UpdateMessageContext(ctx, tb.alice.ID, ts, slack.MsgOptionText("by user id", false))
	require.Equal(t, "channel_not_found", code(err), "chat.update wants the D… id")
	_, _, _, err = tb.api.UpdateMessageContext(ctx, chID, userTS, slack.MsgOptionText("theirs", false))
	require.Equal(t, "cant_update_message", code(err))
	_, _, _, err = tb.api.UpdateMessageContext(ctx, chID, "1.000001", slack.MsgOptionText("nobody", false))
	require.Equal(t, "message_not_found", code(err))

	m, _ := tb.srv.BotMessage(chID, ts)
	require.Equal(t, "second &amp; more", m.Text)
	require.Equal(t, []string{"chat.postMessage", "chat.update"}, methods(m))
	require.Equal(t, []string{"first", "second &amp; more"}, []string{m.History[0].Text, m.History[1].Text})

	_, _, err = tb.api.DeleteMessageContext(ctx, chID, userTS)
	require.Equal(t, "cant_delete_message", code(err))
	_, _, err = tb.api.DeleteMessageContext(ctx, chID, ts)
	require.NoError(t, err)
	_, _, err = tb.api.DeleteMessageContext(ctx, chID, ts)
	require.Equal(t, "message_not_found", code(err), "deleted once")
	_, _, _, err = tb.api.UpdateMessageContext(ctx, chID, ts, slack.MsgOptionText("gone", false))
	require.Equal(t, "message_not_found", code(err))
	require.Empty(t, tb.srv.Visible(chID))
	m, _ = tb.srv.BotMessage(chID, ts)
	require.True(t, m.Deleted)
}

func TestRateLimitedAppends(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	_, ts, err := tb.api.StartStreamContext(ctx, chID, slack.MsgOptionMarkdownText("a "))
	require.NoError(t, err)
	tb.srv.RateLimitCalls("chat.appendStream", 2, 1500*time.Millisecond)
	for range 2 {
		_, _, err = tb.api.AppendStreamContext(ctx, chID, ts, slack.MsgOptionMarkdownText("b "))
		var limited *slack.RateLimitedError
		require.ErrorAs(t, err, &limited)
		require.Equal(t, 2*time.Second, limited.RetryAfter, "whole seconds, rounded up")
	}
	_, _, err = tb.api.AppendStreamContext(ctx, chID, ts, slack.MsgOptionMarkdownText("c"))
	require.NoError(t, err)
	m, _ := tb.srv.BotMessage(chID, ts)
	require.Equal(t, "a c", m.Text, "a rate-limited append appended nothing")
	require.Equal(t, 2, tb.srv.RateLimited())

	got := tb.srv.WaitBotMessages(t, chID, wait, func(ms []slacktest.BotMessage) bool { return len(ms) == 1 && ms[0].Streaming })
	require.Equal(t, ts, got[0].TS)
}
