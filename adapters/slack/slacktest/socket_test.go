package slacktest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

func TestSocketModeDeliversAndAcks(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// Sent before any connection: it waits for one.
	chID, ts := tb.srv.SendDM(tb.alice, "hello &lt;3")
	id := tb.srv.LastEventID()
	require.Regexp(t, `^Ev\d+$`, id)

	c := tb.runSocket(t)
	hello := receive(t, c.hellos)
	require.Equal(t, 1, hello.Request.NumConnections)
	require.Equal(t, tb.srv.AppID(), hello.Request.ConnectionInfo.AppID)
	require.Equal(t, "fake", hello.Request.DebugInfo.Host)

	e := receive(t, c.events)
	require.Equal(t, "events_api", e.Request.Type)
	require.NotEmpty(t, e.Request.EnvelopeID)
	require.Zero(t, e.Request.RetryAttempt)
	require.Empty(t, e.Request.RetryReason)
	require.False(t, e.Request.AcceptsResponsePayload)

	outer := e.Data.(slackevents.EventsAPIEvent)
	require.Equal(t, tb.srv.TeamID(), outer.TeamID)
	require.Equal(t, tb.srv.AppID(), outer.APIAppID)
	require.Equal(t, "verification-token", outer.Token)
	msg, cb := message(t, e)
	require.Equal(t, id, cb.EventID)
	require.NotZero(t, cb.EventTime)
	require.Len(t, cb.Authorizations, 1)
	require.Equal(t, tb.srv.BotUserID(), cb.Authorizations[0].UserID)
	require.True(t, cb.Authorizations[0].IsBot)
	require.Equal(t, "message", msg.Type)
	require.Equal(t, "im", msg.ChannelType)
	require.True(t, msg.IsIM())
	require.Equal(t, chID, msg.Channel)
	require.Equal(t, tb.srv.DMChannelOf(tb.alice.ID), chID)
	require.Equal(t, tb.alice.ID, msg.User)
	require.Equal(t, "hello &lt;3", msg.Text)
	require.Equal(t, ts, msg.TimeStamp)
	require.Equal(t, ts, msg.EventTimeStamp)
	require.NotEmpty(t, msg.ClientMsgID)
	require.Empty(t, msg.SubType)
	require.Empty(t, msg.BotID)

	require.False(t, tb.srv.Acked(id))
	require.NoError(t, c.smc.Ack(*e.Request))
	tb.srv.WaitAcked(t, id, wait)
	require.Equal(t, 1, tb.srv.Deliveries(id))
	require.Zero(t, tb.srv.BadAcks())
	require.Equal(t, 1, tb.srv.Connections())
	require.Equal(t, 1, tb.srv.LiveConnections())

	// Acked envelopes are not sent again, even after a drop.
	tb.srv.DropSockets()
	tb.srv.WaitConnections(t, 2, wait)
	tb.srv.SendDM(tb.alice, "second")
	e = receive(t, c.events)
	msg, _ = message(t, e)
	require.Equal(t, "second", msg.Text)
	require.Equal(t, 1, tb.srv.Deliveries(id))
}

func TestSocketEventKinds(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	next := func() *slackevents.MessageEvent {
		t.Helper()
		e := receive(t, c.events)
		require.NoError(t, c.smc.Ack(*e.Request))
		msg, _ := message(t, e)
		return msg
	}

	ts := tb.srv.SendChannel("C0GENERAL1", tb.bob, "hi all")
	msg := next()
	require.Equal(t, "channel", msg.ChannelType)
	require.Equal(t, "C0GENERAL1", msg.Channel)
	require.Equal(t, tb.bob.ID, msg.User)
	require.Equal(t, ts, msg.TimeStamp)

	tb.srv.SendGroupDM("G0GROUP001", tb.alice, "hi group")
	msg = next()
	require.Equal(t, "mpim", msg.ChannelType)
	require.True(t, msg.IsMpIM())
	require.Equal(t, "G0GROUP001", msg.Channel)

	dm, orig := tb.srv.SendDM(tb.alice, "typo")
	next()
	tb.srv.SendOwn(dm, "my own words")
	msg = next()
	require.Equal(t, "im", msg.ChannelType)
	require.Equal(t, tb.srv.BotUserID(), msg.User)
	require.Equal(t, tb.srv.BotID(), msg.BotID)
	require.Empty(t, msg.SubType)

	tb.srv.SendBotMessage(dm, "B0OTHER001", "beep")
	msg = next()
	require.Equal(t, "bot_message", msg.SubType)
	require.Equal(t, "B0OTHER001", msg.BotID)
	require.Empty(t, msg.User)
	require.Equal(t, "im", msg.ChannelType)

	tb.srv.EditDM(tb.alice, orig, "fixed")
	msg = next()
	require.Equal(t, "message_changed", msg.SubType)
	require.Equal(t, dm, msg.Channel)
	require.Equal(t, "im", msg.ChannelType)
	require.NotNil(t, msg.Message)
	require.Equal(t, "fixed", msg.Message.Text)
	require.Equal(t, orig, msg.Message.Timestamp)
	require.Equal(t, tb.alice.ID, msg.Message.User)
	require.NotNil(t, msg.Message.Edited)
	require.NotNil(t, msg.PreviousMessage)
	require.Equal(t, "typo", msg.PreviousMessage.Text)
	require.Greater(t, msg.TimeStamp, orig)

	id := tb.srv.SendEvent(json.RawMessage(`{"type":"app_mention","user":"U0BOB00001","text":"<@U0BOT00001> hi","ts":"1.000001","channel":"C0GENERAL1","event_ts":"1.000001"}`))
	require.Equal(t, id, tb.srv.LastEventID())
	e := receive(t, c.events)
	outer := e.Data.(slackevents.EventsAPIEvent)
	mention, ok := outer.InnerEvent.Data.(*slackevents.AppMentionEvent)
	require.True(t, ok, "inner is %T", outer.InnerEvent.Data)
	require.Equal(t, "<@U0BOT00001> hi", mention.Text)
	require.Equal(t, id, outer.Data.(*slackevents.EventsAPICallbackEvent).EventID)

	// The bot may post where events came from.
	_, _, err := tb.api.PostMessage("C0GENERAL1", slack.MsgOptionText("hello channel", false))
	require.NoError(t, err)
	_, _, err = tb.api.PostMessage("G0GROUP001", slack.MsgOptionText("hello group", false))
	require.NoError(t, err)
}

