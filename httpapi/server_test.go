package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/httpapi"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	s := httpapi.New("127.0.0.1:0", nil)
	var healthy atomic.Bool
	healthy.Store(true)
	s.AddHealthCheck("store", func(context.Context) error { return nil })
	s.AddHealthCheck("adapter:web", func(context.Context) error {
		if healthy.Load() {
			return nil
		}
		return errors.New("gateway disconnected")
	})
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})

	get := func() (int, map[string]any) {
		resp, err := http.Get("http://" + s.Addr() + "/healthz")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}
	code, body := get()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok", body["status"])

	healthy.Store(false)
	code, body = get()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "unhealthy", body["status"])
	require.Equal(t, map[string]any{"store": "ok", "adapter:web": "gateway disconnected"}, body["components"])
}

func TestStartFailsOnATakenAddress(t *testing.T) {
	t.Parallel()
	a := httpapi.New("127.0.0.1:0", nil)
	require.NoError(t, a.Start())
	defer a.Shutdown(context.Background())
	b := httpapi.New(a.Addr(), nil)
	err := b.Start()
	require.ErrorContains(t, err, "listening on "+a.Addr())
}

func TestHealthzReportsWithoutFailing(t *testing.T) {
	t.Parallel()
	s := httpapi.New("127.0.0.1:0", nil)
	var state atomic.Value
	state.Store("unknown")
	s.AddHealthCheck("store", func(context.Context) error { return nil })
	s.AddHealthReport("llm", func() string { return state.Load().(string) })
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	get := func() (int, map[string]any) {
		resp, err := http.Get("http://" + s.Addr() + "/healthz")
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}
	for _, st := range []string{"unknown", "auth", "ok"} {
		state.Store(st)
		code, body := get()
		require.Equal(t, http.StatusOK, code, "a report never fails the check")
		require.Equal(t, "ok", body["status"])
		require.Equal(t, map[string]any{"store": "ok", "llm": st}, body["components"])
	}
}

func TestComponentsAreWhatHealthzComputes(t *testing.T) {
	t.Parallel()
	s := httpapi.New("127.0.0.1:0", nil)
	since := time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)
	s.AddHealthCheck("store", func(context.Context) error { return nil })
	s.AddHealthCheck("adapter:telegram", func(context.Context) error { return errors.New("polling failing: 401 Unauthorized") })
	s.AddHealthDetail("llm", func() httpapi.Report {
		return httpapi.Report{State: "auth", Error: "401 invalid api key", Since: since}
	})
	s.AddHealthReport("mcp:files", func() string { return "down: connection refused" })

	require.Equal(t, []httpapi.Component{
		{Name: "adapter:telegram", State: "failing", Error: "polling failing: 401 Unauthorized", Decides: true},
		{Name: "llm", State: "auth", Error: "401 invalid api key", Since: since},
		{Name: "mcp:files", State: "down: connection refused"},
		{Name: "store", State: "ok", Decides: true},
	}, s.Components(context.Background()))

	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	resp, err := http.Get("http://" + s.Addr() + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, map[string]any{"store": "ok", "adapter:telegram": "polling failing: 401 Unauthorized",
		"llm": "auth", "mcp:files": "down: connection refused"}, body["components"], "a report's state only, as before")
}

func TestOnShutdownRunsWhenShutdownBegins(t *testing.T) {
	t.Parallel()
	s := httpapi.New("127.0.0.1:0", nil)
	ended := make(chan struct{})
	// A stream that ends only when told: Shutdown would wait for it.
	s.Mux().HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-ended
	})
	s.OnShutdown(func() { close(ended) })
	require.NoError(t, s.Start())
	resp, err := http.Get("http://" + s.Addr() + "/stream")
	require.NoError(t, err)
	defer resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx), "the stream ended, so shutdown did not time out")
}
