package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An idle stream gets a comment now and then so proxies keep it open.
func TestIdleStreamIsPinged(t *testing.T) {
	t.Parallel()
	a := New()
	a.pingEvery = 10 * time.Millisecond
	mux := http.NewServeMux()
	a.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/web/events?client_id=client-0001", nil)
	require.NoError(t, err)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	r := bufio.NewReader(resp.Body)
	var lines []string
	for len(lines) < 4 {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		lines = append(lines, line)
	}
	require.Equal(t, []string{": connected\n", "\n", ": ping\n", "\n"}, lines)
	cancel()
	require.NoError(t, a.Stop(context.Background()))
}
