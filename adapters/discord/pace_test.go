package discord

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/pace"
)

// t0 is where the paced tests' clock starts.
var t0 = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

// slotClock is a coretest.Clock that remembers when its timers are due,
// so that a test can move time straight to the next one: the pacer's next
// slot, whatever margin the pacer keeps under the platform's rate.
type slotClock struct {
	*coretest.Clock
	mu  sync.Mutex
	due []time.Time
}

func (c *slotClock) NewTimer(d time.Duration) core.Timer {
	c.mu.Lock()
	c.due = append(c.due, c.Now().Add(d))
	c.mu.Unlock()
	return c.Clock.NewTimer(d)
}

// advanceToNext moves the clock to the earliest timer due after now.
// Call it only while the sends are asleep on the clock (WaitForTimer),
// so that no timer is being made meanwhile.
func (c *slotClock) advanceToNext(t *testing.T) {
	t.Helper()
	now := c.Now()
	var next time.Time
	c.mu.Lock()
	for _, d := range c.due {
		if d.After(now) && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	c.mu.Unlock()
	require.False(t, next.IsZero(), "no timer to move the clock to")
	c.Advance(next.Sub(now))
}

// newPacedBundle starts an adapter on a clock the test moves, against a
// fake that limits every channel to burst messages, then one a second,
// by the same clock.
func newPacedBundle(t *testing.T, burst int, configure ...func(*Adapter)) (*testBundle, *slotClock) {
	t.Helper()
	clock := &slotClock{Clock: coretest.NewClock(t0)}
	srv := discordtest.NewServer(t, discordtest.WithNow(clock.Now), discordtest.WithChannelRateLimit(burst, time.Second))
	b := newBundleOn(t, srv, append([]func(*Adapter){func(a *Adapter) { a.clock = clock }}, configure...)...)
	b.start(t)
	return b, clock
}

// stepSlots lets the requests after the first go, one slot at a time:
// while the next waits on the clock, none went early (count, what the
// fake has seen, stays); moved to its slot, it goes.
func stepSlots(t *testing.T, clock *slotClock, count func() int, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		clock.WaitForTimer(t, clock.Now().Add(2*time.Second), waitFor)
		require.Equal(t, i, count(), "request %d went before its slot", i+1)
		clock.advanceToNext(t)
		eventually(t, func() bool { return count() > i }, "request "+strconv.Itoa(i+1)+" did not go at its slot")
	}
}

// inBackground runs send in a goroutine; the channel gets its error. The
// sends' context ends with the test, so none outlives it.
func inBackground(t *testing.T, send func(ctx context.Context) error) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- send(ctx) }()
	return done
}

// await returns what done delivers, failing after waitFor.
func await(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitFor):
		t.Fatal("the sends did not finish")
		return nil
	}
}

// requirePaced checks the times requests reached the fake: the first
// burst at t0, then each at least a second after the one before
// (Discord's rate) and within a quarter second more (the pacer's margin
// under it, not a stall).
func requirePaced(t *testing.T, at []time.Time, burst int) {
	t.Helper()
	for i, ti := range at {
		if i < burst {
			require.Equal(t, t0, ti, "request %d is in the burst", i+1)
			continue
		}
		gap := ti.Sub(at[i-1])
		require.GreaterOrEqual(t, gap, time.Second, "request %d after %v", i+1, gap)
		require.Less(t, gap, 1250*time.Millisecond, "request %d after %v", i+1, gap)
	}
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
	done := inBackground(t, func(ctx context.Context) error {
		for i := range n {
			key := "burst-" + strconv.Itoa(i)
			if _, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: ch, Text: "message " + strconv.Itoa(i), IdempotencyKey: key}); err != nil {
				return err
			}
		}
		return nil
	})

	b.srv.WaitSent(t, ch, 5, waitFor)
	stepSlots(t, clock, func() int { return len(b.srv.Sent(ch)) }, 5, n)
	require.NoError(t, await(t, done))

	require.Zero(t, b.srv.RateLimited(), "no message found the limit by a 429")
	require.Equal(t, n, b.srv.Calls("messages"), "each message sent once")
	sent := b.srv.Sent(ch)
	want := make([]string, n)
	for i := range want {
		want[i] = "message " + strconv.Itoa(i)
	}
	require.Equal(t, want, contents(sent), "all delivered, in order")
	requirePaced(t, times(sent), 5)
}

func TestEveryMessageRequestIsPaced(t *testing.T) {
	t.Parallel()
	// One message a second, on both sides, shows every request waiting
	// its turn: a refused part and its plain text, split parts, an image.
	b, clock := newPacedBundle(t, 1, func(a *Adapter) { a.SendRate = pace.Limits{PerChatPerSecond: 1, PerChatBurst: 1} })
	ch := b.greet(t, ada)
	b.srv.RefuseNextMarkup()
	long := strings.Repeat("word ", 600) // 3000 characters: two parts
	done := inBackground(t, func(ctx context.Context) error {
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
	stepSlots(t, clock, calls, 1, 5)
	require.NoError(t, await(t, done))

	require.Zero(t, b.srv.RateLimited())
	require.Equal(t, 5, calls())
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 4, "the refused part created nothing")
	require.Equal(t, "refused markup", sent[0].Content, "the refused part's plain text")
	require.Equal(t, long, sent[1].Content+sent[2].Content)
	require.Equal(t, "a cat", sent[3].Embeds[0].Description)
	// The refused request, which created nothing, took the slot at t0.
	requirePaced(t, append([]time.Time{t0}, times(sent)...), 1)
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
	err = await(t, done)
	require.ErrorIs(t, err, context.Canceled)
	var pe *core.PermanentError
	require.NotErrorAs(t, err, &pe, "the message may go later")
	require.Equal(t, 1, b.srv.Calls("messages"), "nothing sent")
}
