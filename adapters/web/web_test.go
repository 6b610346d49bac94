package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/httpapi"
)

const waitFor = 5 * time.Second

// fakeCore stands in for the dispatcher: it records inbound messages, can
// reply through the adapter, and serves a canned history.
type fakeCore struct {
	mu       sync.Mutex
	got      []core.InboundMessage
	received chan core.InboundMessage
	err      error
	// reply, when set, is called from HandleInbound (like a very fast turn).
	reply func(ctx context.Context, msg core.InboundMessage) error

	history      []core.Message
	historyErr   error
	historyCalls []historyCall

	health llm.Health
}

type historyCall struct {
	Platform core.Platform
	Thread   string
	Limit    int
}

func newFakeCore() *fakeCore {
	return &fakeCore{received: make(chan core.InboundMessage, 100)}
}

func (f *fakeCore) HandleInbound(ctx context.Context, msg core.InboundMessage) error {
	f.mu.Lock()
	err, reply := f.err, f.reply
	if err == nil {
		f.got = append(f.got, msg)
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	f.received <- msg
	if reply != nil {
		return reply(ctx, msg)
	}
	return nil
}

func (f *fakeCore) History(_ context.Context, p core.Platform, thread string, limit int) ([]core.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.historyCalls = append(f.historyCalls, historyCall{p, thread, limit})
	return f.history, f.historyErr
}

// HandleReaction ignores it: the web chat has no reactions.
func (f *fakeCore) HandleReaction(context.Context, core.Reaction) error { return nil }

// HandleChange ignores the change: the web chat has no edits.
func (f *fakeCore) HandleChange(context.Context, core.MessageChange) error { return nil }

// HandleTap makes no choice: the web tests tap nothing yet.
func (f *fakeCore) HandleTap(context.Context, core.InboundMessage) (core.TapAnswer, error) {
	return core.TapAnswer{Notice: core.NoticeStaleButton}, nil
}

func (f *fakeCore) ModelHealth() llm.Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}

func (f *fakeCore) messages() []core.InboundMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]core.InboundMessage(nil), f.got...)
}

// Commands lists none: the web chat shows no command menu.
func (f *fakeCore) Commands() []core.CommandInfo { return nil }

type testBundle struct {
	adapter *web.Adapter
	core    *fakeCore
	server  *httptest.Server
	client  *http.Client
	now     time.Time
	clock   *coretest.Clock
}

type setupOpts struct {
	handler func(f *fakeCore) core.Host
	// limits, when set, replaces the default limits.
	limits *web.Limits
	// allowedOrigins is the adapter's allowed_origins.
	allowedOrigins []string
	// logger, when set, is the adapter's logger.
	logger *slog.Logger
}

// clientIPHeader is how a test says which address a request comes from:
// the test server puts it on the request's context as the real server does
// after looking through trusted proxies (httpapi.WithClientIP).
const clientIPHeader = "X-Test-Client-IP"

func withTestClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.Header.Get(clientIPHeader); s != "" {
			r = r.WithContext(httpapi.WithClientIP(r.Context(), netip.MustParseAddr(s)))
		}
		next.ServeHTTP(w, r)
	})
}

func setup(t *testing.T, opts ...setupOpts) *testBundle {
	t.Helper()
	b := &testBundle{
		adapter: web.New(),
		core:    newFakeCore(),
		now:     time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC),
	}
	b.clock = coretest.NewClock(b.now)
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	env := core.Env{Clock: b.clock, BotName: "Subaru", Logger: o.logger}
	if o.limits != nil {
		b.adapter.Limits = *o.limits
	}
	b.adapter.AllowedOrigins = o.allowedOrigins
	b.adapter.Uploads.Dir = t.TempDir()
	require.NoError(t, b.adapter.Provision(context.Background(), env))
	require.NoError(t, b.adapter.Validate())
	var h core.Host = b.core
	if o.handler != nil {
		h = o.handler(b.core)
	}
	require.NoError(t, b.adapter.Start(context.Background(), h))

	mux := http.NewServeMux()
	b.adapter.Mount(mux)
	b.server = httptest.NewServer(withTestClientIP(mux))
	transport := &http.Transport{}
	b.client = &http.Client{Transport: transport}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.adapter.Stop(ctx))
		b.server.Close()
		transport.CloseIdleConnections()
	})
	return b
}

type apiResponse struct {
	Status int
	Body   map[string]any
	Header http.Header
}

