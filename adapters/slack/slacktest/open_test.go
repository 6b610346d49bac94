package slacktest_test

import (
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"
)

func TestConversationsOpenRefusals(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)
	open := func(user string) error {
		_, _, _, err := tb.api.OpenConversation(&slack.OpenConversationParameters{Users: []string{user}})
		return err
	}

	requireSlackError(t, open(tb.srv.BotUserID()), "cannot_dm_bot")
	requireSlackError(t, open("U0NOBODY01"), "user_not_found")

	// A deactivated (blocked) user gets no DM, until reactivated.
	tb.srv.Block(tb.alice.ID)
	requireSlackError(t, open(tb.alice.ID), "user_disabled")
	require.Empty(t, tb.srv.DMChannelOf(tb.alice.ID))
	tb.srv.Unblock(tb.alice.ID)
	require.NoError(t, open(tb.alice.ID))
	require.NotEmpty(t, tb.srv.DMChannelOf(tb.alice.ID))

	info, err := tb.api.GetUserInfo(tb.alice.ID)
	require.NoError(t, err)
	require.Equal(t, "ali", info.Profile.DisplayName)
	_, err = tb.api.GetUserInfo("U0NOBODY01")
	requireSlackError(t, err, "user_not_found")
}
