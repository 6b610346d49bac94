package ircadapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/examples/ircadapter"
	"github.com/parleybot/parley/examples/ircadapter/irctest"
)

// TestConformance runs Parley's adapter conformance suite against the
// adapter on a fake IRC server with IRCv3 multiline, as Ergo offers it:
// the suite's messages hold line breaks, which plain IRC can only send as
// separate lines (TestLineByLine covers that). Not parallel: the suite's
// Stop case checks goroutines.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
		srv := irctest.NewServer(t, irctest.Options{Multiline: true, ServerTime: true})
		a := ircadapter.New()
		a.Server = srv.Addr()
		a.Nick = "Subaru"
		a.SendRate = ircadapter.Rate{PerSecond: 1000, Burst: 100}
		require.NoError(t, a.Provision(context.Background(), core.Env{BotName: "Subaru"}))
		require.NoError(t, a.Validate())
		return &adaptertest.Rig{
			Adapter: a,
			DM: func(t *testing.T, u adaptertest.User, text string) string {
				srv.PrivMsg(t, u.Name, text)
				return srv.Fold(u.Name)
			},
			ThreadOf: func(_ *testing.T, u adaptertest.User) string { return srv.Fold(u.Name) },
			Sent: func(_ *testing.T, thread string) []adaptertest.Sent {
				var out []adaptertest.Sent
				for _, m := range srv.Messages(thread) {
					out = append(out, adaptertest.Sent{ChannelThreadID: srv.Fold(m.To), Text: m.Text, At: m.At})
				}
				return out
			},
			// A group chat is a channel; a channel post there comes from
			// services; the bot's own message is what echo-message would show.
			Group: func(t *testing.T, u adaptertest.User, text string) {
				srv.Send(t, ":"+u.Name+"!"+u.Name+"@users.irc.test PRIVMSG #chat :"+text)
			},
			Channel: func(t *testing.T, text string) {
				srv.Send(t, ":ChanServ!services@services.irc.test PRIVMSG #news :"+text)
			},
			Own: func(t *testing.T, text string) {
				srv.Send(t, ":{bot}!Subaru@bot.irc.test PRIVMSG {bot} :"+text)
			},
			// User mode +g (server-side ignore) is IRC's blocking; a nick
			// not on the server is an unknown chat.
			Block:         func(_ *testing.T, u adaptertest.User) { srv.Block(u.Name) },
			UnknownThread: "nobody",
			// IRC nicks are ASCII; B[o]b folds to b{o}b (CASEMAPPING=rfc1459).
			Users: []adaptertest.User{{ID: "alice", Name: "Alice"}, {ID: "b{o}b", Name: "B[o]b"}},
			// IRC messages have no ids the bot could see.
			NoMessageIDs: true,
			Quiesce:      func(t *testing.T) { srv.WaitDisconnected(t, 5*time.Second) },
			// Edit, typing, files, rate-limit answers: IRC has none (its
			// flood limit is a disconnection, which send_rate keeps away).
		}
	})
}