func TestSocketEchoesOwnDMs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	dm, _ := tb.srv.SendDM(tb.alice, "hi")
	e := receive(t, c.events)
	require.NoError(t, c.smc.Ack(*e.Request))

	_, ts, err := tb.api.PostMessage(dm, slack.MsgOptionText("hi &amp; welcome", false))
	require.NoError(t, err)
	e = receive(t, c.events)
	msg, _ := message(t, e)
	require.Equal(t, tb.srv.BotUserID(), msg.User)
	require.Equal(t, tb.srv.BotID(), msg.BotID)
	require.Equal(t, "im", msg.ChannelType)
	require.Equal(t, dm, msg.Channel)
	require.Equal(t, ts, msg.TimeStamp)
	require.Equal(t, "hi &amp; welcome", msg.Text)

	// No echo for channels.
	last := tb.srv.LastEventID()
	tb.srv.SendChannel("C0GENERAL1", tb.bob, "hey")
	channelEvent := tb.srv.LastEventID()
	require.NotEqual(t, last, channelEvent)
	_, _, err = tb.api.PostMessage("C0GENERAL1", slack.MsgOptionText("hey", false))
	require.NoError(t, err)
	require.Equal(t, channelEvent, tb.srv.LastEventID())
}

func TestEchoOwnOff(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithEchoOwn(false))
	dm, _ := tb.srv.SendDM(tb.alice, "hi")
	last := tb.srv.LastEventID()
	_, _, err := tb.api.PostMessage(dm, slack.MsgOptionText("hello", false))
	require.NoError(t, err)
	require.Equal(t, last, tb.srv.LastEventID())
}

func TestSocketRedeliversUnackedAfterDrop(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	tb.srv.WaitConnections(t, 1, wait)

	tb.srv.SendDM(tb.alice, "are you there?")
	id := tb.srv.LastEventID()
	first := receive(t, c.events) // not acked
	tb.srv.DropSockets()

	again := receive(t, c.events)
	require.Equal(t, 1, again.Request.RetryAttempt)
	require.Equal(t, "timeout", again.Request.RetryReason)
	require.NotEqual(t, first.Request.EnvelopeID, again.Request.EnvelopeID)
	_, cb := message(t, again)
	require.Equal(t, id, cb.EventID)
	require.GreaterOrEqual(t, tb.srv.Connections(), 2)
	require.Equal(t, 2, tb.srv.Deliveries(id))

	require.NoError(t, c.smc.Ack(*again.Request))
	tb.srv.WaitAcked(t, id, wait)
	require.Zero(t, tb.srv.BadAcks())
}

func TestSocketAckTimeout(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithAckTimeout(50*time.Millisecond))
	c := tb.runSocket(t)

	tb.srv.SendDM(tb.alice, "ack me")
	id := tb.srv.LastEventID()
	var last socketmode.Event
	for attempt := range 4 {
		last = receive(t, c.events)
		require.Equal(t, attempt, last.Request.RetryAttempt)
		if attempt > 0 {
			require.Equal(t, "timeout", last.Request.RetryReason)
		}
	}
	require.Equal(t, 4, tb.srv.Deliveries(id))
	require.False(t, tb.srv.Acked(id))
	// A late ack of the last envelope still counts.
	require.NoError(t, c.smc.Ack(*last.Request))
	tb.srv.WaitAcked(t, id, wait)
}

