package slack

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/pace/pacetest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

// t0 is where the paced tests' clock starts. No event is handed to the
// core meanwhile (whose ack budget is a real deadline from the clock's
// time): the tests reach the DM with conversations.open.
var t0 = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

// newPacedBundle starts an adapter (events mode: no socket) with the
// default send_rate (unless configure changes it) on a clock the test
// moves, against a fake that limits every channel to burst
// posts, then one a second, by the same clock; it returns the DM with
// ada.
func newPacedBundle(t *testing.T, burst int, configure ...func(*Adapter)) (*testBundle, *pacetest.Clock, string) {
	t.Helper()
	clock := pacetest.NewClock(t0)
	srv := slacktest.NewServer(t, slacktest.WithNow(clock.Now), slacktest.WithChannelRateLimit(burst, time.Second))
	paced := func(a *Adapter) { a.clock, a.SendRate = clock, New().SendRate }
	b := newBundleOn(t, srv, ModeEvents, append([]func(*Adapter){paced}, configure...)...)
	b.start(t)
	srv.AddUser(ada)
	ctx, cancel := contextWithTimeout()
	defer cancel()
	dm, err := b.adapter.OpenDM(ctx, ada.ID)
	require.NoError(t, err)
	return b, clock, dm
}

// times lists when the fake accepted posted messages.
func times(sent []slacktest.SentMessage) []time.Time {
	out := make([]time.Time, len(sent))
	for i, m := range sent {
		out[i] = m.At
	}
	return out
}

