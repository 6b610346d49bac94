package console_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/console"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/httpapi"
)

// liveEvery is how often the tests' live streams look for changes, on
// the fake clock.
const liveEvery = 2 * time.Second

// fakeBundle is a console over a fakeStore, with health the test sets,
// a fetcher of images, and a count of the scheduler's wake-ups.
type fakeBundle struct {
	*testBundle
	fs      *fakeStore
	console *console.Console
	woken   atomic.Int32
	mu      sync.Mutex
	health  []httpapi.Component
	// images are the files Fetch returns, by Ref.
	images map[string][]byte
}

// berlin is the owner's zone in the fake console's tests.
var berlin = mustLoad("Europe/Berlin")

func mustLoad(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func setupFake(t *testing.T, prices map[string]config.Price) *fakeBundle {
	t.Helper()
	b := &fakeBundle{
		testBundle: &testBundle{clock: coretest.NewClock(t0), logs: &coretest.Logs{}, token: token},
		fs:         newFakeStore(),
		images:     map[string][]byte{},
	}
	b.console = console.New(console.Config{
		Token: token, Store: b.fs, Facts: b.fs, Mood: b.fs, Location: berlin, Clock: b.clock, Logger: b.logs.Logger(),
		Health: func(context.Context) []httpapi.Component {
			b.mu.Lock()
			defer b.mu.Unlock()
			return append([]httpapi.Component(nil), b.health...)
		},
		Prices:      prices,
		JobsChanged: func() { b.woken.Add(1) },
		Fetch: func(_ context.Context, _ string, p core.Platform, a core.Attachment, max int64) ([]byte, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			data, ok := b.images[a.Ref]
			if !ok || p != telegram {
				return nil, errors.New("no such file on " + string(p))
			}
			return data, nil
		},
		Platforms: []core.Platform{telegram, web},
		LiveEvery: liveEvery,
	})
	mux := http.NewServeMux()
	b.console.Mount(mux)
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	// Streams end before the server waits for its requests.
	t.Cleanup(b.console.Close)
	return b
}

func (b *fakeBundle) setHealth(c ...httpapi.Component) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.health = c
}

// event is one server-sent event.
type event struct {
	id, name, data string
}

// sse is an open event stream.
type sse struct {
	resp   *http.Response
	events chan event
}

// openStream GETs path as an event stream with cookie c (and lastID as
// a reconnect's Last-Event-ID, unless "") and waits until it is live.
func (b *fakeBundle) openStream(t *testing.T, path string, c *http.Cookie, lastID string) *sse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	req.AddCookie(c)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &sse{resp: resp, events: make(chan event, 16)}
	connected := make(chan struct{})
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == ": connected":
				close(connected)
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				s.events <- ev
				ev = event{}
			}
		}
	}()
	select {
	case <-connected:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not open")
	}
	return s
}

// next is the next event, failing t after a while without one.
func (s *sse) next(t *testing.T) event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		require.True(t, ok, "the stream ended")
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return event{}
	}
}

// none checks that no event has come.
func (s *sse) none(t *testing.T) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected event %q: %.200s", ev.name, ev.data)
		}
	default:
	}
}

var liveRE = regexp.MustCompile(`data-live="([^"]+)"`)

// liveURL is the stream a page names, unescaped.
func liveURL(t *testing.T, body string) string {
	t.Helper()
	m := liveRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the page has a live stream")
	return strings.ReplaceAll(m[1], "&amp;", "&")
}
