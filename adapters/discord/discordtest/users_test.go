package discordtest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUserChannelCreateNeedsAKnownUser(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)

	_, err := c.dg.UserChannelCreate(tb.bob.ID)
	requireRESTError(t, err, http.StatusNotFound, 10013)
	require.Empty(t, tb.srv.DMChannelOf(tb.bob.ID))

	// Added without ever writing: the DM opens, with their names.
	tb.srv.AddUser(tb.alice)
	ch, err := c.dg.UserChannelCreate(tb.alice.ID)
	require.NoError(t, err)
	require.Len(t, ch.Recipients, 1)
	require.Equal(t, "Alice", ch.Recipients[0].GlobalName)
	require.Equal(t, "alice", ch.Recipients[0].Username)

	// A user who blocked the bot still gets the channel; messages there fail.
	tb.srv.Block(tb.alice.ID)
	again, err := c.dg.UserChannelCreate(tb.alice.ID)
	require.NoError(t, err)
	require.Equal(t, ch.ID, again.ID)
	_, err = c.dg.ChannelMessageSend(ch.ID, "hello?")
	requireRESTError(t, err, http.StatusForbidden, 50007)

	// A user who wrote is known.
	tb.srv.SendDM(tb.bob, "hi")
	_, err = c.dg.UserChannelCreate(tb.bob.ID)
	require.NoError(t, err)
}
