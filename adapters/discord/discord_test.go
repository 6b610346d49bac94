package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

func TestRegistered(t *testing.T) {
	t.Parallel()
	info, ok := core.Adapters().Lookup("discord")
	require.True(t, ok)
	require.False(t, info.EnabledByDefault, "discord is off unless the config turns it on")
	a := info.New()
	require.Equal(t, "discord", a.Name())
	require.Equal(t, Platform, a.Platform())
	require.Equal(t, "Discord", core.PlatformTitle(a), "the model hears the platform named as before")
	require.Equal(t, core.Capabilities{MaxMessageLength: 2000, Markup: "markdown", Typing: true, Choices: true, RichText: true,
		TypingRefresh: 8 * time.Second, IdempotencyWindow: 2 * time.Minute}, a.Capabilities())
	_, images := a.(core.ImageSender)
	require.True(t, images)
	_, typing := a.(core.TypingIndicator)
	require.True(t, typing)
	_, health := a.(core.HealthReporter)
	require.True(t, health)
}

func TestConfigDecodes(t *testing.T) {
	t.Parallel()
	var node yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(`
token: "MTIz.abc.def"
api_url: http://127.0.0.1:8081
`), &node))
	a := New()
	require.NoError(t, config.Section{Node: node.Content[0], Path: "adapters.discord"}.Decode(a))
	require.Equal(t, config.Secret("MTIz.abc.def"), a.Token)
	require.Equal(t, "http://127.0.0.1:8081", a.APIURL)
	require.NoError(t, a.Validate())

	require.NoError(t, yaml.Unmarshal([]byte("token: x\nintents: 513\n"), &node))
	err := config.Section{Node: node.Content[0], Path: "adapters.discord"}.Decode(New())
	require.ErrorContains(t, err, "intents", "unknown keys are refused")

	require.Empty(t, New().APIURL, "default: https://discord.com")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	const token = "MTIz.SECRET.token"
	valid := func() *Adapter {
		a := New()
		a.Token = token
		return a
	}
	require.NoError(t, valid().Validate())

	for _, tc := range []struct {
		name   string
		change func(a *Adapter)
		want   string
	}{
		{"no token", func(a *Adapter) { a.Token = "" }, "discord adapter: token is required"},
		{"blank token", func(a *Adapter) { a.Token = "  " }, "discord adapter: token is required"},
		{"Bot prefix", func(a *Adapter) { a.Token = "Bot MTIz.SECRET" }, `discord adapter: token must not contain spaces (give the bare bot token, without "Bot ")`},
		{"api_url without scheme", func(a *Adapter) { a.APIURL = "discord.com" }, `discord adapter: api_url must be an http or https URL, got "discord.com"`},
		{"api_url with path", func(a *Adapter) { a.APIURL = "https://discord.com/api/v9" }, `discord adapter: api_url must be an origin like https://discord.com, without path, query or user, got "https://discord.com/api/v9"`},
		{"shard out of range", func(a *Adapter) { a.ShardID, a.ShardCount = 2, 2 }, "discord adapter: shard_id must be from 0 to shard_count-1 (1), got 2"},
		{"shard without count", func(a *Adapter) { a.ShardID = 1 }, "discord adapter: shard_id must be from 0 to shard_count-1 (0), got 1"},
		{"negative count", func(a *Adapter) { a.ShardCount = -1 }, "discord adapter: shard_count must be at least 1, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := valid()
			tc.change(a)
			err := a.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "SECRET", "the token in the message")
		})
	}
	a := valid()
	a.APIURL = "https://discord.example.com/"
	require.NoError(t, a.Validate(), "a trailing slash is fine")

	// Problems are reported together.
	a = New()
	a.APIURL = "ftp://x"
	err := a.Validate()
	require.ErrorContains(t, err, "token is required")
	require.ErrorContains(t, err, "api_url must be")
}

func TestStartRejectsBadToken(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.Token = "MTIz.WRONG-token-xyz" })
	err := b.adapter.Start(context.Background(), b.core)
	require.EqualError(t, err, "discord adapter: checking the bot token with GET /users/@me: unauthorized (is the token wrong or reset?)")
	require.NotContains(t, err.Error(), "WRONG")
	require.NotContains(t, b.logs.String(), "WRONG")
	require.Zero(t, b.srv.Identifies(), "no IDENTIFY with a token Discord refused")
	require.Error(t, b.adapter.Health())
	require.NoError(t, b.adapter.Stop(context.Background()))
}

func TestStartFailsOnUnreachableAPI(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.APIURL = "http://127.0.0.1:1" })
	err := b.adapter.Start(context.Background(), b.core)
	require.ErrorContains(t, err, "discord adapter: checking the bot token with GET /users/@me:")
	require.NotContains(t, err.Error(), b.srv.Token())
	require.NoError(t, b.adapter.Stop(context.Background()))
}