func TestSocketRedeliverOnDemand(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	tb.srv.SendDM(tb.alice, "once only")
	id := tb.srv.LastEventID()
	e := receive(t, c.events)
	require.NoError(t, c.smc.Ack(*e.Request))
	tb.srv.WaitAcked(t, id, wait)

	tb.srv.Redeliver(id)
	again := receive(t, c.events)
	require.Equal(t, 1, again.Request.RetryAttempt)
	require.Equal(t, "timeout", again.Request.RetryReason)
	_, cb := message(t, again)
	require.Equal(t, id, cb.EventID)
	require.Equal(t, 2, tb.srv.Deliveries(id))
	require.True(t, tb.srv.Acked(id))
}

func TestSocketPingsKeepTheConnection(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithPingInterval(50*time.Millisecond))
	c := tb.runSocket(t, socketmode.OptionPingInterval(300*time.Millisecond))
	tb.srv.WaitConnections(t, 1, wait)

	// Without pings slack-go would reconnect after 300-600ms; deliver
	// events over more than a second and check it never did.
	start := time.Now()
	pace := time.NewTicker(150 * time.Millisecond)
	defer pace.Stop()
	for n := 0; time.Since(start) < 1200*time.Millisecond; n++ {
		<-pace.C
		tb.srv.SendDM(tb.alice, "tick")
		e := receive(t, c.events)
		require.NoError(t, c.smc.Ack(*e.Request))
		require.Equal(t, 1, tb.srv.Connections(), "reconnected after %v", time.Since(start))
	}
	require.Equal(t, 1, tb.srv.LiveConnections())
}

func TestSocketWithoutPingsReconnects(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithPingInterval(0))
	tb.runSocket(t, socketmode.OptionPingInterval(100*time.Millisecond))
	tb.srv.WaitConnections(t, 2, wait)
}

func TestSocketDisconnect(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	tb.srv.WaitConnections(t, 1, wait)
	receive(t, c.hellos)

	tb.srv.Disconnect("warning")
	tb.srv.WaitConnections(t, 2, wait)
	hello := receive(t, c.hellos)
	require.Equal(t, 1, hello.Request.NumConnections)

	tb.srv.SendDM(tb.alice, "after reconnect")
	e := receive(t, c.events)
	msg, _ := message(t, e)
	require.Equal(t, "after reconnect", msg.Text)
}

func TestSocketRevokeStopsTheClient(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	tb.srv.WaitConnections(t, 1, wait)

	tb.srv.RevokeTokens()
	err := receive(t, c.runErr)
	requireSlackError(t, err, "token_revoked")
	require.Zero(t, tb.srv.LiveConnections())
}

func TestSocketRawProtocol(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	dialer := &websocket.Dialer{HandshakeTimeout: wait}
	origin := http.Header{"Origin": {"https://api.slack.com"}}

	_, resp, err := dialer.DialContext(ctx, "ws"+strings.TrimPrefix(tb.srv.URL(), "http")+"/socket?ticket=bogus", origin)
	require.Error(t, err)
	require.NotNil(t, resp)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_ = resp.Body.Close()

	_, wsURL, err := tb.api.StartSocketModeContext(ctx)
	require.NoError(t, err)
	ws, resp, err := dialer.DialContext(ctx, wsURL, origin)
	require.NoError(t, err)
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = ws.Close() })
	var pings atomic.Int64
	ws.SetPingHandler(func(string) error {
		pings.Add(1)
		return nil
	})

	// A ticket works once.
	_, resp, err = dialer.DialContext(ctx, wsURL, origin)
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_ = resp.Body.Close()

	read := func() map[string]any {
		t.Helper()
		require.NoError(t, ws.SetReadDeadline(time.Now().Add(wait)))
		var f map[string]any
		require.NoError(t, ws.ReadJSON(&f))
		return f
	}
	hello := read()
	require.Equal(t, "hello", hello["type"])
	require.InDelta(t, 1, hello["num_connections"], 0)
	require.Equal(t, map[string]any{"app_id": tb.srv.AppID()}, hello["connection_info"])
	require.Positive(t, pings.Load(), "a ping comes right after connecting")

	tb.srv.SendDM(tb.alice, "raw")
	id := tb.srv.LastEventID()
	env := read()
	require.Equal(t, "events_api", env["type"])
	require.InDelta(t, 0, env["retry_attempt"], 0)
	require.Equal(t, "", env["retry_reason"])
	require.Equal(t, false, env["accepts_response_payload"])
	require.Equal(t, id, env["payload"].(map[string]any)["event_id"])

	require.NoError(t, ws.WriteJSON(map[string]string{"envelope_id": "no-such-envelope"}))
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte("not json")))
	require.NoError(t, ws.WriteJSON(map[string]any{"envelope_id": env["envelope_id"], "payload": map[string]any{}}))
	tb.srv.WaitAcked(t, id, wait)
	require.Eventually(t, func() bool { return tb.srv.BadAcks() == 2 }, wait, 5*time.Millisecond)
}
