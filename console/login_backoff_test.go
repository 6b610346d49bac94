package console_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/console"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/httpapi"
)

// Wrong tokens at the login form from one address: 401s, then 429 with
// Retry-After for every try of that address, the right token included,
// until the wait is over; one log line per address per minute, never a
// token.
func TestLoginBacksOffWrongTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, token)
	for i := range 6 {
		resp, body := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {fmt.Sprintf("guess-%d", i)}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, body, "That is not the API token")
	}
	for _, given := range []string{"guess-7", token} {
		resp, body := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {given}})
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.Empty(t, resp.Cookies(), "no session while waiting")
		require.Contains(t, body, "Too many wrong tokens from your address: wait 1 s before trying again")
	}
	b.clock.Advance(time.Second)
	b.login(t) // the wait is over: the right token logs in

	logs := b.logs.String()
	require.Equal(t, 1, strings.Count(logs, "console login refused: wrong token"), logs)
	require.Contains(t, logs, "level=WARN")
	require.Contains(t, logs, "ip=127.0.0.1 wrong_tokens=1 refused_while_waiting=0")
	require.NotContains(t, logs, "guess-")
	require.NotContains(t, logs, token)

	// The login succeeded: the address starts afresh.
	for range 5 {
		resp, _ := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {"wrong"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
}

// An address that must wait is told so before its form is read, and its
// connection closed: a guesser that trickles its forms a byte a second
// holds nothing for them (issue 30: 2,200 such logins from one address
// held the listener, each read whole before the back-off was asked).
func TestLoginBackoffIsCheckedBeforeTheBody(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	srv := httpapi.NewWithOptions("127.0.0.1:0", nil, httpapi.Options{Now: clock.Now, ReadTimeout: time.Minute})
	c := console.New(console.Config{Token: token, Store: newFakeStore(), Clock: clock, Backoff: srv.Backoff()})
	c.Mount(srv.Mux())
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	for i := range 6 {
		resp, err := http.PostForm("http://"+srv.Addr()+"/console/login", url.Values{"token": {fmt.Sprintf("guess-%d", i)}})
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}

	conn, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = fmt.Fprintf(conn, "POST /console/login HTTP/1.1\r\nHost: parley\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
		"Content-Length: 1000\r\n\r\nt")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(start.Add(10*time.Second)))
	got, err := io.ReadAll(conn)
	require.NoError(t, err, "the server closed the connection")
	require.Less(t, time.Since(start), 2*time.Second, "answered at once, not after the body")
	require.True(t, strings.HasPrefix(string(got), "HTTP/1.1 429 Too Many Requests"), "%q", got)
	require.Contains(t, string(got), "Retry-After: 1\r\n")
	require.Contains(t, string(got), "Connection: close\r\n")
	require.Contains(t, string(got), "Too many wrong tokens from your address")
}
