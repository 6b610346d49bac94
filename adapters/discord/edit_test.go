package discord

import (
	"context"
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