func (b *testBundle) post(t *testing.T, body string) apiResponse {
	t.Helper()
	resp, err := b.client.Post(b.server.URL+"/web/messages", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	out := apiResponse{Status: resp.StatusCode, Header: resp.Header}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out.Body))
	return out
}

func (b *testBundle) postJSON(t *testing.T, v any) apiResponse {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return b.post(t, string(raw))
}

func (b *testBundle) get(t *testing.T, path string) (int, http.Header, string) {
	t.Helper()
	resp, err := b.client.Get(b.server.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(raw)
}

func (b *testBundle) send(t *testing.T, thread, text string) []string {
	t.Helper()
	res, err := b.adapter.Send(context.Background(), core.OutboundMessage{ConversationID: 1, ChannelThreadID: thread, Text: text})
	require.NoError(t, err)
	return res.PlatformMessageIDs
}

// sseEvent is one event as parsed from the wire; comments have Name ":".
type sseEvent struct {
	Name string
	Data string
}

// stream is an open GET /web/events response read by a background pump.
type stream struct {
	events chan sseEvent
	ended  chan struct{}
}

// openStream opens the client's event stream and returns once the server
// has said it is live (so a Send after it must arrive).
func (b *testBundle) openStream(t *testing.T, clientID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.server.URL+"/web/events?client_id="+url.QueryEscape(clientID), nil)
	require.NoError(t, err)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	s := &stream{events: make(chan sseEvent, 1000), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer close(s.events)
		readSSE(resp.Body, s.events)
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-s.ended
	})
	first := s.nextAny(t)
	require.Equal(t, sseEvent{Name: ":", Data: " connected"}, first)
	return s
}

// readSSE parses the text/event-stream wire format: "field: value" lines,
// ":" comment lines, and a blank line ending each event.
func readSSE(r io.Reader, out chan<- sseEvent) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var name string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name != "" || data != nil {
				if name == "" {
					name = "message"
				}
				out <- sseEvent{Name: name, Data: strings.Join(data, "\n")}
			}
			name, data = "", nil
		case strings.HasPrefix(line, ":"):
			out <- sseEvent{Name: ":", Data: line[1:]}
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				name = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

func (s *stream) nextAny(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		require.True(t, ok, "stream ended")
		return ev
	case <-time.After(waitFor):
		require.FailNow(t, "no event within the deadline")
		return sseEvent{}
	}
}

// next returns the next event that is not a comment.
func (s *stream) next(t *testing.T) sseEvent {
	t.Helper()
	for {
		if ev := s.nextAny(t); ev.Name != ":" {
			return ev
		}
	}
}

type wireMessage struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	Text string `json:"text"`
	HTML string `json:"html,omitempty"`
	At   string `json:"at"`
}

func (s *stream) nextMessage(t *testing.T) wireMessage {
	t.Helper()
	ev := s.next(t)
	require.Equal(t, "message", ev.Name)
	var m wireMessage
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &m))
	return m
}

func (s *stream) waitEnded(t *testing.T) {
	t.Helper()
	select {
	case <-s.ended:
	case <-time.After(waitFor):
		require.FailNow(t, "stream still open")
	}
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	info, ok := core.Adapters().Lookup("web")
	require.True(t, ok)
	require.True(t, info.EnabledByDefault, "the web chat is on unless the config turns it off")
	a := info.New()
	require.Equal(t, "web", a.Name())
	require.Equal(t, web.Platform, a.Platform())
	require.Equal(t, "the web chat", core.PlatformTitle(a), "the model hears the platform named as before")
	require.Equal(t, core.Capabilities{MaxMessageLength: 16000, Markup: "html", Typing: true, RichText: true, Choices: true}, a.Capabilities())
}

func TestValidateRejectsEmptyTitle(t *testing.T) {
	t.Parallel()
	a := web.New()
	a.Title = "  "
	require.EqualError(t, a.Validate(), "web adapter: title must not be empty")
}

