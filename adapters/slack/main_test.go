package slack

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// TestMain fails the run if a test leaves a websocket reader, a reconnect
// loop or an HTTP connection of the adapter behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitFor = 10 * time.Second

// The users the tests play.
var (
	ada   = slacktest.User{ID: "U0ADA00001", Name: "ada", RealName: "Ada Lovelace", DisplayName: "ada.l"}
	grace = slacktest.User{ID: "U0GRACE001", Name: "grace_h", RealName: "Grace Hopper"}
	linus = slacktest.User{ID: "U0LINUS001", Name: "linus"}
)

type testBundle struct {
	srv     *slacktest.Server
	adapter *Adapter
	core    *adaptertest.Recorder
	logs    *coretest.Logs
	// events is the Parley HTTP server in events mode (nil in socket mode).
	events *httptest.Server
}

// newBundle returns an adapter in mode pointed at a fresh fake,
// provisioned and validated but not started; configure changes it before
// validation.
func newBundle(t *testing.T, mode string, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	return newBundleOn(t, slacktest.NewServer(t, slacktest.WithPingInterval(100*time.Millisecond)), mode, configure...)
}

// newBundleOn is newBundle with a fake the test configured.
func newBundleOn(t *testing.T, srv *slacktest.Server, mode string, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	b := &testBundle{srv: srv, core: adaptertest.NewRecorder(), logs: &coretest.Logs{}}
	a := New()
	a.Mode = mode
	a.BotToken = config.Secret(srv.BotToken())
	a.AppToken = config.Secret(srv.AppToken())
	a.SigningSecret = config.Secret(srv.SigningSecret())
	a.APIURL = srv.APIURL()
	a.serverBackoff = time.Millisecond
	a.pingInterval = time.Second
	a.reconnectMin, a.reconnectMax = 10*time.Millisecond, 100*time.Millisecond
	// Unpaced: on the real clock, a reply of a few parts would wait
	// seconds for its slots. pace_test.go paces on a clock it moves.
	a.SendRate = pace.Limits{}
	for _, c := range configure {
		c(a)
	}
	log := b.logs.Logger()
	require.NoError(t, a.Provision(context.Background(), core.Env{Logger: log}))
	require.NoError(t, a.Validate())
	b.adapter = a
	if a.Mode == ModeEvents {
		mux := http.NewServeMux()
		a.Mount(mux)
		b.events = httptest.NewServer(mux)
		t.Cleanup(b.events.Close)
		srv.UseEventsAPI(b.events.URL + EventsPath)
		srv.UseSlashCommandsURL(b.events.URL + CommandsPath)
		srv.UseInteractivityURL(b.events.URL + InteractivityPath)
	}
	return b
}

// setup is newBundle plus Start, with Stop at cleanup.
func setup(t *testing.T, mode string, configure ...func(*Adapter)) *testBundle {
	t.Helper()
	b := newBundle(t, mode, configure...)
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
		b.requireNoSecrets(t)
	})
}

// requireNoSecrets fails if a token or the signing secret reached the logs.
func (b *testBundle) requireNoSecrets(t *testing.T) {
	t.Helper()
	logs := b.logs.String()
	for _, s := range []string{b.srv.BotToken(), b.srv.AppToken(), b.srv.SigningSecret()} {
		require.NotContains(t, logs, s, "a secret leaked into the logs")
	}
}

// send sends text to a channel through the adapter.
func (b *testBundle) send(channelID, text string) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: channelID, Text: text})
}

// greet makes user write to the bot, waits for the core to get it and
// returns the DM channel.
func (b *testBundle) greet(t *testing.T, user slacktest.User) string {
	t.Helper()
	n := len(b.core.Messages())
	ch, _ := b.srv.SendDM(user, "hello")
	b.core.Wait(t, n+1, waitFor)
	return ch
}

// contextWithTimeout bounds a call in a test.
func contextWithTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitFor)
}

// eventually waits for cond, failing after waitFor.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, waitFor, 5*time.Millisecond, msg)
}

// permanentReasonOf returns the reason of a *core.PermanentError.
func permanentReasonOf(t *testing.T, err error) string {
	t.Helper()
	var pe *core.PermanentError
	require.True(t, errors.As(err, &pe), "want a permanent error, got %v", err)
	return pe.Reason
}

// texts lists what the bot meant by the sent messages (unescaped).
func texts(sent []slacktest.SentMessage) []string {
	out := make([]string, len(sent))
	for i, m := range sent {
		out[i] = slacktest.Unescape(m.Text)
	}
	return out
}

// bothModes runs a test in socket and events mode.
func bothModes(t *testing.T, test func(t *testing.T, mode string)) {
	t.Helper()
	for _, mode := range []string{ModeSocket, ModeEvents} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			test(t, mode)
		})
	}
}

// bytesReader reads body.
func bytesReader(body []byte) *bytes.Reader { return bytes.NewReader(body) }
