package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/httpapi"
)

// dialFrom opens a raw connection to the server from a loopback address
// of its own (all of 127.0.0.0/8 is this machine's), closed at cleanup.
func (b *limitsBundle) dialFrom(t *testing.T, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", b.srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// slowBody starts a post that declares size bytes and sends one.
func slowBody(t *testing.T, c net.Conn, size int) {
	t.Helper()
	_, err := fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: parley\r\nContent-Length: %d\r\n\r\nx", size)
	require.NoError(t, err)
}

// One address holds at most its share of the connections: past it its
// new connections are refused at once, or take the place of its own
// idle, silent or slow ones, while other addresses still connect
// (issue 30: one address refused every new connection with slow bodies).
func TestEachAddressHasAShare(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{MaxConnections: 10, MaxConnectionsPerIP: 3, ReadTimeout: time.Minute})
	for range 3 {
		c := b.dialFrom(t, "127.0.0.5")
		_, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: parley\r\n\r\n")
		require.NoError(t, err)
		<-b.blocked
	}
	_, closed := closedByServer(t, b.dialFrom(t, "127.0.0.5"))
	require.True(t, closed, "the address's fourth connection is closed at once")
	st := b.waitStats(t, func(s httpapi.ConnStats) bool { return s.RefusedPerAddress == 1 })
	require.Equal(t, 3, st.Open)
	require.Zero(t, st.Refused, "the server is far from its cap")
	require.Contains(t, b.logs.String(), `level=WARN msg="http.max_connections_per_ip reached`)
	require.Contains(t, b.logs.String(), "ip=127.0.0.5 per_ip=3")
	require.Contains(t, b.logs.String(), "list it in http.trusted_proxies", "a loopback address may be a proxy")

	// Others are served.
	require.Equal(t, http.StatusOK, get(t, b.dialFrom(t, "127.0.0.6"), "/healthz").StatusCode)
	require.Equal(t, http.StatusOK, get(t, b.dialFrom(t, "127.0.0.1"), "/healthz").StatusCode)

	// Slow bodies from one address: its own oldest makes room once it
	// is behind the minimum rate, no other address's.
	slow := []net.Conn{b.dialFrom(t, "127.0.0.7"), b.dialFrom(t, "127.0.0.7"), b.dialFrom(t, "127.0.0.7")}
	for _, c := range slow {
		slowBody(t, c, 100)
	}
	b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Bodies == 3 })
	_, closed = closedByServer(t, b.dialFrom(t, "127.0.0.7"))
	require.True(t, closed, "no time has passed on the clock: no body is behind")
	b.clock.Advance(10 * time.Millisecond)
	c := b.dialFrom(t, "127.0.0.7")
	require.Equal(t, http.StatusOK, get(t, c, "/healthz").StatusCode, "the oldest slow body made room")
	_, closed = closedByServer(t, slow[0])
	require.True(t, closed, "closed, as a silent connection is: its request ends with it")
	st = b.srv.ConnStats()
	require.EqualValues(t, 1, st.SlowBodies)
	require.EqualValues(t, 2, st.RefusedPerAddress)
}

