package discordtest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
)

func TestOpenIdentifiesAndGetsReady(t *testing.T) {
	t.Parallel()
	tb := setup(t, discordtest.WithBotUser("42", "companion"))
	c := tb.newClient(t, discordgo.IntentsDirectMessages)
	c.openAndClose(t, tb.srv)

	require.Equal(t, 1, tb.srv.Identifies())
	require.Equal(t, 0, tb.srv.Resumes())
	require.Equal(t, int(discordgo.IntentsDirectMessages), tb.srv.Intents())
	require.Equal(t, 1, tb.srv.Calls("gateway"))
	require.Equal(t, 1, tb.srv.Connected())
	require.Equal(t, "42", c.dg.State.User.ID)
	require.Equal(t, "companion", c.dg.State.User.Username)
	require.True(t, c.dg.State.User.Bot)
}

func TestDMReachesHandler(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)

	chID, msgID := tb.srv.SendDM(tb.alice, "hello there")

	m := receive(t, c.creates)
	require.Equal(t, "hello there", m.Content)
	require.Equal(t, msgID, m.ID)
	require.Equal(t, chID, m.ChannelID)
	require.Empty(t, m.GuildID)
	require.Equal(t, tb.alice.ID, m.Author.ID)
	require.Equal(t, "alice", m.Author.Username)
	require.Equal(t, "Alice", m.Author.GlobalName)
	require.False(t, m.Author.Bot)
	require.WithinDuration(t, time.Now(), m.Timestamp, time.Minute)
	require.Equal(t, chID, tb.srv.DMChannelOf(tb.alice.ID))

	// The same user's next DM is in the same channel.
	chID2, msgID2 := tb.srv.SendDM(tb.alice, "again")
	require.Equal(t, chID, chID2)
	require.Greater(t, msgID2, msgID)

	ch, err := c.dg.Channel(chID)
	require.NoError(t, err)
	require.Equal(t, discordgo.ChannelTypeDM, ch.Type)
	require.Equal(t, tb.alice.ID, ch.Recipients[0].ID)
}

func TestGuildMessageHasGuildID(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)

	id := tb.srv.SendGuild("700", "701", tb.bob, "hi all")

	m := receive(t, c.creates)
	require.Equal(t, id, m.ID)
	require.Equal(t, "700", m.GuildID)
	require.Equal(t, "701", m.ChannelID)
	require.Equal(t, "hi all", m.Content)
	require.NotNil(t, m.Member)
	require.Equal(t, tb.bob.ID, m.Author.ID)
}

func TestSendOwnIsAuthoredByTheBot(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	receive(t, c.creates)

	id := tb.srv.SendOwn(chID, "my own words")

	m := receive(t, c.creates)
	require.Equal(t, id, m.ID)
	require.Equal(t, tb.srv.BotID(), m.Author.ID)
	require.True(t, m.Author.Bot)
	require.Empty(t, tb.srv.AllSent(), "SendOwn is not something the bot sent over REST")
}

func TestEditDMIsAMessageUpdate(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)
	chID, msgID := tb.srv.SendDM(tb.alice, "helo")
	receive(t, c.creates)

	tb.srv.EditDM(tb.alice, msgID, "hello")

	u := receive(t, c.updates)
	require.Equal(t, msgID, u.ID)
	require.Equal(t, chID, u.ChannelID)
	require.Equal(t, "hello", u.Content)
	require.NotNil(t, u.EditedTimestamp)
}

func TestEveryIdentifiedSessionGetsEvents(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c1, c2 := tb.open(t), tb.open(t)
	require.Equal(t, 2, tb.srv.Identifies())

	tb.srv.SendDM(tb.alice, "to everyone")

	require.Equal(t, "to everyone", receive(t, c1.creates).Content)
	require.Equal(t, "to everyone", receive(t, c2.creates).Content)
}

func TestUnknownFramesAreIgnored(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)

	tb.srv.InjectFrame(json.RawMessage(`{"op":99,"d":{"what":"future"}}`))
	tb.srv.Dispatch("SOMETHING_NEW", map[string]any{"x": 1})
	tb.srv.SendDM(tb.alice, "still here")

	require.Equal(t, "still here", receive(t, c.creates).Content)
	var types []string
	for len(c.types) > 0 {
		types = append(types, <-c.types)
	}
	require.Contains(t, types, "SOMETHING_NEW")
	require.Equal(t, 1, tb.srv.Identifies())
	require.Equal(t, 0, tb.srv.Resumes())
	require.Equal(t, 1, tb.srv.Connected())
}

