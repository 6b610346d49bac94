package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

// request is one HTTP request a test makes, as a browser or a script.
type request struct {
	method, path string
	header       map[string]string
	body         string
}

// answer is what came back: status, headers, the JSON body (nil when it
// is not JSON) and whether the server closes the connection after it.
type answer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Close  bool
}

func (b *testBundle) do(t *testing.T, r request) answer {
	t.Helper()
	req, err := http.NewRequest(r.method, b.server.URL+r.path, strings.NewReader(r.body))
	require.NoError(t, err)
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := answer{Status: resp.StatusCode, Header: resp.Header, Close: resp.Close}
	if json.Unmarshal(raw, &out.Body) != nil {
		out.Body = nil
	}
	return out
}

// postFrom posts a message of clientID from address ip, as the chat page
// does (application/json, no Origin from a same-origin fetch in tests).
func (b *testBundle) postFrom(t *testing.T, ip, clientID, text string) answer {
	t.Helper()
	body, err := json.Marshal(map[string]string{"client_id": clientID, "text": text})
	require.NoError(t, err)
	return b.do(t, request{method: http.MethodPost, path: "/web/messages", body: string(body),
		header: map[string]string{"Content-Type": "application/json", clientIPHeader: ip}})
}

// requireRefused checks a 429 as a user sees it: the status, a
// Retry-After in whole seconds and the error in words.
func requireRefused(t *testing.T, a answer, retryAfter, msg string) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, a.Status, "%v", a.Body)
	require.Equal(t, retryAfter, a.Header.Get("Retry-After"))
	require.Equal(t, map[string]any{"error": msg}, a.Body)
	require.Contains(t, a.Header.Get("Content-Type"), "application/json")
}

// The probe from issue 24: 1,000 posts, each with a new client id, from
// one address. With the default limits the core gets the first 20 (new
// conversations per hour per address); everything else is refused with
// 429 and nothing more reaches the core, nor does it make the store
// answer more than the per-address rate of questions. The window lifts
// with the clock: one new conversation every 3 minutes, 20 after an hour.
func TestFloodOfNewClientsIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	statuses := map[int]int{}
	var first429 answer
	for i := range 1000 {
		a := b.postFrom(t, "203.0.113.7", fmt.Sprintf("flood-%06d", i), "spend the owner's money")
		statuses[a.Status]++
		if a.Status == http.StatusTooManyRequests && first429.Status == 0 {
			first429 = a
		}
	}
	require.Equal(t, map[int]int{http.StatusAccepted: 20, http.StatusTooManyRequests: 980}, statuses)
	require.Len(t, b.core.messages(), 20, "the core saw only the allowed new conversations")
	requireRefused(t, first429, "180", "Too many new chats from your network: wait 3 minutes and try again.")
	b.core.mu.Lock()
	asked := len(b.core.historyCalls)
	b.core.mu.Unlock()
	require.LessOrEqual(t, asked, 60, "the store is asked about new clients at most at the per-address rate")

	// Another address is not held back by this one.
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "198.51.100.1", "neighbour-1", "hello").Status)

	// Three minutes on: one more new conversation, then refused again.
	b.clock.Advance(3 * time.Minute)
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "203.0.113.7", "later-000001", "hi").Status)
	requireRefused(t, b.postFrom(t, "203.0.113.7", "later-000002", "hi"),
		"180", "Too many new chats from your network: wait 3 minutes and try again.")
	// The clients already talking keep talking.
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "203.0.113.7", "flood-000000", "still me").Status)

	// An hour on: the whole allowance is back.
	b.clock.Advance(time.Hour)
	for i := range 20 {
		require.Equal(t, http.StatusAccepted, b.postFrom(t, "203.0.113.7", fmt.Sprintf("hour-%06d", i), "hi").Status, "post %d", i)
	}
	require.Equal(t, http.StatusTooManyRequests, b.postFrom(t, "203.0.113.7", "hour-000020", "hi").Status)
	require.Len(t, b.core.messages(), 20+1+1+1+20)
}

// One browser posting faster than a person types is held to 20 a minute
// (a burst of 20, then one every 3 s); another browser on the same network
// is not held back by it.
func TestClientMessageLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 20 {
		require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.10", "chatty-01", fmt.Sprintf("message %d", i)).Status)
	}
	requireRefused(t, b.postFrom(t, "192.0.2.10", "chatty-01", "one too many"),
		"3", "You are sending messages too fast: wait 3 seconds and try again.")
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.10", "quiet-001", "hello").Status)

	b.clock.Advance(3 * time.Second)
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.10", "chatty-01", "after a pause").Status)
	require.Equal(t, http.StatusTooManyRequests, b.postFrom(t, "192.0.2.10", "chatty-01", "too soon").Status)

	var texts []string
	for _, m := range b.core.messages() {
		if m.ChannelThreadID == "chatty-01" {
			texts = append(texts, m.Text)
		}
	}
	require.Len(t, texts, 21)
	require.Equal(t, "after a pause", texts[20])
	require.NotContains(t, texts, "one too many")
	require.NotContains(t, texts, "too soon")
}

