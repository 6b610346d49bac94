package discord

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/pace/pacetest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

// t0 is where the paced tests' clock starts.
var t0 = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

// newPacedBundle starts an adapter on a clock the test moves, against a
// fake that limits every channel to burst messages, then one a second,
// by the same clock.
func newPacedBundle(t *testing.T, burst int, configure ...func(*Adapter)) (*testBundle, *pacetest.Clock) {
	t.Helper()
	clock := pacetest.NewClock(t0)
	srv := discordtest.NewServer(t, discordtest.WithNow(clock.Now), discordtest.WithChannelRateLimit(burst, time.Second))
	b := newBundleOn(t, srv, append([]func(*Adapter){func(a *Adapter) { a.clock = clock }}, configure...)...)
	b.start(t)
	return b, clock
}

// times lists when the fake accepted sent messages.
func times(sent []discordtest.SentMessage) []time.Time {
	out := make([]time.Time, len(sent))
	for i, m := range sent {
		out[i] = m.At
	}
	return out
}

func TestBurstToAChannelKeepsDiscordsPace(t *testing.T) {
	t.Parallel()
	// Discord's 5 per 5 s per channel, against the default send_rate.
	b, clock := newPacedBundle(t, 5)
	ch := b.greet(t, ada)
	const n = 8
	done := pacetest.Go(t, func(ctx context.Context) error {
		for i := range n {
			key := "burst-" + strconv.Itoa(i)
			if _, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: ch, Text: "message " + strconv.Itoa(i), IdempotencyKey: key}); err != nil {
				return err
			}
		}
		return nil
	})

	b.srv.WaitSent(t, ch, 5, waitFor)
	pacetest.StepSlots(t, clock, func() int { return len(b.srv.Sent(ch)) }, 5, n)
	require.NoError(t, pacetest.Await(t, done))

	require.Zero(t, b.srv.RateLimited(), "no message found the limit by a 429")
	require.Equal(t, n, b.srv.Calls("messages"), "each message sent once")
	sent := b.srv.Sent(ch)
	want := make([]string, n)
	for i := range want {
		want[i] = "message " + strconv.Itoa(i)
	}
	require.Equal(t, want, contents(sent), "all delivered, in order")
	pacetest.RequirePaced(t, times(sent), t0, 5, time.Second)
}

func TestEveryMessageRequestIsPaced(t *testing.T) {
	t.Parallel()
	// One message a second, on both sides, shows every request waiting
	// its turn: a refused part and its plain text, split parts, an image.
	b, clock := newPacedBundle(t, 1, func(a *Adapter) { a.SendRate = pace.Limits{PerChatPerSecond: 1, PerChatBurst: 1} })
	ch := b.greet(t, ada)
	b.srv.RefuseNextMarkup()
	long := strings.Repeat("word ", 600) // 3000 characters: two parts
	done := pacetest.Go(t, func(ctx context.Context) error {
		for _, msg := range []core.OutboundMessage{
			{ChannelThreadID: ch, Text: "**refused** markup", Format: core.FormatRichText, IdempotencyKey: "rich"},
			{ChannelThreadID: ch, Text: long, IdempotencyKey: "long"},
		} {
			if _, err := b.adapter.Send(ctx, msg); err != nil {
				return err
			}
		}
		_, err := b.adapter.SendImage(ctx, core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/cat.png", Text: "a cat", IdempotencyKey: "image"})
		return err
	})

	calls := func() int { return b.srv.Calls("messages") }
	eventually(t, func() bool { return calls() == 1 }, "the first request")
	pacetest.StepSlots(t, clock, calls, 1, 5)
	require.NoError(t, pacetest.Await(t, done))

	require.Zero(t, b.srv.RateLimited())
	require.Equal(t, 5, calls())
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 4, "the refused part created nothing")
	require.Equal(t, "refused markup", sent[0].Content, "the refused part's plain text")
	require.Equal(t, long, sent[1].Content+sent[2].Content)
	require.Equal(t, "a cat", sent[3].Embeds[0].Description)
	// The refused request, which created nothing, took the slot at t0.
	pacetest.RequirePaced(t, append([]time.Time{t0}, times(sent)...), t0, 1, time.Second)
}

func TestSendRateConfig(t *testing.T) {
	t.Parallel()
	require.Equal(t, pace.Limits{PerSecond: 0, PerChatPerSecond: 1, PerChatBurst: 5}, New().SendRate,
		"default: Discord's 5 per 5 s per channel; discordgo keeps the global limit")

	decode := func(t *testing.T, src string) (*Adapter, error) {
		t.Helper()
		var node yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte("token: MTIz.abc.def\n"+src), &node))
		a := New()
		return a, config.Section{Node: node.Content[0], Path: "adapters.discord"}.Decode(a)
	}
	a, err := decode(t, "send_rate:\n  per_chat_burst: 2\n")
	require.NoError(t, err)
	require.Equal(t, pace.Limits{PerChatPerSecond: 1, PerChatBurst: 2}, a.SendRate, "keys not given keep their defaults")
	require.NoError(t, a.Validate())

	a, err = decode(t, "send_rate: {per_second: 40, per_chat_per_second: 0.5, per_chat_burst: 0}\n")
	require.NoError(t, err)
	require.Equal(t, pace.Limits{PerSecond: 40, PerChatPerSecond: 0.5}, a.SendRate, "an explicit 0 is no limit")
	require.NoError(t, a.Validate())

	_, err = decode(t, "send_rate: {burst: 3}\n")
	require.ErrorContains(t, err, "adapters.discord.send_rate.burst", "unknown keys are refused")

	for _, key := range []string{"per_second", "per_chat_per_second", "per_chat_burst"} {
		a, err := decode(t, "send_rate: {"+key+": -1}\n")
		require.NoError(t, err, key)
		err = a.Validate()
		require.Error(t, err, key)
		require.True(t, strings.HasPrefix(err.Error(), "discord adapter: adapters.discord.send_rate."+key), err.Error())
		require.Contains(t, err.Error(), "got -1")
		require.NotContains(t, err.Error(), "\n", "one problem, one line")
	}
	a, err = decode(t, "send_rate: {per_second: -1, per_chat_per_second: .nan}\n")
	require.NoError(t, err)
	lines := strings.Split(a.Validate().Error(), "\n")
	require.Len(t, lines, 2, "each problem reported")
	require.Contains(t, lines[0], "discord adapter: adapters.discord.send_rate.per_second")
	require.Contains(t, lines[1], "discord adapter: adapters.discord.send_rate.per_chat_per_second")
	require.Contains(t, lines[1], "NaN")
}

func TestSendWaitingForItsSlotEndsWithItsContext(t *testing.T) {
	t.Parallel()
	b, clock := newPacedBundle(t, 1, func(a *Adapter) { a.SendRate = pace.Limits{PerChatPerSecond: 1, PerChatBurst: 1} })
	ch := b.greet(t, ada)
	_, err := b.send(ch, "first", "takes the slot")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: ch, Text: "waits", IdempotencyKey: "second"})
		done <- err
	}()
	clock.WaitForTimer(t, clock.Now().Add(2*time.Second), waitFor)
	cancel()
	err = pacetest.Await(t, done)
	require.ErrorIs(t, err, context.Canceled)
	var pe *core.PermanentError
	require.NotErrorAs(t, err, &pe, "the message may go later")
	require.Equal(t, 1, b.srv.Calls("messages"), "nothing sent")
}
