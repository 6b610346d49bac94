package discordtest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core/coretest"
)

// buttonsRow is one action row of grey buttons with these custom ids,
// labelled the same.
func buttonsRow(ids ...string) discordgo.ActionsRow {
	row := discordgo.ActionsRow{}
	for _, id := range ids {
		row.Components = append(row.Components, discordgo.Button{Label: id, CustomID: id, Style: discordgo.SecondaryButton})
	}
	return row
}

// question sends a message with one row of buttons.
func question(t *testing.T, c *client, chID string, ids ...string) *discordgo.Message {
	t.Helper()
	m, err := c.dg.ChannelMessageSendComplex(chID, &discordgo.MessageSend{
		Content: "Pick one", Components: []discordgo.MessageComponent{buttonsRow(ids...)},
	})
	require.NoError(t, err)
	return m
}

// interactions collects the INTERACTION_CREATEs c receives.
func interactions(c *client) chan *discordgo.InteractionCreate {
	ch := make(chan *discordgo.InteractionCreate, 16)
	c.dg.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) {
		select {
		case ch <- i:
		default:
		}
	})
	return ch
}

func TestButtonsAreRecordedAsTheUserSeesThem(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")

	m := question(t, c, chID, "q1.0", "q1.1")
	require.Len(t, m.Components, 1, "the answer shows the components")
	got, ok := tb.srv.Message(m.ID)
	require.True(t, ok)
	require.Equal(t, [][]discordtest.Button{{
		{Label: "q1.0", CustomID: "q1.0", Style: discordtest.StyleSecondary},
		{Label: "q1.1", CustomID: "q1.1", Style: discordtest.StyleSecondary},
	}}, got.Components)

	// An edit with components replaces them; one without leaves them.
	disabled := discordgo.Button{Label: "done", CustomID: "q1.0", Style: discordgo.SuccessButton, Disabled: true}
	comps := []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{disabled}}}
	_, err := c.dg.ChannelMessageEditComplex(&discordgo.MessageEdit{Channel: chID, ID: m.ID, Components: &comps})
	require.NoError(t, err)
	_, err = c.dg.ChannelMessageEdit(chID, m.ID, "Picked")
	require.NoError(t, err)
	got, _ = tb.srv.Message(m.ID)
	require.Equal(t, "Picked", got.Content)
	require.Equal(t, []discordtest.Button{{Label: "done", CustomID: "q1.0", Style: discordtest.StyleSuccess, Disabled: true}}, got.Buttons())
}

func TestButtonsOutsideDiscordsLimitsAreRefused(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	for name, row := range map[string]discordgo.ActionsRow{
		"six buttons":    buttonsRow("a", "b", "c", "d", "e", "f"),
		"long label":     {Components: []discordgo.MessageComponent{discordgo.Button{Label: strings.Repeat("x", 81), CustomID: "a", Style: 2}}},
		"long custom id": {Components: []discordgo.MessageComponent{discordgo.Button{Label: "a", CustomID: strings.Repeat("x", 101), Style: 2}}},
		"no custom id":   {Components: []discordgo.MessageComponent{discordgo.Button{Label: "a", Style: 2}}},
		"duplicate id":   buttonsRow("a", "a"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.dg.ChannelMessageSendComplex(chID, &discordgo.MessageSend{Content: "x", Components: []discordgo.MessageComponent{row}})
			requireRESTError(t, err, http.StatusBadRequest, 50035)
		})
	}
	require.Empty(t, tb.srv.Sent(chID))
}

