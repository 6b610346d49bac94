package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// A server's ReadTimeout (a defence against slow bodies) does not end an
// idle stream: net/http lifts the read deadline once a request's body is
// read, and the stream reads nothing more. The stream keeps being pinged
// well past the timeout, and a reply sent then arrives.
func TestStreamOutlivesServerReadTimeout(t *testing.T) {
	t.Parallel()
	a := New()
	a.pingEvery = 20 * time.Millisecond
	mux := http.NewServeMux()
	a.Mount(mux)
	srv := httptest.NewUnstartedServer(mux)
	const readTimeout = 100 * time.Millisecond
	srv.Config.ReadTimeout = readTimeout
	srv.Start()
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/web/events?client_id=client-0001", nil)
	require.NoError(t, err)
	opened := time.Now()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	r := bufio.NewReader(resp.Body)
	readLine := func() string {
		t.Helper()
		line, err := r.ReadString('\n')
		require.NoError(t, err, "the stream ended %v after it opened", time.Since(opened))
		return line
	}
	require.Equal(t, ": connected\n", readLine())
	// The pings pace the wait: each is a frame the server wrote after the
	// deadline would have cut the stream.
	for time.Since(opened) < 5*readTimeout {
		line := readLine()
		require.Contains(t, []string{"\n", ": ping\n"}, line)
	}
	_, err = a.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "client-0001", Text: "late reply"})
	require.NoError(t, err)
	for {
		line := readLine()
		if line == "event: message\n" {
			require.Contains(t, readLine(), `"text":"late reply"`)
			break
		}
	}
	cancel()
	require.NoError(t, a.Stop(context.Background()))
}
