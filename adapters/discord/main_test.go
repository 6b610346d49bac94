package discord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// TestMain fails the run if a test leaves a gateway reader, a heartbeat, a
// reconnect loop or an HTTP connection of the adapter behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitFor = 10 * time.Second

// The users the tests play.
var (
	ada   = discordtest.User{ID: "100000000000000001", Username: "ada", GlobalName: "Ada Lovelace"}
	grace = discordtest.User{ID: "100000000000000002", Username: "grace_h"}
)

type testBundle struct {
	srv     *discordtest.Server
	adapter *Adapter
	core    *adaptertest.Recorder
	logs    *coretest.Logs
}

// newBundle returns an adapter pointed at a fresh fake, provisioned and
// validated but not started; configure changes it before validation.
func newBundle(t *testing.T, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	return newBundleOn(t, discordtest.NewServer(t), configure...)
}

// newBundleOn is newBundle with a fake the test configured.
func newBundleOn(t *testing.T, srv *discordtest.Server, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	b := &testBundle{srv: srv, core: adaptertest.NewRecorder(), logs: &coretest.Logs{}}
	a := New()
	a.Token = config.Secret(b.srv.Token())
	a.APIURL = b.srv.URL()
	a.serverBackoff = time.Millisecond
	a.reconnectMin, a.reconnectMax = 10*time.Millisecond, 100*time.Millisecond
	for _, c := range configure {
		c(a)
	}
	log := b.logs.Logger()
	require.NoError(t, a.Provision(context.Background(), core.Env{Logger: log}))
	require.NoError(t, a.Validate())
	b.adapter = a
	return b
}

// setup is newBundle plus Start, with Stop at cleanup.
func setup(t *testing.T, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	b := newBundle(t, configure...)
	b.start(t)
	return b
}

func (b *testBundle) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.Start(ctx, b.core))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.adapter.Stop(ctx))
		require.NotContains(t, b.logs.String(), b.srv.Token(), "the token leaked into the logs")
	})
}

// send sends text to a channel through the adapter.
func (b *testBundle) send(channelID, key, text string) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: channelID, Text: text, IdempotencyKey: key})
}

// greet makes user write to the bot, waits for the core to get it and
// returns the DM channel.
func (b *testBundle) greet(t *testing.T, user discordtest.User) string {
	t.Helper()
	n := len(b.core.Messages())
	ch, _ := b.srv.SendDM(user, "hello")
	b.core.Wait(t, n+1, waitFor)
	return ch
}

// eventually waits for cond, failing after waitFor.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, msg)
		}
		<-tick.C
	}
}

// permanentReason returns the reason of a *core.PermanentError.
func permanentReason(t *testing.T, err error) string {
	t.Helper()
	var pe *core.PermanentError
	require.True(t, errors.As(err, &pe), "want a permanent error, got %v", err)
	return pe.Reason
}

// contents lists the texts of sent messages.
func contents(sent []discordtest.SentMessage) []string {
	out := make([]string, len(sent))
	for i, m := range sent {
		out[i] = m.Content
	}
	return out
}

// ids lists the message ids of sent messages as SendResult has them.
func ids(sent []discordtest.SentMessage) []string {
	out := make([]string, len(sent))
	for i, m := range sent {
		out[i] = m.MessageID
	}
	return out
}
