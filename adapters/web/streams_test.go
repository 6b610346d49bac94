package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core/coretest"
)

// openStreamFrom opens clientID's event stream from address ip and
// returns it once live, with a function that closes it from the client's
// side (the browser tab goes away).
func (b *testBundle) openStreamFrom(t *testing.T, clientID, ip string) (*stream, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.server.URL+"/web/events?client_id="+url.QueryEscape(clientID), nil)
	require.NoError(t, err)
	req.Header.Set(clientIPHeader, ip)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := &stream{events: make(chan sseEvent, 1000), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer close(s.events)
		readSSE(resp.Body, s.events)
	}()
	closeIt := func() {
		cancel()
		resp.Body.Close()
		<-s.ended
	}
	t.Cleanup(closeIt)
	require.Equal(t, sseEvent{Name: ":", Data: " connected"}, s.nextAny(t))
	return s, closeIt
}

// tryStream asks for a stream that the test expects refused.
func (b *testBundle) tryStream(t *testing.T, clientID, ip string) answer {
	t.Helper()
	return b.do(t, request{method: http.MethodGet, path: "/web/events?client_id=" + url.QueryEscape(clientID),
		header: map[string]string{clientIPHeader: ip}})
}

// waitOpenStreams waits, with a deadline, until the adapter holds n
// streams: a closed connection is noticed by the server on its own time.
func waitOpenStreams(t *testing.T, a *web.Adapter, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return a.OpenStreams() == n }, waitFor, 5*time.Millisecond,
		"open streams: want %d, have %d", n, a.OpenStreams())
}

// requireStreamRefused checks a refused stream as a client sees it: the
// status, Retry-After, the error in words, and the connection closed after
// the answer, so that refused clients hold no descriptor.
func requireStreamRefused(t *testing.T, a answer, status int, msg string) {
	t.Helper()
	require.Equal(t, status, a.Status, "%v", a.Body)
	require.Equal(t, "10", a.Header.Get("Retry-After"))
	require.Equal(t, map[string]any{"error": msg}, a.Body)
	require.True(t, a.Close, "the server closes the connection of a refused stream")
}

// The probe from issue 24: a 5th page of one browser is refused (the
// default cap is 4) while other browsers still connect; once a page
// closes, its place is free again. Replies still reach all open pages.
func TestFifthStreamOfAClientIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var tabs []*stream
	var closers []func()
	for range 4 {
		s, closeIt := b.openStreamFrom(t, "client-0001", "192.0.2.50")
		tabs = append(tabs, s)
		closers = append(closers, closeIt)
	}
	requireStreamRefused(t, b.tryStream(t, "client-0001", "192.0.2.50"), http.StatusTooManyRequests,
		"This chat is open in too many pages: close one and try again.")
	requireStreamRefused(t, b.tryStream(t, "client-0001", "198.51.100.9"), http.StatusTooManyRequests,
		"This chat is open in too many pages: close one and try again.")
	b.openStreamFrom(t, "client-0002", "192.0.2.50")
	require.Equal(t, 5, b.adapter.OpenStreams())

	ids := b.send(t, "client-0001", "to every open page")
	for _, s := range tabs {
		require.Equal(t, ids[0], s.nextMessage(t).ID)
	}

	closers[0]()
	waitOpenStreams(t, b.adapter, 4)
	b.openStreamFrom(t, "client-0001", "192.0.2.50")
}

// One address may hold streams_per_ip streams, across its clients.
func TestStreamsPerAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{limits: &web.Limits{StreamsPerIP: 3}})
	for i := range 3 {
		b.openStreamFrom(t, fmt.Sprintf("client-%04d", i), "2001:db8:5::1")
	}
	requireStreamRefused(t, b.tryStream(t, "client-9999", "2001:db8:5::2"), http.StatusTooManyRequests,
		"Too many chat pages are open from your network: close one and try again.")
	b.openStreamFrom(t, "client-9999", "192.0.2.60")
	require.Equal(t, 4, b.adapter.OpenStreams())
}