func TestDisconnectResumesAndReplaysMissedEvents(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.open(t)
	tb.srv.SendDM(tb.alice, "before")
	require.Equal(t, "before", receive(t, c.creates).Content)

	tb.srv.DisconnectGateway()
	require.Equal(t, 0, tb.srv.Connected())
	tb.srv.SendDM(tb.alice, "while away")

	tb.srv.WaitReady(t, wait)
	require.Equal(t, "while away", receive(t, c.creates).Content)
	require.Equal(t, 1, tb.srv.Resumes())
	require.Equal(t, 1, tb.srv.Identifies(), "a resume is not a new session")

	tb.srv.SendDM(tb.alice, "after")
	require.Equal(t, "after", receive(t, c.creates).Content)
	select {
	case m := <-c.creates:
		t.Fatalf("unexpected extra event %q", m.Content)
	default:
	}
}

func TestBadTokenFailsIdentify(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	dg, err := discordgo.New("Bot not-the-token")
	require.NoError(t, err)
	dg.Client = tb.srv.HTTPClient()

	err = dg.Open()
	var ce *websocket.CloseError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 4004, ce.Code)
	require.Equal(t, 0, tb.srv.Identifies())
}

func TestRawProtocol(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	t.Run("heartbeat is acknowledged", func(t *testing.T) {
		t.Parallel()
		g := tb.dialRaw(t)
		g.send(1, nil)
		require.Equal(t, 11, g.read().Op)
	})

	t.Run("resume of an unknown session is invalid", func(t *testing.T) {
		t.Parallel()
		g := tb.dialRaw(t)
		g.send(6, map[string]any{"token": tb.srv.Token(), "session_id": "nope", "seq": 3})
		f := g.read()
		require.Equal(t, 9, f.Op)
		require.JSONEq(t, `false`, string(f.D))
		// The client may identify instead.
		require.NotEmpty(t, g.identify("Bot "+tb.srv.Token()))
	})

	t.Run("a clean close ends the session", func(t *testing.T) {
		t.Parallel()
		g := tb.dialRaw(t)
		sid := g.identify(tb.srv.Token())
		require.NoError(t, g.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")))
		_, _, err := g.ws.ReadMessage() // the server's close reply
		require.Error(t, err)

		g2 := tb.dialRaw(t)
		g2.send(6, map[string]any{"token": tb.srv.Token(), "session_id": sid, "seq": 1})
		require.Equal(t, 9, g2.read().Op)
	})

	t.Run("resume replays from the client's sequence", func(t *testing.T) {
		t.Parallel()
		srv := discordtest.NewServer(t)
		own := &testBundle{srv: srv, alice: tb.alice}
		g := own.dialRaw(t)
		sid := g.identify(srv.Token())
		srv.SendDM(own.alice, "one") // s=2
		require.Equal(t, int64(2), g.read().S)
		srv.DisconnectGateway()
		srv.SendDM(own.alice, "two")   // s=3
		srv.SendDM(own.alice, "three") // s=4

		g2 := own.dialRaw(t)
		g2.send(6, map[string]any{"token": srv.Token(), "session_id": sid, "seq": 2})
		for _, want := range []string{"two", "three"} {
			f := g2.read()
			require.Equal(t, "MESSAGE_CREATE", f.T)
			var m discordgo.Message
			require.NoError(t, json.Unmarshal(f.D, &m))
			require.Equal(t, want, m.Content)
		}
		f := g2.read()
		require.Equal(t, "RESUMED", f.T)
		require.Equal(t, int64(5), f.S)
		require.Equal(t, 1, srv.Resumes())
	})
}

func TestStrictIntents(t *testing.T) {
	t.Parallel()
	tb := setup(t, discordtest.WithStrictIntents())
	dmOnly := tb.newClient(t, discordgo.IntentsDirectMessages)
	dmOnly.openAndClose(t, tb.srv)
	noContent := tb.newClient(t, discordgo.IntentsDirectMessages|discordgo.IntentsGuildMessages)
	noContent.openAndClose(t, tb.srv)

	tb.srv.SendGuild("700", "701", tb.bob, "guild chatter")
	tb.srv.SendDM(tb.alice, "private")

	g := receive(t, noContent.creates)
	require.Equal(t, "700", g.GuildID)
	require.Empty(t, g.Content, "no MESSAGE_CONTENT intent")
	require.Equal(t, "private", receive(t, noContent.creates).Content)
	// The DM-only session never saw the guild message.
	require.Equal(t, "private", receive(t, dmOnly.creates).Content)
}

func TestCloseDropsLiveConnections(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	g := tb.dialRaw(t)
	g.identify(tb.srv.Token())

	tb.srv.Close()

	_, _, err := g.ws.ReadMessage()
	require.Error(t, err)
	tb.srv.Close() // idempotent; Cleanup calls it again too
}