// One address is held to its posts per minute, whatever client ids it
// uses; an IPv6 address shares its limit with its /64, not beyond.
func TestAddressMessageLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{limits: &web.Limits{MessagesPerMinutePerIP: 5}})
	for i := range 5 {
		require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.20", fmt.Sprintf("client-%04d", i), "hi").Status)
	}
	requireRefused(t, b.postFrom(t, "192.0.2.20", "client-9999", "hi"),
		"12", "Too many messages from your network: wait 12 seconds and try again.")
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.21", "client-9999", "hi").Status, "another address")

	for i := range 5 {
		require.Equal(t, http.StatusAccepted, b.postFrom(t, fmt.Sprintf("2001:db8:1:2::%x", i+1), "v6-client-1", "hi").Status)
	}
	require.Equal(t, http.StatusTooManyRequests, b.postFrom(t, "2001:db8:1:2:ffff::1", "v6-client-1", "same /64").Status)
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "2001:db8:1:3::1", "v6-client-1", "another /64").Status)
	require.Len(t, b.core.messages(), 5+1+5+1)

	b.clock.Advance(12 * time.Second)
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.20", "client-9999", "later").Status)
}

// threadHistory is a core with a conversation for some client ids only.
type threadHistory struct {
	*fakeCore
	talking map[string]bool
}

func (c threadHistory) History(_ context.Context, _ core.Platform, thread string, _ int) ([]core.Message, error) {
	if c.talking[thread] {
		return []core.Message{{ID: 1, Seq: 1, Role: core.RoleUser, Content: "earlier", CreatedAt: time.Now()}}, nil
	}
	return nil, core.ErrNotFound
}

// A client the bot already talks with (the store has its conversation,
// say from before a restart) starts no new conversation, so the new
// conversation limit never refuses it.
func TestKnownClientIsNotANewConversation(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		limits: &web.Limits{NewConversationsPerHourPerIP: 1},
		handler: func(f *fakeCore) core.Host {
			return threadHistory{f, map[string]bool{"returning-1": true, "returning-2": true}}
		},
	})
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.30", "brand-new-1", "hi").Status)
	require.Equal(t, http.StatusTooManyRequests, b.postFrom(t, "192.0.2.30", "brand-new-2", "hi").Status)
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.30", "returning-1", "I'm back").Status)
	require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.30", "brand-new-1", "and again").Status,
		"a conversation started here is known")
	require.Len(t, b.core.messages(), 3)
}

// With every limit 0 nothing is refused.
func TestLimitsOff(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{limits: &web.Limits{}})
	for i := range 90 {
		require.Equal(t, http.StatusAccepted, b.postFrom(t, "192.0.2.40", fmt.Sprintf("client-%04d", i), "hi").Status)
	}
	for range 10 {
		b.openStream(t, "client-0001")
	}
	require.Equal(t, 10, b.adapter.OpenStreams())
}

