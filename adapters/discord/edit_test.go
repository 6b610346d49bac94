package discord

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestEditMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	res, err := b.send(ch, "run-60", "half an answer")
	require.NoError(t, err)
	id := res.PlatformMessageIDs[0]
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	require.NoError(t, b.adapter.EditMessage(ctx, id, core.OutboundMessage{ChannelThreadID: ch, Text: "The **whole** answer.", Format: core.FormatRichText}))
	m, _ := b.srv.Message(id)
	require.Equal(t, bodyContents("The **whole** answer.", core.FormatRichText), []string{m.Content}, "rendered as Send renders it")
	require.Equal(t, "The whole answer.", m.Shown().Text)

	long := strings.Repeat("a", 1500) + "\n\n" + strings.Repeat("b", 1500)
	require.NoError(t, b.adapter.EditMessage(ctx, id, core.OutboundMessage{ChannelThreadID: ch, Text: long}))
	m, _ = b.srv.Message(id)
	require.Equal(t, bodyContents(long, core.FormatText)[0], m.Content, "cut where Send cuts its first part")
	require.Len(t, m.Edits, 2)

	err = b.adapter.EditMessage(ctx, "1234567890123", core.OutboundMessage{ChannelThreadID: ch, Text: "x"})
	require.True(t, core.IsPermanent(err), "an unknown message: %v", err)
	require.Contains(t, permanentReason(t, err), "10008")
	err = b.adapter.EditMessage(ctx, id, core.OutboundMessage{ChannelThreadID: ch, Text: ""})
	require.True(t, core.IsPermanent(err))
	err = b.adapter.EditMessage(ctx, "../x", core.OutboundMessage{ChannelThreadID: ch, Text: "x"})
	require.True(t, core.IsPermanent(err))
}

func TestDeleteMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	res, err := b.send(ch, "run-61", "to take back")
	require.NoError(t, err)
	id := res.PlatformMessageIDs[0]
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	require.NoError(t, b.adapter.DeleteMessage(ctx, ch, id))
	require.Empty(t, b.srv.Visible(ch))
	require.NoError(t, b.adapter.DeleteMessage(ctx, ch, id), "already gone is not an error")
	require.NoError(t, b.adapter.DeleteMessage(ctx, ch, "1234567890123"), "never there neither")
	require.Equal(t, 3, b.srv.Calls("messages.delete"))

	b.srv.FailNext("messages.delete", 500, 0, "Internal Server Error")
	res, err = b.send(ch, "run-62", "again")
	require.NoError(t, err)
	require.NoError(t, b.adapter.DeleteMessage(ctx, ch, res.PlatformMessageIDs[0]), "a 5xx is retried")
	require.Empty(t, b.srv.Visible(ch))
	require.True(t, core.IsPermanent(b.adapter.DeleteMessage(ctx, "999999999999999999", id)), "unknown channel")
}

func TestPartialNeverWaitsInDiscordgosLimiter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	s := startStream(t, b, ch, "run-63", core.FormatText)
	require.NoError(t, update(s, "One"))
	b.adapter.mu.Lock()
	session := b.adapter.session
	b.adapter.mu.Unlock()

	// Another request holds the edits' bucket: the partial does not queue.
	bucket := session.Ratelimiter.GetBucket(discordgo.EndpointChannelMessage(ch, ""))
	bucket.Lock()
	began := time.Now()
	require.ErrorIs(t, update(s, "One, two"), core.ErrStreamBusy)
	bucket.Unlock()
	// Discord said the bucket is exhausted for a while: skipped at once.
	bucket.Lock()
	bucket.Remaining = 0
	bucket.Release(map[string][]string{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset-After": {"30"}})
	require.ErrorIs(t, update(s, "One, two"), core.ErrStreamBusy)
	require.Less(t, time.Since(began), time.Second)
	require.Zero(t, b.srv.Calls("messages.edit"))
}

func TestEditGate(t *testing.T) {
	t.Parallel()
	g := newEditGate()
	const ch = "1"
	for i := range 5 {
		require.Zero(t, g.wait(ch, t0.Add(time.Duration(i)*time.Second/2), true))
		g.take(ch, t0.Add(time.Duration(i)*time.Second/2))
	}
	now := t0.Add(2500 * time.Millisecond)
	require.Equal(t, 2500*time.Millisecond, g.wait(ch, now, true), "the 6th waits for the oldest to leave the window")
	require.Zero(t, g.wait(ch, now, false), "creates are not edits")
	require.Zero(t, g.wait("2", now, true), "each channel has its own window")
	require.Zero(t, g.wait(ch, t0.Add(5*time.Second), true))

	g.holdBack(ch, t0.Add(9*time.Second))
	require.Equal(t, 2*time.Second, g.wait(ch, t0.Add(7*time.Second), false), "a 429 holds creates back too")
	require.Zero(t, g.wait(ch, t0.Add(9*time.Second), true))

	// Channels edited long ago are forgotten.
	g.sweepAt = 3
	for i := range 3 {
		g.take(strconv.Itoa(i+10), t0)
	}
	g.take(ch, t0.Add(time.Minute))
	require.Equal(t, 1, len(g.recent), "only the channel edited lately")
	require.Equal(t, minSweep, g.sweepAt)
}
