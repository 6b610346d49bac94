package discordtest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBotReactionsAddedAndTakenBack(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, userMsg := tb.srv.SendDM(tb.alice, "hi")

	require.NoError(t, c.dg.MessageReactionAdd(chID, userMsg, "👍"))
	require.NoError(t, c.dg.MessageReactionAdd(chID, userMsg, "🔥"))
	require.NoError(t, c.dg.MessageReactionAdd(chID, userMsg, "👍"), "again: no change")
	require.Equal(t, []string{"👍", "🔥"}, tb.srv.BotReactions(userMsg))

	require.NoError(t, c.dg.MessageReactionRemove(chID, userMsg, "👍", "@me"))
	require.Equal(t, []string{"🔥"}, tb.srv.BotReactions(userMsg))
	require.NoError(t, c.dg.MessageReactionRemove(chID, userMsg, "👍", "@me"), "one not there: 204 all the same")
	require.Equal(t, []string{"🔥"}, tb.srv.BotReactions(userMsg))

	requireRESTError(t, c.dg.MessageReactionRemove(chID, "1234567890123", "🔥", "@me"), http.StatusNotFound, 10008)
	requireRESTError(t, c.dg.MessageReactionRemove("999999999999999999", userMsg, "🔥", "@me"), http.StatusNotFound, 10008)
	require.Equal(t, []string{"🔥"}, tb.srv.BotReactions(userMsg))
	require.NoError(t, c.dg.MessageReactionRemove(chID, userMsg, "🔥", "@me"))
	require.Empty(t, tb.srv.BotReactions(userMsg))
	require.Equal(t, 8, tb.srv.Calls("reactions"))
}
