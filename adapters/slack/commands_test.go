package slack

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
)

// A slash command typed in the bot's DM reaches the core as the text
// "/command args", and Slack gets an empty answer (nothing shown).
func TestSlashCommandReachesTheCore(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := setup(t, mode)
		ch, trigger := b.srv.SendSlashCommand(ada, "/cancel", "2")
		got := b.core.Wait(t, 1, waitFor)
		require.Equal(t, core.InboundMessage{Platform: Platform, ChannelThreadID: ch, ChannelUserID: ada.ID,
			DisplayName: "ada.l", Text: "/cancel 2", PlatformMessageID: trigger, SentAt: got[0].SentAt, Direct: true}, got[0])
		res := b.srv.WaitSlashResponse(t, trigger, waitFor)
		require.Empty(t, res.Body, "nothing for Slack to show: the answer comes in the DM")
		if mode == ModeEvents {
			require.Equal(t, http.StatusOK, res.Status)
		}

		_, trigger = b.srv.SendSlashCommand(ada, "/new", "")
		got = b.core.Wait(t, 2, waitFor)
		require.Equal(t, "/new", got[1].Text)
		require.Equal(t, trigger, got[1].PlatformMessageID)
	})
}

// A slash command typed anywhere but the bot's DM (a channel, another
// person's DM) is not the core's: the user alone is told where to send it.
func TestSlashCommandOutsideTheBotsDM(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := setup(t, mode)
		for _, where := range []struct{ channel, name string }{
			{"C0GENERAL01", "general"},
			{"G0SECRET001", slacktest.ChannelNamePrivate},
			{"D0SOMEONE01", slacktest.ChannelNameDM}, // ada's DM with another person
		} {
			trigger := b.srv.SendSlashCommandIn(where.channel, where.name, ada, "/help", "")
			res := b.srv.WaitSlashResponse(t, trigger, waitFor)
			require.Equal(t, slashNotHere, res.Text(), where.name)
		}
		requireOnlySentinel(t, b, "a command outside the DM")
	})
}

// When the core cannot take the command within the ack budget, the user
// is asked to try again.
func TestSlashCommandTheCoreCannotTake(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, mode string) {
		b := setup(t, mode, func(a *Adapter) { a.ackBudget = 200 * time.Millisecond })
		b.core.FailTimes(-1, errors.New("database is locked"))
		_, trigger := b.srv.SendSlashCommand(ada, "/help", "")
		require.Equal(t, slashNotNow, b.srv.WaitSlashResponse(t, trigger, waitFor).Text())
		require.Contains(t, b.logs.String(), "database is locked")
	})
}

// A Socket Mode envelope delivered again reaches the core once.
func TestSlashCommandRedeliveredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	_, trigger := b.srv.SendSlashCommand(ada, "/reminders", "")
	b.srv.WaitSlashResponse(t, trigger, waitFor)
	b.srv.Redeliver(trigger)
	eventually(t, func() bool { return b.srv.Deliveries(trigger) == 2 }, "redelivered")
	requireOnlySentinelAfter(t, b, 1, "a redelivered command")
}

func TestSlashCommandSignatureIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	target := b.events.URL + CommandsPath
	body := []byte(url.Values{"command": {"/new"}, "user_id": {ada.ID}, "channel_id": {"D0DM000001"},
		"channel_name": {"directmessage"}, "trigger_id": {"1.2.forged"}}.Encode())
	ctx, cancel := contextWithTimeout()
	defer cancel()
	for name, h := range map[string]http.Header{
		"unsigned":     {"X-Slack-Signature": {"v0=00"}, "X-Slack-Request-Timestamp": {"1"}},
		"wrong secret": signedWith(body, "not-the-secret"),
	} {
		status, _, err := b.srv.PostSlashCommand(ctx, target, body, h)
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, status, name)
	}
	requireOnlySentinel(t, b, "a forged command")
}

// signedWith is the signature headers of body under secret, now.
func signedWith(body []byte, secret string) http.Header {
	req, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	slacktest.SignRequest(req, body, secret, time.Now())
	return req.Header
}
