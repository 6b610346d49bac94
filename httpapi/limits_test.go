package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/httpapi"
)

// limitsBundle is a started server with test routes.
type limitsBundle struct {
	srv   *httpapi.Server
	logs  *coretest.Logs
	clock *coretest.Clock
	// release ends the /block handlers.
	release chan struct{}
	// blocked counts /block requests being served.
	blocked chan struct{}
}

func setupLimits(t *testing.T, o httpapi.Options) *limitsBundle {
	t.Helper()
	b := &limitsBundle{logs: &coretest.Logs{}, clock: coretest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)),
		release: make(chan struct{}), blocked: make(chan struct{}, 100)}
	o.Now = b.clock.Now
	b.srv = httpapi.NewWithOptions("127.0.0.1:0", b.logs.Logger(), o)
	mux := b.srv.Mux()
	mux.HandleFunc("GET /block", func(w http.ResponseWriter, r *http.Request) {
		b.blocked <- struct{}{}
		select {
		case <-b.release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "released")
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			httpapi.WriteError(w, http.StatusBadRequest, "reading the body: "+err.Error())
			return
		}
		_, _ = w.Write(body)
	})
	mux.HandleFunc("POST /early", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, http.StatusUnauthorized, "refused before the body")
	})
	// A stream that only writes, like the web chat's and the console's.
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	require.NoError(t, b.srv.Start())
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.srv.Shutdown(ctx)
	})
	return b
}

// dial opens a raw connection to the server, closed at cleanup.
func (b *limitsBundle) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", b.srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedByServer reports whether the server closed c: a read that ends
// (EOF or reset) within 5 s, after whatever response came first.
func closedByServer(t *testing.T, c net.Conn) (string, bool) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(got), false
	}
	return string(got), true
}

// get sends a GET on c and reads the response.
func get(t *testing.T, c net.Conn, path string) *http.Response {
	t.Helper()
	_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: parley\r\n\r\n", path)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp
}

func (b *limitsBundle) waitStats(t *testing.T, ok func(httpapi.ConnStats) bool) httpapi.ConnStats {
	t.Helper()
	require.Eventually(t, func() bool { return ok(b.srv.ConnStats()) }, 5*time.Second, 5*time.Millisecond,
		"stats: %+v", b.srv.ConnStats())
	return b.srv.ConnStats()
}

// Past http.max_connections a new connection is closed at once, never
// queued, while every place is taken by a request in progress; idle
// connections and silent ones make room instead.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{MaxConnections: 3})

	// Three requests in progress hold the three places.
	var wg sync.WaitGroup
	conns := make([]net.Conn, 3)
	for i := range conns {
		conns[i] = b.dial(t)
		_, err := io.WriteString(conns[i], "GET /block HTTP/1.1\r\nHost: parley\r\n\r\n")
		require.NoError(t, err)
		<-b.blocked
	}
	require.Equal(t, 3, b.srv.ConnStats().Open)

	over := b.dial(t)
	_, _ = io.WriteString(over, "GET /healthz HTTP/1.1\r\nHost: parley\r\n\r\n")
	got, closed := closedByServer(t, over)
	require.True(t, closed, "the fourth connection is closed at once")
	require.Empty(t, got, "with no answer")
	st := b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Refused == 1 })
	require.Equal(t, httpapi.ConnStats{Open: 3, Max: 3, Refused: 1}, st)
	require.Contains(t, b.logs.String(), "level=WARN msg=\"http.max_connections reached")
	require.Contains(t, b.logs.String(), "max=3 events=1 refused_total=1")

	// The requests end; their connections stay open, idle.
	close(b.release)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Idle == 3 })

	// A new one is served: the longest-idle connection made room.
	fresh := b.dial(t)
	require.Equal(t, http.StatusOK, get(t, fresh, "/healthz").StatusCode)
	st = b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Reclaimed == 1 })
	served := 0
	for _, c := range conns {
		_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: parley\r\n\r\n")
		if err != nil {
			continue
		}
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
			served++
		}
	}
	require.Equal(t, 2, served, "one idle connection was closed, the others still serve")
	require.Equal(t, 3, st.Open)
	require.EqualValues(t, 1, st.Refused, "nothing more refused")
	require.Equal(t, 1, strings.Count(b.logs.String(), "http.max_connections reached"), "one line per 10 s")

	// Every connection closed: every place is free again.
	for _, c := range append(conns, fresh) {
		_ = c.Close()
	}
	b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Open == 0 })
}

