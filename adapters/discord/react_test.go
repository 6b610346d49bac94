package discord

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestReactAndUnreact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	mid := b.core.Messages()[0].PlatformMessageID
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	require.NoError(t, b.adapter.React(ctx, ch, mid, "👍"))
	require.NoError(t, b.adapter.React(ctx, ch, mid, "🔥"))
	require.Equal(t, []string{"👍", "🔥"}, b.srv.BotReactions(mid))
	require.NoError(t, b.adapter.Unreact(ctx, ch, mid, "👍"))
	require.Equal(t, []string{"🔥"}, b.srv.BotReactions(mid), "the one taken back goes, the other stays")
	require.NoError(t, b.adapter.Unreact(ctx, ch, mid, "👍"), "one not there: no error")
	require.NoError(t, b.adapter.Unreact(ctx, ch, "100000000000999999", "🔥"), "a message gone has none")
	require.Equal(t, []string{"🔥"}, b.srv.BotReactions(mid))

	err := b.adapter.Unreact(ctx, ch, mid, "")
	require.Contains(t, permanentReason(t, err), "taking back a reaction on discord")
	b.srv.RateLimitNext("reactions", 50*time.Millisecond)
	require.NoError(t, b.adapter.Unreact(ctx, ch, mid, "🔥"), "a 429 waits and retries")
	require.Empty(t, b.srv.BotReactions(mid))

	b.srv.FailNext("reactions", http.StatusBadRequest, 10014, "Unknown Emoji")
	err = b.adapter.Unreact(ctx, ch, mid, "nope")
	require.True(t, core.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "10014")
}
