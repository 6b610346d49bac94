package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store/storetest"
)

// TestInboundTextAnyStoreCanKeep: a message whose text or sender name
// holds NUL or invalid UTF-8 (a platform payload may carry "\u0000")
// is stored with U+FFFD in their place on every store; PostgreSQL
// refused it, so the adapter retried it forever.
func TestInboundTextAnyStoreCanKeep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) setupOpts
	}{
		{"sqlite", func(*testing.T) setupOpts { return setupOpts{noStart: true} }},
		{"postgres", func(t *testing.T) setupOpts {
			return setupOpts{noStart: true, store: migrated(t, storetest.OpenPostgres(t))}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.opts(t))
			err := b.disp.HandleInbound(b.ctx, core.InboundMessage{
				Platform: web, ChannelThreadID: "u1", ChannelUserID: "u1",
				DisplayName: "Ada\x00", Text: "a\x00b \xff", PlatformMessageID: "in-1",
				SentAt: time.Now(), Direct: true,
			})
			require.NoError(t, err)
			msgs := b.messages(t, "u1")
			require.Len(t, msgs, 1)
			require.Equal(t, "a\uFFFDb \uFFFD", msgs[0].Content)
			conv, err := b.store.ConversationByThread(b.ctx, web, "u1")
			require.NoError(t, err)
			require.Equal(t, "Ada\uFFFD", conv.DisplayName)
		})
	}
}