func TestTapIsAnInteractionInTheDM(t *testing.T) {
	t.Parallel()
	// Interactions need no intent, even where intents are honoured.
	tb := setup(t, discordtest.WithStrictIntents())
	c := tb.newClient(t, discordgo.IntentsDirectMessages)
	got := interactions(c)
	c.openAndClose(t, tb.srv)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	m := question(t, c, chID, "q7.0", "q7.1")

	id, err := tb.srv.Tap(tb.alice, m.ID, "q7.1")
	require.NoError(t, err)
	ev := receive(t, got)
	require.Equal(t, id, ev.ID)
	require.Equal(t, discordgo.InteractionMessageComponent, ev.Type)
	require.Equal(t, "q7.1", ev.MessageComponentData().CustomID)
	require.Equal(t, discordgo.ButtonComponent, ev.MessageComponentData().ComponentType)
	require.Empty(t, ev.GuildID)
	require.Equal(t, chID, ev.ChannelID)
	require.Nil(t, ev.Member, "a DM's interaction has user, not member")
	require.Equal(t, tb.alice.ID, ev.User.ID)
	require.Equal(t, m.ID, ev.Message.ID)
	require.Len(t, ev.Message.Components, 1, "the message as it shows")
	require.NotEmpty(t, ev.Token)

	_, err = tb.srv.Tap(tb.bob, m.ID, "q7.1")
	require.Error(t, err, "not bob's DM")
	_, err = tb.srv.Tap(tb.alice, m.ID, "q9.0")
	require.Error(t, err, "no such button")

	gid := tb.srv.TapGuild("500", "501", tb.bob, "502", "q7.0")
	gev := receive(t, got)
	require.Equal(t, gid, gev.ID)
	require.Equal(t, "500", gev.GuildID)
	require.NotNil(t, gev.Member)
	require.Equal(t, tb.bob.ID, gev.Member.User.ID)
	require.Nil(t, gev.User)
}

func TestInteractionCallbacks(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	tb := setup(t, discordtest.WithNow(clock.Now))
	c := tb.newClient(t, discordgo.IntentsDirectMessages)
	got := interactions(c)
	c.openAndClose(t, tb.srv)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	m := question(t, c, chID, "q1.0", "q1.1")

	// UPDATE_MESSAGE edits the tapped message's components, keeps its text.
	_, err := tb.srv.Tap(tb.alice, m.ID, "q1.0")
	require.NoError(t, err)
	ev := receive(t, got)
	closed := []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{Label: "✓ q1.0", CustomID: "q1.0", Style: discordgo.SuccessButton, Disabled: true},
	}}}
	require.NoError(t, c.dg.InteractionRespond(ev.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseUpdateMessage, Data: &discordgo.InteractionResponseData{Content: "Pick one", Components: closed},
	}))
	msg, _ := tb.srv.Message(m.ID)
	require.Equal(t, "Pick one", msg.Content)
	require.Equal(t, []discordtest.Button{{Label: "✓ q1.0", CustomID: "q1.0", Style: discordtest.StyleSuccess, Disabled: true}}, msg.Buttons())
	require.Equal(t, ev.ID, msg.Edits[0].Interaction)
	_, err = tb.srv.Tap(tb.alice, m.ID, "q1.1")
	require.Error(t, err, "the button is gone")

	// A second callback: 40060.
	err = c.dg.InteractionRespond(ev.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	requireRESTError(t, err, http.StatusBadRequest, 40060)
	in, _ := tb.srv.Interaction(ev.ID)
	require.Len(t, in.Callbacks, 2)
	require.Equal(t, 7, in.Callbacks[0].Type)
	require.Equal(t, 204, in.Callbacks[0].Status)
	require.Equal(t, 40060, in.Callbacks[1].Code)

	// An ephemeral reply, in time; then a tap answered after 3 s: 10062.
	m2 := question(t, c, chID, "q2.0")
	_, err = tb.srv.Tap(tb.alice, m2.ID, "q2.0")
	require.NoError(t, err)
	ev = receive(t, got)
	require.NoError(t, c.dg.InteractionRespond(ev.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "Already answered.", Flags: discordgo.MessageFlagsEphemeral},
	}))
	cb := tb.srv.WaitCallback(t, ev.ID, wait)
	require.Equal(t, discordtest.Callback{Type: 4, Content: "Already answered.", Flags: 64, Status: 204, At: t0}, cb)
	require.Len(t, tb.srv.Sent(chID), 2, "an ephemeral reply is no message of the channel")

	_, err = tb.srv.Tap(tb.alice, m2.ID, "q2.0")
	require.NoError(t, err)
	ev = receive(t, got)
	clock.Advance(3*time.Second + time.Millisecond)
	err = c.dg.InteractionRespond(ev.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	requireRESTError(t, err, http.StatusNotFound, 10062)

	// A wrong token.
	bad := *ev.Interaction
	bad.Token = "nope"
	err = c.dg.InteractionRespond(&bad, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	requireRESTError(t, err, http.StatusUnauthorized, 50027)
	require.Equal(t, 5, tb.srv.Calls("interactions.callback"))
	require.Len(t, tb.srv.Interactions(), 3)
}