// Connections that never send a byte hold a place for at most 2 s of a
// full server: then a new connection takes it.
func TestSilentConnectionsMakeRoom(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{MaxConnections: 2})
	silent := []net.Conn{b.dial(t), b.dial(t)}
	b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Open == 2 })

	_, closed := closedByServer(t, b.dial(t))
	require.True(t, closed, "silent for less than 2 s: they keep their places")

	b.clock.Advance(2 * time.Second)
	c := b.dial(t)
	require.Equal(t, http.StatusOK, get(t, c, "/healthz").StatusCode)
	_, closed = closedByServer(t, silent[0])
	require.True(t, closed, "the oldest silent connection made room")
	st := b.srv.ConnStats()
	require.EqualValues(t, 1, st.Refused)
	require.EqualValues(t, 1, st.Reclaimed)

	// Lines repeat after 10 s, with the events kept back meanwhile: the
	// idle connection goes before the silent one.
	b.waitStats(t, func(s httpapi.ConnStats) bool { return s.Idle == 1 })
	b.clock.Advance(10 * time.Second)
	require.Equal(t, http.StatusOK, get(t, b.dial(t), "/healthz").StatusCode)
	_, closed = closedByServer(t, c)
	require.True(t, closed, "the idle connection made room")
	require.Equal(t, 2, strings.Count(b.logs.String(), "http.max_connections reached"), b.logs.String())
	require.Contains(t, b.logs.String(), "events=2 refused_total=1 reclaimed_total=2")
}

// A body that does not arrive within the read timeout ends its request
// and its connection; a stream that only writes runs past it, and so
// does a handler that takes its time once the body is in.
func TestBodiesHaveADeadlineStreamsDoNot(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	b := setupLimits(t, httpapi.Options{ReadTimeout: timeout})

	// 1,000 bytes declared, 1 sent.
	c := b.dial(t)
	start := time.Now()
	_, err := io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: parley\r\nContent-Length: 1000\r\n\r\nx")
	require.NoError(t, err)
	got, closed := closedByServer(t, c)
	require.True(t, closed, "the slow body's connection is closed")
	require.GreaterOrEqual(t, time.Since(start), timeout)
	require.Contains(t, got, "HTTP/1.1 400 Bad Request")
	require.Contains(t, got, "i/o timeout")

	// A stream runs for 4 read timeouts and more.
	resp, err := http.Get("http://" + b.srv.Addr() + "/stream")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	start = time.Now()
	for time.Since(start) < 4*timeout {
		require.True(t, sc.Scan(), "the stream was cut after %s: %v", time.Since(start), sc.Err())
	}

	// A whole body, then a connection used again after a wait longer
	// than the read timeout: the deadline went with the body.
	c = b.dial(t)
	br := bufio.NewReader(c)
	for _, body := range []string{"first", "second"} {
		_, err = fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: parley\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		echoed, _ := io.ReadAll(resp.Body)
		require.Equal(t, body, string(echoed))
		require.Empty(t, resp.Header.Get("Connection"), "kept alive")
		time.Sleep(2 * timeout) // idle past the read timeout on purpose: the connection must survive it
	}
}

