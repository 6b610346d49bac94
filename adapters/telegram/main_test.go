package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// TestMain fails the run if a test leaves a poller, a webhook request or an
// HTTP connection of the adapter behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitFor = 10 * time.Second

// The users the tests play.
var (
	ada   = telegramtest.User{ID: 100001, FirstName: "Ada", LastName: "Lovelace", Username: "ada"}
	grace = telegramtest.User{ID: 100002, Username: "grace_h"}
)

type testBundle struct {
	srv     *telegramtest.Server
	adapter *Adapter
	core    *adaptertest.Recorder
	logs    *coretest.Logs
}

// newBundle returns an adapter pointed at a fresh fake, provisioned and
// validated but not started; configure changes it before validation.
func newBundle(t *testing.T, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	return newBundleOn(t, telegramtest.NewServer(t), configure...)
}

// newBundleOn is newBundle with the fake srv (made with options).
func newBundleOn(t *testing.T, srv *telegramtest.Server, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	b := &testBundle{srv: srv, core: adaptertest.NewRecorder(), logs: &coretest.Logs{}}
	a := New()
	a.Token = config.Secret(b.srv.Token())
	a.APIURL = b.srv.URL()
	a.serverBackoff = time.Millisecond
	a.pollBackoffMin, a.pollBackoffMax = time.Millisecond, 20*time.Millisecond
	// Unpaced unless a test paces it (pace_test.go): at Telegram's pace a
	// long reply's fourth part would go a second after the first.
	a.SendRate = pace.Limits{}
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

// send sends text to a chat through the adapter.
func (b *testBundle) send(chatID int64, text string) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: strconv.FormatInt(chatID, 10), Text: text})
}

// greet makes user write to the bot and waits for the core to get it, so
// the fake knows the chat.
func (b *testBundle) greet(t *testing.T, user telegramtest.User) {
	t.Helper()
	n := len(b.core.Messages())
	b.srv.SendPrivate(user, "hello")
	b.core.Wait(t, n+1, waitFor)
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

// fmtAll prints the adapter's config the ways a careless log line might.
func fmtAll(a *Adapter) string {
	return fmt.Sprintf("%v %+v %#v %s", a.Token, a.WebhookSecret, a.Token, a.WebhookSecret)
}
