package discordtest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
)

// wait bounds every wait in these tests.
const wait = 5 * time.Second

type testBundle struct {
	srv   *discordtest.Server
	alice discordtest.User
	bob   discordtest.User
}

func setup(t *testing.T, opts ...discordtest.Option) *testBundle {
	t.Helper()
	return &testBundle{
		srv:   discordtest.NewServer(t, opts...),
		alice: discordtest.User{ID: "100000000000000001", Username: "alice", GlobalName: "Alice"},
		bob:   discordtest.User{ID: "100000000000000002", Username: "bob"},
	}
}

// client is a real discordgo session and the events its handlers saw.
type client struct {
	dg      *discordgo.Session
	creates chan *discordgo.MessageCreate
	updates chan *discordgo.MessageUpdate
	types   chan string // the t of every dispatch, known or not
}

// newClient makes a discordgo session for the fake, not yet open.
func (tb *testBundle) newClient(t *testing.T, intents discordgo.Intent) *client {
	t.Helper()
	dg, err := discordgo.New("Bot " + tb.srv.Token())
	require.NoError(t, err)
	dg.Client = tb.srv.HTTPClient()
	dg.Identify.Intents = intents
	// Handlers run in the reading goroutine, in gateway order.
	dg.SyncEvents = true
	c := &client{
		dg:      dg,
		creates: make(chan *discordgo.MessageCreate, 64),
		updates: make(chan *discordgo.MessageUpdate, 64),
		types:   make(chan string, 64),
	}
	// Sends never block, so a full buffer cannot wedge discordgo's reader.
	dg.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		select {
		case c.creates <- m:
		default:
		}
	})
	dg.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageUpdate) {
		select {
		case c.updates <- m:
		default:
		}
	})
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		select {
		case c.types <- e.Type:
		default:
		}
	})
	return c
}

// open opens a DM-and-guild client and closes it when the test ends
// (before the server, whose Cleanup was registered first).
func (tb *testBundle) open(t *testing.T) *client {
	t.Helper()
	c := tb.newClient(t, discordgo.IntentsDirectMessages|discordgo.IntentsGuildMessages|discordgo.IntentMessageContent)
	c.openAndClose(t, tb.srv)
	return c
}

// openAndClose opens c, waits until the fake saw it ready (so closing it
// cannot race discordgo's first heartbeat) and closes it when the test
// ends, before the server, whose Cleanup was registered first.
func (c *client) openAndClose(t *testing.T, srv *discordtest.Server) {
	t.Helper()
	require.NoError(t, c.dg.Open())
	t.Cleanup(func() { _ = c.dg.Close() })
	srv.WaitReady(t, wait)
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		var zero T
		t.Fatalf("no %T reached the handler", zero)
		return zero
	}
}

// requireRESTError asserts err is Discord's error with status and code.
func requireRESTError(t *testing.T, err error, status, code int) *discordgo.RESTError {
	t.Helper()
	var re *discordgo.RESTError
	require.ErrorAs(t, err, &re)
	require.Equal(t, status, re.Response.StatusCode)
	require.NotNil(t, re.Message, string(re.ResponseBody))
	require.Equal(t, code, re.Message.Code, string(re.ResponseBody))
	return re
}

// nonceSend is a create-message body with the nonce fields discordgo's
// MessageSend lacks.
type nonceSend struct {
	Content      string `json:"content"`
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
}

// sendWithNonce posts a message through discordgo's generic request path.
func sendWithNonce(c *client, channelID string, body nonceSend) (*discordgo.Message, error) {
	ep := discordgo.EndpointChannelMessages(channelID)
	raw, err := c.dg.RequestWithBucketID(http.MethodPost, ep, body, ep)
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// rawGateway is a bare websocket client for protocol details.
type rawGateway struct {
	t  *testing.T
	ws *websocket.Conn
}

type rawFrame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  int64           `json:"s"`
	T  string          `json:"t"`
}

func (tb *testBundle) dialRaw(t *testing.T) *rawGateway {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(tb.srv.GatewayURL()+"/?v=10&encoding=json", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = ws.Close() })
	g := &rawGateway{t: t, ws: ws}
	hello := g.read()
	require.Equal(t, 10, hello.Op)
	return g
}

func (g *rawGateway) read() rawFrame {
	g.t.Helper()
	require.NoError(g.t, g.ws.SetReadDeadline(time.Now().Add(wait)))
	var f rawFrame
	require.NoError(g.t, g.ws.ReadJSON(&f))
	return f
}

func (g *rawGateway) send(op int, d any) {
	g.t.Helper()
	require.NoError(g.t, g.ws.WriteJSON(map[string]any{"op": op, "d": d}))
}

// identify sends IDENTIFY and returns READY's session id.
func (g *rawGateway) identify(token string) string {
	g.t.Helper()
	g.send(2, map[string]any{"token": token, "intents": 1 << 12, "properties": map[string]string{}})
	f := g.read()
	require.Equal(g.t, "READY", f.T)
	require.Equal(g.t, int64(1), f.S)
	var ready struct {
		SessionID string `json:"session_id"`
	}
	require.NoError(g.t, json.Unmarshal(f.D, &ready))
	return ready.SessionID
}

// failures stands in for a test to catch the failure a wait reports,
// for tests of the waits' failure messages.
type failures struct {
	testing.TB
	msgs []string
}

func (f *failures) Fatalf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