func TestBurstToAChannelKeepsSlacksPace(t *testing.T) {
	t.Parallel()
	// chat.postMessage's one a second per channel with a short burst,
	// against the default send_rate.
	b, clock, dm := newPacedBundle(t, 3)
	const n = 6
	done := pacetest.Go(t, func(ctx context.Context) error {
		for i := range n {
			if _, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: dm, Text: "message " + strconv.Itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	})

	b.srv.WaitSent(t, dm, 3, waitFor)
	pacetest.StepSlots(t, clock, func() int { return len(b.srv.Sent(dm)) }, 3, n)
	require.NoError(t, pacetest.Await(t, done))

	require.Zero(t, b.srv.RateLimited(), "no message found the limit by a 429")
	require.Equal(t, n, b.srv.Calls("chat.postMessage"), "each message posted once")
	sent := b.srv.Sent(dm)
	want := make([]string, n)
	for i := range want {
		want[i] = "message " + strconv.Itoa(i)
	}
	require.Equal(t, want, texts(sent), "all delivered, in order")
	pacetest.RequirePaced(t, times(sent), t0, 3, time.Second)
}

func TestEveryPostIsPaced(t *testing.T) {
	t.Parallel()
	// One post a second, on both sides, shows every post waiting its
	// turn: a refused post and its plain text, split parts, an image.
	b, clock, dm := newPacedBundle(t, 1, func(a *Adapter) { a.SendRate = pace.Limits{PerChatPerSecond: 1, PerChatBurst: 1} })
	b.srv.RefuseNextMarkup()
	long := strings.Repeat("word ", 1000) // 5000 characters: two parts
	done := pacetest.Go(t, func(ctx context.Context) error {
		for _, msg := range []core.OutboundMessage{
			{ChannelThreadID: dm, Text: "**refused** markup", Format: core.FormatRichText},
			// Addressed by user id: paced by the DM it goes to.
			{ChannelThreadID: ada.ID, Text: long},
		} {
			if _, err := b.adapter.Send(ctx, msg); err != nil {
				return err
			}
		}
		_, err := b.adapter.SendImage(ctx, core.OutboundMessage{ChannelThreadID: dm, ImageURL: "https://example.com/cat.png", Text: "a cat"})
		return err
	})

	calls := func() int { return b.srv.Calls("chat.postMessage") }
	eventually(t, func() bool { return calls() == 1 }, "the first post")
	pacetest.StepSlots(t, clock, calls, 1, 5)
	require.NoError(t, pacetest.Await(t, done))

	require.Zero(t, b.srv.RateLimited())
	require.Equal(t, 5, calls())
	sent := b.srv.Sent(dm)
	require.Len(t, sent, 4, "the refused post was not posted")
	require.Equal(t, "refused markup", sent[0].Text, "the refused post's plain text")
	require.False(t, sent[0].Mrkdwn)
	require.Equal(t, long, sent[1].Text+sent[2].Text)
	require.Equal(t, "a cat", sent[3].Text)
	require.NotEmpty(t, sent[3].Blocks)
	// The refused post, which posted nothing, took the slot at t0.
	pacetest.RequirePaced(t, append([]time.Time{t0}, times(sent)...), t0, 1, time.Second)
}

func TestSendRateConfig(t *testing.T) {
	t.Parallel()
	require.Equal(t, pace.Limits{PerSecond: 0, PerChatPerSecond: 1, PerChatBurst: 3}, New().SendRate,
		"default: chat.postMessage's one a second per channel, short bursts allowed")

	decode := func(t *testing.T, src string) (*Adapter, error) {
		t.Helper()
		var node yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte("bot_token: xoxb-1-2-abc\napp_token: xapp-1-A1-3\n"+src), &node))
		a := New()
		return a, config.Section{Node: node.Content[0], Path: "adapters.slack"}.Decode(a)
	}
	a, err := decode(t, "send_rate:\n  per_chat_burst: 5\n")
	require.NoError(t, err)
	require.Equal(t, pace.Limits{PerChatPerSecond: 1, PerChatBurst: 5}, a.SendRate, "keys not given keep their defaults")
	require.NoError(t, a.Validate())

	a, err = decode(t, "send_rate: {per_second: 2, per_chat_per_second: 0, per_chat_burst: 0}\n")
	require.NoError(t, err)
	require.Equal(t, pace.Limits{PerSecond: 2}, a.SendRate, "an explicit 0 is no limit")
	require.NoError(t, a.Validate())

	_, err = decode(t, "send_rate: {burst: 3}\n")
	require.ErrorContains(t, err, "adapters.slack.send_rate.burst", "unknown keys are refused")

	for _, key := range []string{"per_second", "per_chat_per_second", "per_chat_burst"} {
		a, err := decode(t, "send_rate: {"+key+": -1}\n")
		require.NoError(t, err, key)
		err = a.Validate()
		require.Error(t, err, key)
		require.True(t, strings.HasPrefix(err.Error(), "slack adapter: adapters.slack.send_rate."+key), err.Error())
		require.Contains(t, err.Error(), "got -1")
		require.NotContains(t, err.Error(), "\n", "one problem, one line")
	}
	a, err = decode(t, "send_rate: {per_second: -1, per_chat_per_second: .inf}\n")
	require.NoError(t, err)
	lines := strings.Split(a.Validate().Error(), "\n")
	require.Len(t, lines, 2, "each problem reported")
	require.Contains(t, lines[0], "slack adapter: adapters.slack.send_rate.per_second")
	require.Contains(t, lines[1], "slack adapter: adapters.slack.send_rate.per_chat_per_second")
}

func TestSendWaitingForItsSlotEndsWithItsContext(t *testing.T) {
	t.Parallel()
	b, clock, dm := newPacedBundle(t, 1, func(a *Adapter) { a.SendRate = pace.Limits{PerChatPerSecond: 1, PerChatBurst: 1} })
	_, err := b.send(dm, "takes the slot")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: dm, Text: "waits"})
		done <- err
	}()
	clock.WaitForTimer(t, clock.Now().Add(2*time.Second), waitFor)
	cancel()
	err = pacetest.Await(t, done)
	require.ErrorIs(t, err, context.Canceled)
	var pe *core.PermanentError
	require.NotErrorAs(t, err, &pe, "the message may go later")
	require.Equal(t, 1, b.srv.Calls("chat.postMessage"), "nothing posted")
}
