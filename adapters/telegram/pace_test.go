package telegram

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

func TestSendRateConfig(t *testing.T) {
	t.Parallel()
	telegramLimits := pace.Limits{PerSecond: 30, PerChatPerSecond: 1, PerChatBurst: 3}
	require.Equal(t, telegramLimits, New().SendRate, "Telegram's documented limits by default")

	decode := func(src string) (*Adapter, error) {
		var node yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte(src), &node))
		a := New()
		a.Token = "123:abc"
		return a, config.Section{Node: node.Content[0], Path: "adapters.telegram"}.Decode(a)
	}
	a, err := decode("send_rate: {per_second: 25}")
	require.NoError(t, err)
	require.Equal(t, pace.Limits{PerSecond: 25, PerChatPerSecond: 1, PerChatBurst: 3}, a.SendRate, "a key left out keeps its default")
	require.NoError(t, a.Validate())

	a, err = decode("send_rate: {per_second: 0, per_chat_per_second: 0.5, per_chat_burst: 0}")
	require.NoError(t, err)
	require.Equal(t, pace.Limits{PerChatPerSecond: 0.5}, a.SendRate, "an explicit 0 is no limit")
	require.NoError(t, a.Validate())

	a, err = decode("mode: polling")
	require.NoError(t, err)
	require.Equal(t, telegramLimits, a.SendRate)

	_, err = decode("send_rate: {burst: 3}")
	require.ErrorContains(t, err, "adapters.telegram.send_rate.burst")

	a, err = decode("send_rate: {per_second: -1, per_chat_burst: -3}")
	require.NoError(t, err)
	err = a.Validate()
	require.ErrorContains(t, err, "telegram adapter: send_rate.per_second must be 0 (no limit) or more, got -1")
	require.ErrorContains(t, err, "telegram adapter: send_rate.per_chat_burst must be 0 (meaning 1) or more, got -3")
}

// TestSendsGoAtTheChatsPace checks that every message-creating call (a
// photo, a formatted part Telegram refuses and its plain resend, a text)
// waits at the send_rate pace, and that typing does not.
func TestSendsGoAtTheChatsPace(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	// No bot-wide rate: its slots would wait on the clock between any two
	// sends.
	b := setup(t, func(a *Adapter) { a.clock, a.SendRate = clock, pace.Limits{PerChatPerSecond: 1, PerChatBurst: 3} })
	b.greet(t, ada)
	ctx := context.Background()
	thread := strconv.FormatInt(ada.ID, 10)

	_, err := b.adapter.SendImage(ctx, core.OutboundMessage{ChannelThreadID: thread, ImageURL: "https://example.com/cat.png"})
	require.NoError(t, err)
	b.srv.RefuseNextMarkup()
	_, err = b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: thread, Text: "**bold**", Format: core.FormatRichText})
	require.NoError(t, err)
	require.Equal(t, 2, b.srv.Calls("sendMessage"), "refused, then sent as plain text")

	// Ada's burst of three is spent: the next message waits a second (and
	// the margin), on the adapter's clock.
	done := make(chan error, 1)
	go func() {
		_, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: thread, Text: "fourth"})
		done <- err
	}()
	perChat := 1.0
	every := time.Duration(float64(time.Second) / (perChat * (1 - pace.Margin)))
	clock.WaitForTimer(t, clock.Now().Add(every), waitFor)
	// Typing is not a message: it goes meanwhile.
	require.NoError(t, b.adapter.Typing(ctx, thread))
	require.Equal(t, []string{"typing"}, b.srv.ChatActions(ada.ID))
	require.Equal(t, 2, b.srv.Calls("sendMessage"))
	// Another chat is not held up.
	b.greet(t, grace)
	_, err = b.send(grace.ID, "hello grace")
	require.NoError(t, err)

	clock.Advance(every)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		require.FailNow(t, "the fourth message never went")
	}
	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 3)
	require.Equal(t, "fourth", sent[2].Text)
}

// TestReplyIsNotQueuedBehindABurst sends a burst of scheduled messages to
// forty chats at 20 a second and, once it is under way, one user's reply:
// the reply reaches Telegram at the next slot, ahead of most of the burst.
func TestReplyIsNotQueuedBehindABurst(t *testing.T) {
	t.Parallel()
	const burst = 40
	b := setup(t, func(a *Adapter) { a.SendRate = pace.Limits{PerSecond: 20} })
	b.greet(t, ada)
	b.srv.SetLatency(5 * time.Millisecond)
	for i := range burst {
		b.srv.AddChat(int64(500 + i))
	}
	bg := core.WithBackground(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, burst)
	for i := range burst {
		wg.Go(func() {
			_, err := b.adapter.Send(bg, core.OutboundMessage{ChannelThreadID: strconv.Itoa(500 + i), Text: fmt.Sprint("scheduled ", i)})
			errs <- err
		})
	}
	b.srv.WaitCalls(t, "sendMessage", 2, waitFor)
	_, err := b.send(ada.ID, "your answer")
	require.NoError(t, err)
	before := 0
	for _, m := range b.srv.AllSent() {
		if m.ChatID == ada.ID {
			break
		}
		before++
	}
	require.Less(t, before, burst/4, "the reply waited behind %d scheduled messages", before)

	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, b.srv.AllSent(), burst+1)
}