func TestLimitsConfig(t *testing.T) {
	t.Parallel()
	var node yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(`
title: Ada's bot
limits:
  messages_per_minute_per_client: 5
  max_streams: 0
allowed_origins: ["https://chat.example.com"]
`), &node))
	a := web.New()
	require.NoError(t, config.Section{Node: node.Content[0], Path: "adapters.web"}.Decode(a))
	require.NoError(t, a.Validate())
	want := web.DefaultLimits()
	want.MessagesPerMinutePerClient = 5
	want.MaxStreams = 0
	require.Equal(t, want, a.Limits, "keys left out keep their defaults")
	require.Equal(t, []string{"https://chat.example.com"}, a.AllowedOrigins)

	var typo yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("limits: {streams_per_clients: 3}"), &typo))
	err := config.Section{Node: typo.Content[0], Path: "adapters.web"}.Decode(web.New())
	require.ErrorContains(t, err, "adapters.web.limits.streams_per_clients")
	require.ErrorContains(t, err, "unknown key")

	require.Equal(t, web.Limits{
		MessagesPerMinutePerClient: 20, MessagesPerMinutePerIP: 60, NewConversationsPerHourPerIP: 20,
		StreamsPerClient: 4, StreamsPerIP: 16, MaxStreams: 1000, StreamLifetime: 10 * time.Minute,
	}, web.New().Limits)

	for lifetime, ok := range map[string]bool{"0s": true, "1s": true, "30m": true, "500ms": false} {
		var n yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte("limits: {stream_lifetime: "+lifetime+"}"), &n))
		a := web.New()
		require.NoError(t, config.Section{Node: n.Content[0], Path: "adapters.web"}.Decode(a))
		if ok {
			require.NoError(t, a.Validate(), lifetime)
		} else {
			require.ErrorContains(t, a.Validate(), "limits.stream_lifetime is", lifetime)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		edit func(a *web.Adapter)
		err  string
	}{
		{func(a *web.Adapter) { a.Limits.MessagesPerMinutePerClient = -1 },
			"web adapter: limits.messages_per_minute_per_client is -1; it must be 0 (no limit) or more"},
		{func(a *web.Adapter) { a.Limits.MessagesPerMinutePerIP = -2 },
			"web adapter: limits.messages_per_minute_per_ip is -2; it must be 0 (no limit) or more"},
		{func(a *web.Adapter) { a.Limits.NewConversationsPerHourPerIP = -3 },
			"web adapter: limits.new_conversations_per_hour_per_ip is -3; it must be 0 (no limit) or more"},
		{func(a *web.Adapter) { a.Limits.StreamsPerClient = -1 },
			"web adapter: limits.streams_per_client is -1; it must be 0 (no limit) or more"},
		{func(a *web.Adapter) { a.Limits.StreamsPerIP = -1 },
			"web adapter: limits.streams_per_ip is -1; it must be 0 (no limit) or more"},
		{func(a *web.Adapter) { a.Limits.MaxStreams = -1 },
			"web adapter: limits.max_streams is -1; it must be 0 (no limit) or more"},
		{func(a *web.Adapter) { a.AllowedOrigins = []string{"chat.example.com"} },
			`web adapter: allowed_origins: "chat.example.com": not an http or https origin (scheme://host[:port])`},
		{func(a *web.Adapter) { a.AllowedOrigins = []string{"https://chat.example.com/chat"} },
			`web adapter: allowed_origins: "https://chat.example.com/chat": not an http or https origin (scheme://host[:port])`},
	} {
		a := web.New()
		tc.edit(a)
		require.EqualError(t, a.Validate(), tc.err)
	}
}

// Posts from many goroutines at once are counted exactly: the per-client
// limit lets exactly its burst through.
func TestClientLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wg sync.WaitGroup
	statuses := make(chan int, 100)
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			// Spread over addresses so only the per-client limit applies.
			req, err := http.NewRequest(http.MethodPost, b.server.URL+"/web/messages",
				strings.NewReader(`{"client_id": "racer-001", "text": "go"}`))
			if err != nil {
				errs <- err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(clientIPHeader, fmt.Sprintf("192.0.2.%d", 100+i))
			resp, err := b.client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	// The first post from each address is a new conversation for it, so
	// only the per-client limit can refuse: exactly its burst of 20 passes.
	require.Equal(t, map[int]int{http.StatusAccepted: 20, http.StatusTooManyRequests: 80}, got)
	require.Len(t, b.core.messages(), 20)
}

// logBuffer collects log lines, safe for the handlers' goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns the logged lines that contain want.
func (l *logBuffer) lines(want string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, want) {
			out = append(out, line)
		}
	}
	return out
}

// A flood of refused requests is logged as one warning a minute that
// names the limit and counts the refusals not logged; from a local
// address the warning says how to let a reverse proxy's users have
// limits of their own.
func TestRefusalsAreLoggedOnceAMinute(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	b := setup(t, setupOpts{
		limits: &web.Limits{MessagesPerMinutePerClient: 1},
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	post := func() int {
		return b.do(t, request{method: http.MethodPost, path: "/web/messages", body: `{"client_id": "client-0001", "text": "hi"}`,
			header: map[string]string{"Content-Type": "application/json"}}).Status
	}
	require.Equal(t, http.StatusAccepted, post())
	for range 5 {
		require.Equal(t, http.StatusTooManyRequests, post())
	}
	lines := logs.lines("web chat refused a request over its limits")
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], "level=WARN")
	require.Contains(t, lines[0], "limit=adapters.web.limits.messages_per_minute_per_client")
	require.Contains(t, lines[0], "ip=127.0.0.1")
	require.Contains(t, lines[0], "list it in http.trusted_proxies")
	require.Contains(t, lines[0], "refusals_not_logged=0")

	b.clock.Advance(time.Minute)
	require.Equal(t, http.StatusAccepted, post())
	require.Equal(t, http.StatusTooManyRequests, post())
	lines = logs.lines("web chat refused a request over its limits")
	require.Len(t, lines, 2)
	require.Contains(t, lines[1], "refusals_not_logged=4")

	a := b.do(t, request{method: http.MethodPost, path: "/web/messages", body: `{"client_id": "client-0001", "text": "hi"}`,
		header: map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}})
	require.Equal(t, http.StatusForbidden, a.Status)
	lines = logs.lines("web chat refused a request from another site")
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], "origin=https://evil.example")
	require.Contains(t, lines[0], "host="+mustHost(t, b.server.URL))
	require.Contains(t, lines[0], "adapters.web.allowed_origins")
}
