package slack

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

func TestDMIsNormalised(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := setup(t, mode)
		before := time.Now()
		ch, ts := b.srv.SendDM(ada, "Fish &amp; chips &lt;3 for <@U0GRACE001|grace>? See <https://example.com/menu|the menu>")
		msgs := b.core.Wait(t, 1, waitFor)
		got := msgs[0]
		require.Equal(t, Platform, got.Platform)
		require.Equal(t, ch, got.ChannelThreadID)
		require.Equal(t, b.srv.DMChannelOf(ada.ID), got.ChannelThreadID)
		require.Equal(t, ada.ID, got.ChannelUserID)
		require.Equal(t, "ada.l", got.DisplayName, "the display name when there is one")
		require.Equal(t, "Fish & chips <3 for @grace? See the menu (https://example.com/menu)", got.Text)
		require.Equal(t, ts, got.PlatformMessageID)
		require.WithinDuration(t, before, got.SentAt, time.Minute)
		require.True(t, got.Direct)

		b.srv.SendDM(grace, "hi")
		b.srv.SendDM(linus, "hey")
		msgs = b.core.Wait(t, 3, waitFor)
		require.Equal(t, "Grace Hopper", msgs[1].DisplayName, "the real name without a display name")
		require.Equal(t, "linus", msgs[2].DisplayName, "the username without either")
		require.NotEqual(t, msgs[0].ChannelThreadID, msgs[1].ChannelThreadID)
	})
}

// requireOnlySentinel sends a DM after whatever the test played and
// requires that it alone reached the core.
func requireOnlySentinel(t *testing.T, b *testBundle, what string) {
	t.Helper()
	requireOnlySentinelAfter(t, b, 0, what)
}

func TestIgnoredMessages(t *testing.T) {
	t.Parallel()
	// Each play returns how many messages the core got on purpose.
	for _, tc := range []struct {
		name string
		play func(t *testing.T, b *testBundle) int
	}{
		{"channel", func(_ *testing.T, b *testBundle) int {
			b.srv.SendChannel("C0GENERAL01", ada, "hello channel")
			return 0
		}},
		{"group DM", func(_ *testing.T, b *testBundle) int {
			b.srv.SendGroupDM("G0GROUP0001", ada, "hello all")
			return 0
		}},
		{"own", func(_ *testing.T, b *testBundle) int {
			b.srv.SendOwn("D0ADA00001", "my own words")
			return 0
		}},
		{"own reply echoed", func(t *testing.T, b *testBundle) int {
			// Slack sends the bot's own posts back as message events.
			ch := b.greet(t, ada)
			_, err := b.send(ch, "an answer")
			require.NoError(t, err)
			return 1
		}},
		{"own user without a bot id", func(_ *testing.T, b *testBundle) int {
			// Posted as the bot user by other means (a user token, an
			// older integration): the user id alone marks it.
			b.srv.SendEvent([]byte(`{"type":"message","user":"` + b.srv.BotUserID() + `","text":"mine","ts":"1700000000.000200","channel":"D0ADA00001","channel_type":"im"}`))
			return 0
		}},
		{"other bot", func(_ *testing.T, b *testBundle) int {
			b.srv.SendBotMessage("D0ADA00001", "B0OTHER001", "beep")
			return 0
		}},
		{"edit", func(t *testing.T, b *testBundle) int {
			_, ts := b.srv.SendDM(ada, "first")
			b.core.Wait(t, 1, waitFor)
			b.srv.EditDM(ada, ts, "edited")
			return 1
		}},
		{"not a message", func(_ *testing.T, b *testBundle) int {
			b.srv.SendEvent([]byte(`{"type":"app_home_opened","user":"U0ADA00001","channel":"D0ADA00001","tab":"messages"}`))
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bothModes(t, func(t *testing.T, mode string) {
				b := setup(t, mode)
				n := tc.play(t, b)
				id := b.srv.LastEventID()
				requireOnlySentinelAfter(t, b, n, tc.name)
				// Acks travel on their own: wait for this one.
				b.srv.WaitAcked(t, id, waitFor)
			})
		})
	}
}

func TestRetriedEventIsHandledOnce(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := setup(t, mode)
		b.srv.SendDM(ada, "only once")
		id := b.srv.LastEventID()
		b.core.Wait(t, 1, waitFor)
		b.srv.WaitAcked(t, id, waitFor)

		b.srv.Redeliver(id)
		eventually(t, func() bool { return b.srv.Deliveries(id) == 2 && b.srv.Acked(id) }, "the retry was not delivered")
		requireOnlySentinelAfter(t, b, 1, "the retried event")
	})
}