func TestPostReachesCoreNormalised(t *testing.T) {
	t.Parallel()
	b := setup(t)

	resp := b.postJSON(t, map[string]string{"client_id": "client-0001", "name": "  Ada \n Lovelace ", "text": "  hello there \n"})

	require.Equal(t, http.StatusAccepted, resp.Status)
	got := b.core.messages()
	require.Len(t, got, 1)
	msg := got[0]
	require.Equal(t, msg.PlatformMessageID, resp.Body["id"])
	require.True(t, strings.HasPrefix(msg.PlatformMessageID, "w-"), msg.PlatformMessageID)
	require.Equal(t, core.InboundMessage{
		Platform:          web.Platform,
		ChannelThreadID:   "client-0001",
		ChannelUserID:     "client-0001",
		DisplayName:       "Ada Lovelace",
		Text:              "hello there",
		PlatformMessageID: msg.PlatformMessageID,
		SentAt:            b.now,
		Direct:            true,
	}, msg)

	second := b.postJSON(t, map[string]string{"client_id": "client-0001", "text": "again"})
	require.Equal(t, http.StatusAccepted, second.Status)
	got = b.core.messages()
	require.Len(t, got, 2)
	require.Equal(t, "Web user", got[1].DisplayName, "a missing name gets the default")
	require.NotEqual(t, got[0].PlatformMessageID, got[1].PlatformMessageID)
}

func TestPostRejectsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name   string
		body   string
		status int
		err    string
	}{
		{"invalid JSON", `{"client_id": "client-0001", "text": `, 400, "invalid JSON body"},
		{"not an object", `"hello"`, 400, "invalid JSON body"},
		{"missing client_id", `{"text": "hi"}`, 400, "client_id must be 8 to 64 letters, digits, '-' or '_'"},
		{"short client_id", `{"client_id": "abc", "text": "hi"}`, 400, "client_id must be 8 to 64 letters, digits, '-' or '_'"},
		{"client_id with bad characters", `{"client_id": "../../etc/passwd", "text": "hi"}`, 400, "client_id must be 8 to 64 letters, digits, '-' or '_'"},
		{"client_id too long", `{"client_id": "` + strings.Repeat("a", 65) + `", "text": "hi"}`, 400, "client_id must be 8 to 64 letters, digits, '-' or '_'"},
		{"empty text", `{"client_id": "client-0001", "text": ""}`, 400, "text is empty"},
		{"whitespace text", `{"client_id": "client-0001", "text": " \n\t "}`, 400, "text is empty"},
		{"body over 64 KiB", `{"client_id": "client-0001", "text": "` + strings.Repeat("x", 64<<10) + `"}`, 413, "message is larger than 64 KiB"},
		// Issue 30: whatever follows the object is refused, not ignored.
		{"trailing garbage", `{"client_id": "client-0001", "text": "hi"}garbage`, 400, "invalid JSON body: something follows the object"},
		{"a second object", `{"client_id": "client-0001", "text": "hi"} {"client_id": "client-0002", "text": "hi"}`, 400,
			"invalid JSON body: something follows the object"},
		{"a stray brace", `{"client_id": "client-0001", "text": "hi"}}`, 400, "invalid JSON body: something follows the object"},
		{"trailing white space past 64 KiB", `{"client_id": "client-0001", "text": "hi"}` + strings.Repeat(" ", 64<<10), 413,
			"message is larger than 64 KiB"},
	}
	for _, tc := range cases {
		resp := b.post(t, tc.body)
		require.Equal(t, tc.status, resp.Status, tc.name)
		require.Equal(t, map[string]any{"error": tc.err}, resp.Body, tc.name)
		require.Contains(t, resp.Header.Get("Content-Type"), "application/json", tc.name)
	}
	require.Empty(t, b.core.messages(), "nothing bad may reach the core")
	require.Equal(t, http.StatusAccepted, b.post(t, "{\"client_id\": \"client-0001\", \"text\": \"hi\"}\r\n\t ").Status,
		"white space after the object is no garbage")
}

func TestPostCoreErrorIsGeneric500(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.core.err = errors.New("database is on fire at postgres://user:secret@db")

	resp := b.postJSON(t, map[string]string{"client_id": "client-0001", "text": "hi"})

	require.Equal(t, http.StatusInternalServerError, resp.Status)
	require.Equal(t, map[string]any{"error": "could not accept the message"}, resp.Body)
}

// A message neither the store nor the inbound spool can keep (a full
// disk) is refused with 503 and Retry-After, so that the browser says it
// was not delivered and the user sends it again later: never 202 for a
// message that is then lost, nor a bare 500.
func TestPostThatCannotBeKeptIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"store and spool disk full": fmt.Errorf("%w: the message could not be kept: writing to the inbound spool: no space left on device",
			core.ErrStoreUnavailable),
		"spool full": fmt.Errorf("the inbound spool is full: %w", core.ErrInboundLost),
	} {
		b := setup(t)
		b.core.err = err
		resp := b.postJSON(t, map[string]string{"client_id": "client-0001", "text": "hi"})
		require.Equal(t, http.StatusServiceUnavailable, resp.Status, name)
		require.Equal(t, "5", resp.Header.Get("Retry-After"), name)
		require.Equal(t, map[string]any{"error": "The bot cannot take messages right now: try again in 5 seconds."}, resp.Body, name)
	}
}

func TestSendReachesOpenStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")

	ids := b.send(t, "client-0001", "Hello, Ada!")

	require.Len(t, ids, 1)
	m := s.nextMessage(t)
	require.Equal(t, wireMessage{ID: ids[0], Role: "assistant", Text: "Hello, Ada!", At: "2025-03-14T09:26:53Z"}, m)
}

func TestReplyFromCoreReachesPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.core.reply = func(ctx context.Context, msg core.InboundMessage) error {
		_, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: msg.ChannelThreadID, Text: "echo: " + msg.Text})
		return err
	}
	s := b.openStream(t, "client-0001")

	resp := b.postJSON(t, map[string]string{"client_id": "client-0001", "text": "ping"})

	require.Equal(t, http.StatusAccepted, resp.Status)
	require.Equal(t, "echo: ping", s.nextMessage(t).Text)
}

func TestLongTextArrivesSplitInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")
	var sb strings.Builder
	for i := 0; utf8.RuneCountInString(sb.String()) < 40_000; i++ {
		sb.WriteString("Paragraph with ünïcödé and 😀 in it, number ")
		sb.WriteString(strings.Repeat("x", i%13))
		if i%5 == 4 {
			sb.WriteString("\n\n")
		} else {
			sb.WriteString(" ")
		}
	}
	text := sb.String()

	ids := b.send(t, "client-0001", text)

	require.GreaterOrEqual(t, len(ids), 3)
	var got strings.Builder
	for i, id := range ids {
		m := s.nextMessage(t)
		require.Equal(t, id, m.ID, "part %d arrives in order", i)
		require.LessOrEqual(t, utf8.RuneCountInString(m.Text), 16000)
		got.WriteString(m.Text)
	}
	require.Equal(t, text, got.String(), "nothing lost or reordered")
}

func TestSendWithoutOpenPageSucceeds(t *testing.T) {
	t.Parallel()
	b := setup(t)

	ids := b.send(t, "client-0001", "you were away")

	require.Len(t, ids, 1)
	require.NotEmpty(t, ids[0])
}

func TestSendRejectsEmptyText(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001"})

	require.True(t, core.IsPermanent(err), "got %v", err)
}

func TestTypingEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openStream(t, "client-0001")

	require.NoError(t, b.adapter.Typing(context.Background(), "client-0001"))

	require.Equal(t, sseEvent{Name: "typing", Data: "{}"}, s.next(t))
}

func TestClientsAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.openStream(t, "alice-0001")
	bob := b.openStream(t, "bob-000001")

	b.send(t, "alice-0001", "for alice only")
	require.NoError(t, b.adapter.Typing(context.Background(), "alice-0001"))
	b.send(t, "bob-000001", "for bob")

	require.Equal(t, "for alice only", alice.nextMessage(t).Text)
	require.Equal(t, "typing", alice.next(t).Name)
	// Bob's stream got its own message first: nothing of Alice's came before.
	require.Equal(t, "for bob", bob.nextMessage(t).Text)
}

func TestEveryOpenTabOfAClientGetsTheMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tab1 := b.openStream(t, "client-0001")
	tab2 := b.openStream(t, "client-0001")

	ids := b.send(t, "client-0001", "hi both")

	require.Equal(t, ids[0], tab1.nextMessage(t).ID)
	require.Equal(t, ids[0], tab2.nextMessage(t).ID)
}

func TestHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Date(2025, 3, 14, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	b.core.history = []core.Message{
		{ID: 7, Seq: 3, Role: core.RoleAssistant, Content: "Hi Ada!", PlatformMessageID: "w-abc-2", CreatedAt: at.Add(time.Second)},
		{ID: 5, Seq: 1, Role: core.RoleUser, Content: "hello", PlatformMessageID: "w-abc-1", CreatedAt: at},
		{ID: 6, Seq: 2, Role: core.RoleTool, Content: `{"ok":true}`, CreatedAt: at},
		{ID: 9, Seq: 4, Role: core.RoleAssistant, Content: "A reminder", CreatedAt: at.Add(time.Hour)},
	}

	status, hdr, body := b.get(t, "/web/history?client_id=client-0001&limit=20")

	require.Equal(t, http.StatusOK, status)
	require.Contains(t, hdr.Get("Content-Type"), "application/json")
	require.JSONEq(t, `{"messages": [
		{"id": "w-abc-1", "role": "user", "text": "hello", "at": "2025-03-14T09:00:00Z"},
		{"id": "w-abc-2", "role": "assistant", "text": "Hi Ada!", "at": "2025-03-14T09:00:01Z"},
		{"id": "m-9", "role": "assistant", "text": "A reminder", "at": "2025-03-14T10:00:00Z"}
	]}`, body)

	status, _, _ = b.get(t, "/web/history?client_id=client-0001")
	require.Equal(t, http.StatusOK, status)
	b.core.mu.Lock()
	require.Equal(t, []historyCall{
		{web.Platform, "client-0001", 20},
		{web.Platform, "client-0001", 50},
	}, b.core.historyCalls)
	b.core.mu.Unlock()
}

func TestHistoryOfUnknownClientIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)

	status, _, body := b.get(t, "/web/history?client_id=never-seen-1")

	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"messages": []}`, body)
}

func TestHistoryWithoutHistoryReaderIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{handler: func(f *fakeCore) core.Host { return core.InboundOnly{InboundHandler: f} }})

	status, _, body := b.get(t, "/web/history?client_id=client-0001")

	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"messages": []}`, body)
}

func TestHistoryErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		path   string
		status int
		body   string
	}{
		{"/web/history", 400, `{"error": "client_id must be 8 to 64 letters, digits, '-' or '_'"}`},
		{"/web/history?client_id=client-0001&limit=0", 400, `{"error": "limit must be a number from 1 to 500"}`},
		{"/web/history?client_id=client-0001&limit=lots", 400, `{"error": "limit must be a number from 1 to 500"}`},
		{"/web/events?client_id=no", 400, `{"error": "client_id must be 8 to 64 letters, digits, '-' or '_'"}`},
	}
	for _, tc := range cases {
		status, _, body := b.get(t, tc.path)
		require.Equal(t, tc.status, status, tc.path)
		require.JSONEq(t, tc.body, body, tc.path)
	}

	b.core.mu.Lock()
	b.core.historyErr = errors.New("store unreachable")
	b.core.mu.Unlock()
	status, _, body := b.get(t, "/web/history?client_id=client-0001")
	require.Equal(t, http.StatusInternalServerError, status)
	require.JSONEq(t, `{"error": "could not load the history"}`, body)
}

func TestChatPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.adapter.Title = `Ada's <chat>`

	status, hdr, body := b.get(t, "/")

	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	require.Contains(t, hdr.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, body, "<title>Ada&#39;s &lt;chat&gt;</title>", "the title is escaped")
	require.Contains(t, body, `const BOT_NAME = "Subaru";`)
	for _, want := range []string{"crypto.randomUUID", "localStorage", "/web/messages", "/web/events", "/web/history", "EventSource", "is typing"} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "http://", "no external assets")
	require.NotContains(t, body, "https://", "no external assets")
	require.NotContains(t, body, "{{", "template fully rendered")

	status, _, _ = b.get(t, "/not-the-chat")
	require.Equal(t, http.StatusNotFound, status, "only / is the page")
}

func TestStopEndsStreamsAndRefusesMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s1 := b.openStream(t, "client-0001")
	s2 := b.openStream(t, "client-0002")

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	start := time.Now()
	require.NoError(t, b.adapter.Stop(ctx))
	require.Less(t, time.Since(start), time.Second, "Stop returns promptly")

	s1.waitEnded(t)
	s2.waitEnded(t)
	resp := b.postJSON(t, map[string]string{"client_id": "client-0001", "text": "anyone?"})
	require.Equal(t, http.StatusServiceUnavailable, resp.Status)
	require.Equal(t, map[string]any{"error": "web chat is not running"}, resp.Body)
	status, _, _ := b.get(t, "/web/events?client_id=client-0001")
	require.Equal(t, http.StatusServiceUnavailable, status)
	_, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: "late"})
	require.ErrorContains(t, err, "web adapter is stopped")
	require.Empty(t, b.core.messages())
}

func TestPostBeforeStartIs503(t *testing.T) {
	t.Parallel()
	a := web.New()
	mux := http.NewServeMux()
	a.Mount(mux)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/web/messages", strings.NewReader(`{"client_id":"client-0001","text":"hi"}`))

	mux.ServeHTTP(rec, req)

	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.JSONEq(t, `{"error": "web chat is not running"}`, rec.Body.String())
}
