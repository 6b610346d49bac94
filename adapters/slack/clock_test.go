package slack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// liveCtxHost is the recorder failing, as the core's store does, once the
// context it is handed has ended.
type liveCtxHost struct{ *adaptertest.Recorder }

func (h liveCtxHost) HandleInbound(ctx context.Context, msg core.InboundMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return h.Recorder.HandleInbound(ctx, msg)
}

// On a clock that is not the wall's (a test's, days behind), a DM still
// reaches the core: the ack budget is measured on the adapter's clock,
// not as a context deadline in wall time that has passed already.
func TestDMReachesTheCoreOnAClockBehindTheWall(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeSocket)
	b.adapter.clock = coretest.NewClock(time.Now().Add(-6 * 24 * time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.Start(ctx, liveCtxHost{b.core}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.adapter.Stop(ctx))
	})
	b.srv.SendDM(grace, "hello")
	require.Equal(t, "hello", b.core.Wait(t, 1, waitFor)[0].Text, "logs:\n%s", b.logs)
}
