package discordtest_test

import (
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"
)

// A forged tap carries a custom_id the message does not show (or shows
// disabled), on a message in the user's DM; it is an interaction like any
// other.
func TestForgeTap(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.newClient(t, discordgo.IntentsDirectMessages)
	got := interactions(c)
	c.openAndClose(t, tb.srv)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	m := question(t, c, chID, "q7.0")

	_, err := tb.srv.ForgeTap(tb.bob, m.ID, "q7.0")
	require.Error(t, err, "not bob's DM")
	id, err := tb.srv.ForgeTap(tb.alice, m.ID, "q9.9")
	require.NoError(t, err)
	ev := receive(t, got)
	require.Equal(t, id, ev.ID)
	require.Equal(t, "q9.9", ev.MessageComponentData().CustomID)
	require.Equal(t, m.ID, ev.Message.ID)
	require.NoError(t, c.dg.InteractionRespond(ev.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "No.", Flags: discordgo.MessageFlagsEphemeral},
	}))
	cb := tb.srv.WaitCallback(t, id, wait)
	require.Equal(t, "No.", cb.Content)
	require.Equal(t, 204, cb.Status)
}