// The web chat holds at most max_streams streams in all: past that every
// new stream is refused at once (503) and its connection closed, and a
// flood of refused streams leaves nothing open; Send still reaches the
// admitted ones.
func TestTotalStreamCap(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{limits: &web.Limits{MaxStreams: 3}})
	var admitted []*stream
	for i := range 3 {
		s, _ := b.openStreamFrom(t, fmt.Sprintf("client-%04d", i), fmt.Sprintf("192.0.2.%d", 70+i))
		admitted = append(admitted, s)
	}
	for i := range 200 {
		requireStreamRefused(t, b.tryStream(t, fmt.Sprintf("other-%04d", i), fmt.Sprintf("198.51.100.%d", i)),
			http.StatusServiceUnavailable, "The web chat is full right now: try again in a moment.")
	}
	require.Equal(t, 3, b.adapter.OpenStreams())
	for i, s := range admitted {
		ids := b.send(t, fmt.Sprintf("client-%04d", i), "still here")
		require.Equal(t, ids[0], s.nextMessage(t).ID)
	}
}

// Pages that go away leave the hub: after their connections close, the
// chat holds no stream and the caps count from zero again.
func TestClosedStreamsLeave(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{limits: &web.Limits{StreamsPerClient: 2, MaxStreams: 4}})
	var closers []func()
	for i := range 4 {
		// An address each: none holds more, so none makes room.
		_, closeIt := b.openStreamFrom(t, fmt.Sprintf("client-%04d", i/2), fmt.Sprintf("192.0.2.%d", 80+i))
		closers = append(closers, closeIt)
	}
	require.Equal(t, http.StatusServiceUnavailable, b.tryStream(t, "client-0009", "192.0.2.89").Status)
	for _, c := range closers {
		c()
	}
	waitOpenStreams(t, b.adapter, 0)
	for range 2 {
		b.openStreamFrom(t, "client-0000", "192.0.2.80")
	}
	b.openStreamFrom(t, "client-0009", "192.0.2.81")
	require.Equal(t, 3, b.adapter.OpenStreams())
}

// When every place is taken, a new page takes the place of the oldest
// stream of the address holding the most, if it holds at least two more
// than the newcomer's address; the evicted page's stream ends (it
// reconnects). When every address holds as many, the newcomer is
// refused rather than the pages taking turns (issue 30: 1,000 streams
// held by a flood kept every other user's page out with 503).
func TestFullChatEvictsTheAddressHoldingTheMost(t *testing.T) {
	t.Parallel()
	logs := &coretest.Logs{}
	b := setup(t, setupOpts{limits: &web.Limits{MaxStreams: 4}, logger: logs.Logger()})
	var flood []*stream
	for i := range 3 {
		s, _ := b.openStreamFrom(t, fmt.Sprintf("flood-%04d", i), "203.0.113.66")
		flood = append(flood, s)
	}
	b.openStreamFrom(t, "neighbour-01", "192.0.2.91")

	user, _ := b.openStreamFrom(t, "user-000001", "198.51.100.1")
	flood[0].waitEnded(t)
	require.Equal(t, 4, b.adapter.OpenStreams())
	b.openStreamFrom(t, "user-000002", "198.51.100.2")
	flood[1].waitEnded(t)
	requireStreamRefused(t, b.tryStream(t, "user-000003", "198.51.100.3"), http.StatusServiceUnavailable,
		"The web chat is full right now: try again in a moment.")
	require.Equal(t, 4, b.adapter.OpenStreams())

	// The pages that got in are live; the flood's last stream too.
	ids := b.send(t, "user-000001", "you got in")
	require.Equal(t, ids[0], user.nextMessage(t).ID)
	ids = b.send(t, "flood-0002", "still here")
	require.Equal(t, ids[0], flood[2].nextMessage(t).ID)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "web chat full: the oldest stream") }, waitFor, 5*time.Millisecond)
	require.Contains(t, logs.String(), "ip=203.0.113.66")
}

// A stream lasts adapters.web.limits.stream_lifetime (less up to a
// tenth), then ends; the page reconnects and is live again, and a reply
// sent while it was away is in the history it reloads.
func TestStreamsEndAfterTheirLifetime(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{limits: &web.Limits{StreamLifetime: time.Minute}})
	s, _ := b.openStreamFrom(t, "client-0001", "192.0.2.10")
	b.clock.WaitForTimers(t, 1, waitFor)
	b.clock.Advance(54 * time.Second)
	select {
	case <-s.ended:
		t.Fatal("ended before nine tenths of its lifetime")
	default:
	}
	b.clock.Advance(6 * time.Second)
	s.waitEnded(t)
	waitOpenStreams(t, b.adapter, 0)

	again, _ := b.openStreamFrom(t, "client-0001", "192.0.2.10")
	ids := b.send(t, "client-0001", "welcome back")
	require.Equal(t, ids[0], again.nextMessage(t).ID)
}