// requireOnlySentinelAfter is requireOnlySentinel for a core that already
// holds n messages.
func requireOnlySentinelAfter(t *testing.T, b *testBundle, n int, what string) {
	t.Helper()
	b.srv.SendDM(ada, "sentinel")
	msgs := b.core.Wait(t, n+1, waitFor)
	require.Len(t, msgs, n+1, "%s reached the core again", what)
	require.Equal(t, "sentinel", msgs[n].Text)
}

func TestCoreFailureLeavesTheEventToSlack(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		srv := slacktest.NewServer(t, slacktest.WithPingInterval(100*time.Millisecond), slacktest.WithAckTimeout(300*time.Millisecond))
		b := newBundleOn(t, srv, mode, func(a *Adapter) { a.ackBudget = 150 * time.Millisecond })
		b.start(t)
		// The core is down for the first delivery's every try.
		b.core.FailTimes(2, errors.New("database is locked"))
		b.srv.SendDM(ada, "keep me")
		id := b.srv.LastEventID()
		msgs := b.core.Wait(t, 1, waitFor)
		require.Equal(t, "keep me", msgs[0].Text)
		b.srv.WaitAcked(t, id, waitFor)
		require.Equal(t, 2, b.srv.Deliveries(id), "unacked once, then delivered again and acked")
		require.Contains(t, b.logs.String(), "leaving it to slack's redelivery")
		requireOnlySentinelAfter(t, b, 1, "the redelivered event")
	})
}

func TestPanicInCoreIsRecovered(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := setup(t, mode)
		b.core.PanicOn("boom")
		b.srv.SendDM(ada, "boom")
		requireOnlySentinel(t, b, "the panicking message")
		require.Contains(t, b.logs.String(), "panic while handing a slack event to the core")
	})
}

func TestSocketDropReconnectsAndCarriesOn(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	b.greet(t, ada)
	b.srv.DropSockets()
	b.srv.WaitConnections(t, 2, waitFor)
	b.srv.SendDM(ada, "after the drop")
	msgs := b.core.Wait(t, 2, waitFor)
	require.Equal(t, "after the drop", msgs[1].Text)
	eventually(t, func() bool { return b.adapter.Health() == nil }, "healthy again after the reconnect")
}

func TestSocketDisconnectRequestReconnects(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	b.srv.Disconnect("refresh_requested")
	b.srv.WaitConnections(t, 2, waitFor)
	requireOnlySentinel(t, b, "nothing")
}

func TestRevokedAppTokenShowsInHealth(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	require.NoError(t, b.adapter.Health())
	b.srv.RevokeTokens()
	eventually(t, func() bool { return b.adapter.Health() != nil }, "health never reported the revoked token")
	err := b.adapter.Health()
	require.Contains(t, err.Error(), "disconnected")
	require.NotContains(t, err.Error(), b.srv.AppToken())
}

func TestStartFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mode, method, code, want string
	}{
		{"bad bot token", ModeSocket, "auth.test", "invalid_auth", "invalid_auth (is bot_token wrong or revoked?)"},
		{"bad bot token, events", ModeEvents, "auth.test", "invalid_auth", "invalid_auth (is bot_token wrong or revoked?)"},
		{"bad app token", ModeSocket, "apps.connections.open", "invalid_auth", "invalid_auth (is app_token wrong or revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, tc.mode)
			b.srv.FailNext(tc.method, tc.code)
			ctx, cancel := contextWithTimeout()
			defer cancel()
			err := b.adapter.Start(ctx, b.core)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Error(t, b.adapter.Health())
			for _, s := range []string{b.srv.BotToken(), b.srv.AppToken()} {
				require.NotContains(t, err.Error(), s)
			}
			b.requireNoSecrets(t)
			require.NoError(t, b.adapter.Stop(ctx))
		})
	}
}

func TestStopEndsIntake(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := newBundle(t, mode)
		b.start(t)
		b.greet(t, ada)
		ctx, cancel := contextWithTimeout()
		defer cancel()
		require.NoError(t, b.adapter.Stop(ctx))
		require.Error(t, b.adapter.Health())
		_, err := b.send(b.srv.DMChannelOf(ada.ID), "too late")
		require.ErrorContains(t, err, "stopped")
	})
}
