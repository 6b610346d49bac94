package discord

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
)

// Two replicas run shards 0 and 1 of 2: each identifies with its shard,
// DMs arrive at shard 0's replica only, and either replica sends.
func TestShardsSplitTheGateway(t *testing.T) {
	t.Parallel()
	srv := discordtest.NewServer(t)
	zero := newBundleOn(t, srv, func(a *Adapter) { a.ShardID, a.ShardCount = 0, 2 })
	one := newBundleOn(t, srv, func(a *Adapter) { a.ShardID, a.ShardCount = 1, 2 })
	zero.start(t)
	one.start(t)
	require.Equal(t, [][2]int{{0, 2}, {1, 2}}, srv.Shards())

	ch := zero.greet(t, ada)
	require.Equal(t, "hello", zero.core.Messages()[0].Text)
	require.Empty(t, one.core.Messages(), "DMs go to shard 0")

	_, err := one.send(ch, "k1", "from shard 1")
	require.NoError(t, err)
	require.Equal(t, "from shard 1", srv.WaitSent(t, ch, 1, waitFor)[0].Content)
}