// A trusted proxy carries many clients on its connections: it has no
// share of its own, only the cap.
func TestTrustedProxiesHaveNoShare(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{MaxConnections: 10, MaxConnectionsPerIP: 2,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.8/32")}})
	for range 4 {
		c := b.dialFrom(t, "127.0.0.8")
		_, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: parley\r\n\r\n")
		require.NoError(t, err)
		<-b.blocked
	}
	require.Equal(t, 4, b.srv.ConnStats().Open)
	require.Zero(t, b.srv.ConnStats().RefusedPerAddress)
}

// At the cap, a body that falls behind the minimum rate gives its place
// to a new connection, as a silent connection does: slow bodies from
// many addresses cannot hold the server either. A body that keeps up
// keeps its place.
func TestSlowBodiesMakeRoomAtTheCap(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{MaxConnections: 16, ReadTimeout: time.Minute})
	var slow []net.Conn
	for i := range 15 {
		c := b.dialFrom(t, fmt.Sprintf("127.0.1.%d", i+1))
		slowBody(t, c, 100)
		slow = append(slow, c)
	}
	// 2 KiB of 4 at once: ahead of 1 KiB a second for 2 s; the slow
	// ones, a byte each, are behind it after a millisecond.
	steady := b.dialFrom(t, "127.0.2.1")
	_, err := io.WriteString(steady, "POST /echo HTTP/1.1\r\nHost: parley\r\nContent-Length: 4096\r\n\r\n"+strings.Repeat("s", 2048))
	require.NoError(t, err)
	b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Bodies == 16 })
	_, closed := closedByServer(t, b.dialFrom(t, "127.0.0.1"))
	require.True(t, closed, "no time has passed on the clock: no body is behind")

	b.clock.Advance(1500 * time.Millisecond)
	// Requests that stay busy, so that only slow bodies can make room.
	for range 15 {
		c := b.dialFrom(t, "127.0.0.1")
		_, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: parley\r\n\r\n")
		require.NoError(t, err)
		<-b.blocked
	}
	for i, c := range slow {
		_, closed := closedByServer(t, c)
		require.True(t, closed, "slow body %d made room", i)
	}
	st := b.srv.ConnStats()
	require.EqualValues(t, 15, st.SlowBodies)
	require.EqualValues(t, 1, st.Refused)
	require.Equal(t, 1, st.Bodies, "the steady body kept its place")
	_, err = steady.Write([]byte(strings.Repeat("s", 2048)))
	require.NoError(t, err)
	require.NoError(t, steady.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(steady), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	require.Len(t, body, 4096)
}

// A small body has a short deadline of its own, well under
// http.read_timeout: a login form trickled at a byte a second ends
// within about 5 s, not the minute the read timeout allows.
func TestSmallBodiesHaveAShortDeadline(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{ReadTimeout: time.Minute})
	c := b.dialFrom(t, "127.0.0.1")
	start := time.Now()
	slowBody(t, c, 100)
	require.NoError(t, c.SetReadDeadline(start.Add(20*time.Second)))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "closed by the server, not by the test's deadline")
	took := time.Since(start)
	require.Contains(t, string(got), "HTTP/1.1 400")
	require.GreaterOrEqual(t, took, 5*time.Second)
	require.Less(t, took, 10*time.Second)
}

// The API asks the back-off before it reads a body: an address that must
// wait is answered 429 at once and its connection closed, however slowly
// it sends the rest (the console's login does the same since issue 30).
func TestAPIBackoffIsCheckedBeforeTheBody(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{ReadTimeout: time.Minute})
	httpapi.NewAPI(httpapi.APIConfig{Token: "api-token-0123456789", Now: b.clock.Now, Backoff: b.srv.Backoff()}, nil).Mount(b.srv.Mux())
	for i := range 6 {
		c := b.dialFrom(t, "127.0.0.9")
		_, err := fmt.Fprintf(c, "GET /api/v1/jobs HTTP/1.1\r\nHost: parley\r\nAuthorization: Bearer guess-%d\r\n\r\n", i)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	c := b.dialFrom(t, "127.0.0.9")
	start := time.Now()
	_, err := io.WriteString(c, "POST /api/v1/messages HTTP/1.1\r\nHost: parley\r\nAuthorization: Bearer api-token-0123456789\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	got, closed := closedByServer(t, c)
	require.True(t, closed)
	require.Less(t, time.Since(start), 2*time.Second, "answered at once, not after the body")
	require.True(t, strings.HasPrefix(got, "HTTP/1.1 429 Too Many Requests"), "%q", got)
	require.Contains(t, got, "Retry-After: 1\r\n")
	require.Contains(t, got, "Connection: close\r\n")
}
