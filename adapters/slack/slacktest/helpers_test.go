package slacktest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// wait bounds every wait in these tests.
const wait = 5 * time.Second

type testBundle struct {
	srv   *slacktest.Server
	api   *slack.Client
	alice slacktest.User
	bob   slacktest.User
}

func setup(t *testing.T, opts ...slacktest.Option) *testBundle {
	t.Helper()
	srv := slacktest.NewServer(t, opts...)
	return &testBundle{
		srv:   srv,
		api:   newAPI(t, srv, srv.BotToken()),
		alice: slacktest.User{ID: "U0ALICE001", Name: "alice", RealName: "Alice Liddell", DisplayName: "ali"},
		bob:   slacktest.User{ID: "U0BOB00001", Name: "bob", RealName: "Bob"},
	}
}

// newAPI is a real slack-go client for srv with token, on its own
// transport so that no idle connection outlives the test.
func newAPI(t *testing.T, srv *slacktest.Server, token string) *slack.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return slack.New(token,
		slack.OptionAPIURL(srv.APIURL()),
		slack.OptionAppLevelToken(srv.AppToken()),
		slack.OptionHTTPClient(hc))
}

// sockClient is a running slack-go Socket Mode client and what it saw.
type sockClient struct {
	smc     *socketmode.Client
	events  chan socketmode.Event // events_api, in arrival order
	slashes chan socketmode.Event // slash_commands
	taps    chan socketmode.Event // interactive
	hellos  chan socketmode.Event
	runErr  chan error // what RunContext returned
}

// runSocket starts a Socket Mode client; it stops when the test ends,
// before the server closes (its Cleanup was registered first).
func (tb *testBundle) runSocket(t *testing.T, opts ...socketmode.Option) *sockClient {
	t.Helper()
	c := &sockClient{
		smc:     socketmode.New(tb.api, opts...),
		events:  make(chan socketmode.Event, 64),
		slashes: make(chan socketmode.Event, 16),
		taps:    make(chan socketmode.Event, 16),
		hellos:  make(chan socketmode.Event, 16),
		runErr:  make(chan error, 1),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.runErr <- c.smc.RunContext(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-c.smc.Events:
				var to chan socketmode.Event
				switch e.Type {
				case socketmode.EventTypeEventsAPI:
					to = c.events
				case socketmode.EventTypeHello:
					to = c.hellos
				case socketmode.EventTypeSlashCommand:
					to = c.slashes
				case socketmode.EventTypeInteractive:
					to = c.taps
				default:
					continue
				}
				select {
				case to <- e:
				case <-ctx.Done():
					return
				}
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return c
}

// message asserts that e carries a message event and returns it with its
// event_callback.
func message(t *testing.T, e socketmode.Event) (*slackevents.MessageEvent, *slackevents.EventsAPICallbackEvent) {
	t.Helper()
	outer, ok := e.Data.(slackevents.EventsAPIEvent)
	require.True(t, ok, "data is %T", e.Data)
	return messageOf(t, outer)
}

func messageOf(t *testing.T, outer slackevents.EventsAPIEvent) (*slackevents.MessageEvent, *slackevents.EventsAPICallbackEvent) {
	t.Helper()
	require.Equal(t, slackevents.CallbackEvent, outer.Type)
	cb, ok := outer.Data.(*slackevents.EventsAPICallbackEvent)
	require.True(t, ok, "outer data is %T", outer.Data)
	msg, ok := outer.InnerEvent.Data.(*slackevents.MessageEvent)
	require.True(t, ok, "inner event is %T", outer.InnerEvent.Data)
	return msg, cb
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		var zero T
		t.Fatalf("no %T arrived within %v", zero, wait)
		return zero
	}
}

// hit is one request an Events API receiver got.
type hit struct {
	header   http.Header
	verified bool // slack.NewSecretsVerifier accepted the signature
	body     []byte
	event    slackevents.EventsAPIEvent
}

// receiver is an app's Events API endpoint: it verifies the signature the
// way slack-go apps do, records the request and answers status(n) for the
// n-th request (from 1), or 401 when the signature is bad.
type receiver struct {
	url  string
	hits chan hit
	n    atomic.Int64
}

func newReceiver(t *testing.T, secret string, status func(n int64, r *http.Request) int) *receiver {
	t.Helper()
	rc := &receiver{hits: make(chan hit, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		h := hit{header: r.Header.Clone(), body: body}
		if sv, err := slack.NewSecretsVerifier(r.Header, secret); err == nil {
			_, _ = sv.Write(body)
			h.verified = sv.Ensure() == nil
		}
		h.event, _ = slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
		select {
		case rc.hits <- h:
		case <-r.Context().Done():
			return
		}
		if !h.verified {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(status(rc.n.Add(1), r))
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/slack/events"
	return rc
}

func always(status int) func(int64, *http.Request) int {
	return func(int64, *http.Request) int { return status }
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
