package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
)

func TestDMIsNormalised(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := time.Now()
	ch, id := b.srv.SendDM(ada, "Hi there — wie geht's? 🙂")
	msgs := b.core.Wait(t, 1, waitFor)
	require.Len(t, msgs, 1)
	got := msgs[0]
	require.Equal(t, Platform, got.Platform)
	require.Equal(t, ch, got.ChannelThreadID)
	require.Equal(t, b.srv.DMChannelOf(ada.ID), got.ChannelThreadID)
	require.Equal(t, ada.ID, got.ChannelUserID)
	require.Equal(t, "Ada Lovelace", got.DisplayName, "the global name when there is one")
	require.Equal(t, "Hi there — wie geht's? 🙂", got.Text)
	require.Equal(t, id, got.PlatformMessageID)
	require.WithinDuration(t, before, got.SentAt, time.Minute)
	require.True(t, got.Direct)

	b.srv.SendDM(grace, "hi")
	msgs = b.core.Wait(t, 2, waitFor)
	require.Equal(t, "grace_h", msgs[1].DisplayName, "the username without a global name")
	require.Equal(t, grace.ID, msgs[1].ChannelUserID)
	require.NotEqual(t, msgs[0].ChannelThreadID, msgs[1].ChannelThreadID)
}

// requireOnlySentinel sends a DM after whatever the test played and
// requires that it alone reached the core.
func requireOnlySentinel(t *testing.T, b *testBundle, what string) {
	t.Helper()
	b.srv.SendDM(ada, "sentinel")
	msgs := b.core.Wait(t, 1, waitFor)
	require.Len(t, msgs, 1, "%s reached the core", what)
	require.Equal(t, "sentinel", msgs[0].Text)
}

func TestIgnoredMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		play func(t *testing.T, b *testBundle)
	}{
		{"guild", func(_ *testing.T, b *testBundle) {
			b.srv.SendGuild("200000000000000001", "300000000000000001", ada, "hello server")
		}},
		{"own", func(t *testing.T, b *testBundle) {
			ch := b.greet(t, ada)
			b.srv.SendOwn(ch, "my own words")
		}},
		{"edit", func(t *testing.T, b *testBundle) {
			_, id := b.srv.SendDM(ada, "first")
			b.core.Wait(t, 1, waitFor)
			b.srv.EditDM(ada, id, "edited")
		}},
		{"other bot", func(t *testing.T, b *testBundle) {
			ch := b.greet(t, ada)
			b.srv.Dispatch("MESSAGE_CREATE", map[string]any{
				"id": "400000000000000001", "channel_id": ch, "content": "beep", "type": 0,
				"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
				"author":    map[string]any{"id": "500000000000000001", "username": "robot", "bot": true},
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tc.play(t, b)
			n := len(b.core.Messages())
			b.srv.SendDM(ada, "sentinel")
			msgs := b.core.Wait(t, n+1, waitFor)
			require.Len(t, msgs, n+1, "the %s message reached the core", tc.name)
			require.Equal(t, "sentinel", msgs[n].Text)
			for _, m := range msgs {
				require.NotEqual(t, "edited", m.Text)
			}
		})
	}
}

func TestStrangeFramesAreSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.srv.DMChannelOf(ada.ID)
	for _, f := range []string{
		`{"op":0,"t":"SOMETHING_NEW","d":{"x":1}}`,
		`{"op":42,"d":null}`,
		`{"op":0,"t":"MESSAGE_CREATE","d":{"id":"400000000000000002","channel_id":"` + ch + `","content":"no author"}}`,
		`{"op":0,"t":"MESSAGE_CREATE","d":{"id":"400000000000000003","channel_id":"` + ch + `","content":7}}`,
		`{"op":0,"t":"MESSAGE_CREATE","d":null}`,
		`not json at all`,
	} {
		b.srv.InjectFrame(json.RawMessage(f))
	}
	requireOnlySentinel(t, b, "a strange frame")
	require.Contains(t, b.logs.String(), "skipping a malformed discord message")
	require.NoError(t, b.adapter.Health())
}

func TestPanicInCoreIsRecovered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.core.PanicOn("boom")
	b.srv.SendDM(ada, "boom")
	requireOnlySentinel(t, b, "the panicking message")
	require.Contains(t, b.logs.String(), "panic while handling a discord message")
}

func TestCoreFailureIsRetriedNotDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.core.FailTimes(2, errors.New("database is locked"))
	b.srv.SendDM(ada, "kept through a database hiccup")
	b.srv.SendDM(ada, "behind it")
	got := b.core.Wait(t, 2, waitFor)
	require.Equal(t, "kept through a database hiccup", got[0].Text)
	require.Equal(t, "behind it", got[1].Text, "order is kept")
	require.Contains(t, b.logs.String(), "retrying")
}

func TestDMsArriveInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want := make([]string, 20)
	for i := range want {
		want[i] = "line " + strings.Repeat("x", i)
		b.srv.SendDM(ada, want[i])
	}
	msgs := b.core.Wait(t, len(want), waitFor)
	got := make([]string, len(msgs))
	for i, m := range msgs {
		got[i] = m.Text
	}
	require.Equal(t, want, got)
}

func TestGatewayDropAndResume(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.resumeDelay = 300 * time.Millisecond })
	ch := b.greet(t, ada)

	b.srv.DisconnectGateway()
	eventually(t, func() bool { return b.adapter.Health() != nil }, "health never reported the outage")
	require.ErrorContains(t, b.adapter.Health(), "discord adapter: gateway disconnected since ")

	// The DM is written while the bot is away; RESUME replays it.
	_, id := b.srv.SendDM(ada, "are you there?")
	// REST does not depend on the gateway.
	res, err := b.send(ch, "during-outage", "still here")
	require.NoError(t, err)
	require.Len(t, res.PlatformMessageIDs, 1)
	require.Equal(t, []string{"still here"}, contents(b.srv.Sent(ch)))

	msgs := b.core.Wait(t, 2, waitFor)
	require.Len(t, msgs, 2, "the pending DM arrives once")
	require.Equal(t, "are you there?", msgs[1].Text)
	require.Equal(t, id, msgs[1].PlatformMessageID)
	eventually(t, func() bool { return b.adapter.Health() == nil }, "health never recovered")
	require.GreaterOrEqual(t, b.srv.Resumes(), 1, "the session is resumed")
	require.Equal(t, 1, b.srv.Identifies(), "not identified again")
}

func TestDMsNeedOnlyTheDirectMessagesIntent(t *testing.T) {
	t.Parallel()
	b := newBundleOn(t, discordtest.NewServer(t, discordtest.WithStrictIntents()))
	b.start(t)
	require.Equal(t, 1<<12|1<<13, b.srv.Intents(), "DIRECT_MESSAGES and their reactions: no privileged intent")
	b.srv.SendDM(ada, "can you read me?")
	msgs := b.core.Wait(t, 1, waitFor)
	require.Equal(t, "can you read me?", msgs[0].Text)
}

func TestEchoOfOwnRepliesIsIgnored(t *testing.T) {
	t.Parallel()
	b := newBundleOn(t, discordtest.NewServer(t, discordtest.WithEchoOwnMessages()))
	b.start(t)
	ch := b.greet(t, ada)
	_, err := b.send(ch, "run-1", "a reply Discord echoes back")
	require.NoError(t, err)
	b.srv.SendDM(ada, "sentinel")
	msgs := b.core.Wait(t, 2, waitFor)
	require.Len(t, msgs, 2)
	require.Equal(t, "sentinel", msgs[1].Text, "the echo of the bot's reply did not reach the core")
}

func TestStopDuringOutageIsPrompt(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.start(t) // its cleanup stops again, which is a no-op
	b.greet(t, ada)
	b.srv.Close() // the gateway drops and every reconnect is refused
	eventually(t, func() bool {
		return strings.Contains(b.logs.String(), "reconnecting to the discord gateway failed")
	}, "no failed reconnect was logged")
	require.ErrorContains(t, b.adapter.Health(), "gateway disconnected since")
	began := time.Now()
	require.NoError(t, b.adapter.Stop(context.Background()))
	require.Less(t, time.Since(began), time.Second, "the reconnect loop stops at once")
}

// A handler that can keep the message nowhere (a full inbound spool) is
// not tried again: the gateway's goroutine does not wait for nothing.
func TestALostMessageIsNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.core.FailTimes(1, fmt.Errorf("spool full: %w", core.ErrInboundLost))
	b.srv.SendDM(ada, "lost")
	b.srv.SendDM(ada, "next")
	got := b.core.Wait(t, 1, waitFor)
	require.Equal(t, "next", got[0].Text, "the lost message was tried once")
	require.NotContains(t, b.logs.String(), "retrying")
	require.Contains(t, b.logs.String(), "the message is dropped")
}