// A handler that answers before reading the body (a refusal) answers at
// once and closes the connection, instead of waiting for the rest.
func TestAnswerBeforeTheBodyClosesTheConnection(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{ReadTimeout: time.Minute})
	c := b.dial(t)
	_, err := io.WriteString(c, "POST /early HTTP/1.1\r\nHost: parley\r\nContent-Length: 1000\r\n\r\nx")
	require.NoError(t, err)
	got, closed := closedByServer(t, c)
	require.True(t, closed, "closed well before the minute: %q", got)
	require.Contains(t, got, "HTTP/1.1 401 Unauthorized")
	require.Contains(t, got, "Connection: close")
	require.Contains(t, got, "refused before the body")
}

// A panicking handler is an error in the log, not a debug line.
func TestHandlerPanicIsLoggedAsAnError(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, httpapi.Options{})
	_, err := http.Get("http://" + b.srv.Addr() + "/panic")
	require.Error(t, err)
	require.Eventually(t, func() bool {
		return strings.Contains(b.logs.String(), `level=ERROR msg="http handler panicked"`)
	}, 5*time.Second, 5*time.Millisecond)
	require.Contains(t, b.logs.String(), "handler bug")
}

// The client's address: the peer, unless the peer is a trusted proxy;
// then the nearest X-Forwarded-For hop that is not one.
func TestClientIPThroughTrustedProxies(t *testing.T) {
	t.Parallel()
	srv := httpapi.NewWithOptions("127.0.0.1:0", nil, httpapi.Options{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	srv.Mux().HandleFunc("GET /ip", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, httpapi.ClientIP(r).String())
	})
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy", "203.0.113.7:5000", nil, "203.0.113.7"},
		{"an untrusted peer's header is ignored", "203.0.113.7:5000", []string{"198.51.100.1"}, "203.0.113.7"},
		{"one proxy", "10.0.0.2:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a spoofed hop left of the client", "10.0.0.2:5000", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"two proxies", "10.0.0.2:5000", []string{"198.51.100.1, 10.1.2.3"}, "198.51.100.1"},
		{"two headers", "10.0.0.2:5000", []string{"1.1.1.1, 198.51.100.1", "10.1.2.3"}, "198.51.100.1"},
		{"only proxies", "10.0.0.2:5000", []string{"10.9.9.9, 10.1.2.3"}, "10.9.9.9"},
		{"no header", "10.0.0.2:5000", nil, "10.0.0.2"},
		{"garbage stops the walk", "10.0.0.2:5000", []string{"198.51.100.1, unknown, 10.1.2.3"}, "10.1.2.3"},
		{"hops with ports", "10.0.0.2:5000", []string{"[2001:db8::5]:443, 10.1.2.3:80"}, "2001:db8::5"},
		{"ipv6 proxy, mapped client", "[::1]:5000", []string{"::ffff:198.51.100.9"}, "198.51.100.9"},
		{"mapped peer", "[::ffff:203.0.113.7]:5000", nil, "203.0.113.7"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/ip", nil)
		req.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		require.Equal(t, tc.want, rec.Body.String(), tc.name)
	}
}

// X-Forwarded-Proto counts only from a trusted proxy: from any other peer
// it is a header anyone can write.
func TestHTTPSOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	srv := httpapi.NewWithOptions("127.0.0.1:0", nil, httpapi.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	srv.Mux().HandleFunc("GET /https", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, httpapi.HTTPS(r))
	})
	for _, tc := range []struct {
		name, peer, proto string
		want              string
	}{
		{"untrusted peer", "203.0.113.7:5000", "https", "false"},
		{"trusted proxy", "10.0.0.2:5000", "https", "true"},
		{"trusted proxy, any case", "10.0.0.2:5000", "HTTPS", "true"},
		{"trusted proxy, plain", "10.0.0.2:5000", "http", "false"},
		{"trusted proxy, the client's hop first", "10.0.0.2:5000", "https, http", "true"},
		{"trusted proxy, no header", "10.0.0.2:5000", "", "false"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/https", nil)
		req.RemoteAddr = tc.peer
		if tc.proto != "" {
			req.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		require.Equal(t, tc.want, rec.Body.String(), tc.name)
	}
}