func TestStartConnectsGateway(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, 1, b.srv.Calls("users.me"))
	require.Equal(t, 1, b.srv.Calls("gateway"), "the gateway URL comes from api_url's GET /api/v9/gateway")
	require.Equal(t, 1, b.srv.Identifies())
	require.Equal(t, 1<<12|1<<13, b.srv.Intents(), "DIRECT_MESSAGES and DIRECT_MESSAGE_REACTIONS only")
	require.NoError(t, b.adapter.Health())
}

func TestStartTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.EqualError(t, b.adapter.Start(context.Background(), b.core), "starting discord adapter: already started")
}

func TestLifecycleEdges(t *testing.T) {
	t.Parallel()
	a := New()
	require.EqualError(t, a.Health(), "discord adapter: not running")
	_, err := a.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "123", Text: "x"})
	require.ErrorContains(t, err, "discord adapter is not started")
	require.NoError(t, a.Stop(context.Background()), "Stop before Start")
	require.ErrorContains(t, a.Start(context.Background(), adaptertest.NewRecorder()), "already stopped")
}

func TestStopThenSend(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.start(t)
	ch := b.greet(t, ada)
	began := time.Now()
	require.NoError(t, b.adapter.Stop(context.Background()))
	require.Less(t, time.Since(began), 3*time.Second, "Stop returns promptly")
	_, err := b.send(ch, "k", "late")
	require.ErrorContains(t, err, "discord adapter is stopped")
	require.EqualError(t, b.adapter.Health(), "discord adapter: not running")
	require.NoError(t, b.adapter.Stop(context.Background()), "Stop twice")
}

func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	a := New()
	a.Token = "MTIz.SECRET.token"
	out := fmt.Sprintf("%v %+v %#v %s", a.Token, a.Token, a.Token, a.Token)
	require.NotContains(t, out, "SECRET")
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestOriginTransportRewritesEveryRequest(t *testing.T) {
	t.Parallel()
	var got *http.Request
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	fallback, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := originTransport{base: base, origin: &url.URL{Scheme: "http", Host: "127.0.0.1:9"}, fallback: fallback}
	req, err := http.NewRequest(http.MethodGet, "https://discord.com/api/v9/gateway?x=1", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "http://127.0.0.1:9/api/v9/gateway?x=1", got.URL.String())
	require.Equal(t, "https://discord.com/api/v9/gateway?x=1", req.URL.String(), "the caller's request is not modified")
	require.Equal(t, fallback, got.Context(), "a request without a context gets the adapter's")

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, "https://discord.com/api/v9/channels/1/messages", nil)
	require.NoError(t, err)
	resp, err = tr.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, ctx, got.Context(), "the caller's context is kept")
}

// silentGateway is a fake API whose gateway accepts connections and never
// answers, the worst case for discordgo's Open, which takes no context.
func silentGateway(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var accepted []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, c)
			mu.Unlock()
		}
	}()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v9/users/@me":
			_, _ = w.Write([]byte(`{"id":"900000000000000001","username":"bot","bot":true}`))
		case "/api/v9/gateway":
			_, _ = w.Write([]byte(`{"url":"ws://` + ln.Addr().String() + `"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() {
		api.Close()
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range accepted {
			_ = c.Close()
		}
	})
	return api.URL
}

func TestStartGivesUpOnSilentGateway(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.adapter.APIURL = silentGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := b.adapter.Start(ctx, b.core)
	require.ErrorContains(t, err, "discord adapter: connecting to the gateway: context deadline exceeded")
	require.Less(t, time.Since(began), 2*time.Second, "Start's context bounds the opening")
	require.NoError(t, b.adapter.Stop(context.Background()))
}

func TestStopDuringStartIsPrompt(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.adapter.APIURL = silentGateway(t)
	started := make(chan error, 1)
	go func() { started <- b.adapter.Start(context.Background(), b.core) }()
	// Stop as soon as Start is under way; whichever step it interrupts,
	// both return promptly.
	eventually(t, func() bool {
		b.adapter.mu.Lock()
		defer b.adapter.mu.Unlock()
		return b.adapter.started
	}, "Start never began")
	require.NoError(t, b.adapter.Stop(context.Background()))
	select {
	case err := <-started:
		require.Error(t, err)
	case <-time.After(3 * time.Second):
		t.Fatal("Start still blocked after Stop")
	}
}

func TestMessageBodyPingsNobody(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(&messageBody{Content: "hi @everyone", Nonce: "run-1.0", EnforceNonce: true, AllowedMentions: noPings()})
	require.NoError(t, err)
	require.JSONEq(t, `{"content":"hi @everyone","nonce":"run-1.0","enforce_nonce":true,"allowed_mentions":{"parse":[],"replied_user":false}}`, string(raw))
}
