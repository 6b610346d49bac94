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

	"github.com/parleybot/parley/core/httpapi"
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
