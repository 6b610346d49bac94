package app

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHealthzURL(t *testing.T) {
	t.Parallel()
	for listen, want := range map[string]string{
		"127.0.0.1:8080":    "http://127.0.0.1:8080/healthz",
		"0.0.0.0:8080":      "http://127.0.0.1:8080/healthz",
		":9000":             "http://127.0.0.1:9000/healthz",
		"[::]:8080":         "http://[::1]:8080/healthz",
		"10.0.0.5:8080":     "http://10.0.0.5:8080/healthz",
		"bot.internal:8443": "http://bot.internal:8443/healthz",
	} {
		got, err := healthzURL(listen)
		require.NoError(t, err, listen)
		require.Equal(t, want, got, listen)
	}
	for _, listen := range []string{"127.0.0.1:0", "127.0.0.1", ""} {
		_, err := healthzURL(listen)
		require.Error(t, err, listen)
	}
}

// healthServer answers /healthz with status and counts the requests.
func healthServer(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"status":"x"}` + "\n"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestHealthCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)

	ok, okHits := healthServer(t, http.StatusOK)
	code, out, errOut := b.cli(filepath.Join(b.dir, "absent.yaml"), "health", "--url", ok.URL+"/healthz")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, `{"status":"x"}`+"\n", out, "the answer is shown")
	require.Equal(t, int32(1), okHits.Load())

	bad, _ := healthServer(t, http.StatusServiceUnavailable)
	code, out, errOut = b.cli(filepath.Join(b.dir, "absent.yaml"), "health", "--url", bad.URL+"/healthz")
	require.Equal(t, 1, code)
	require.Contains(t, out, `"status":"x"`)
	require.Contains(t, errOut, "503 Service Unavailable")

	// Nothing listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	code, _, errOut = b.cli(filepath.Join(b.dir, "absent.yaml"), "health", "--url", "http://"+closed+"/healthz")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "connection refused")

	// Without --url: http.listen from the config, a wildcard host asked
	// on loopback. Only problems are logged.
	_, port, err := net.SplitHostPort(ok.Listener.Addr().String())
	require.NoError(t, err)
	cfg := filepath.Join(b.dir, "listen.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("http:\n  listen: 0.0.0.0:"+port+"\n  public: true\n"), 0o600))
	code, out, errOut = b.cli(cfg, "health")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"status":"x"`)
	require.Empty(t, errOut)
	require.Equal(t, int32(2), okHits.Load())

	// A config without a fixed port, a bad config, a bad flag: exit 2.
	require.NoError(t, os.WriteFile(cfg, []byte("http:\n  listen: 127.0.0.1:0\n"), 0o600))
	code, _, errOut = b.cli(cfg, "health")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--url")
	code, _, _ = b.cli(filepath.Join(b.dir, "absent.yaml"), "health")
	require.Equal(t, 2, code, "a config named with -c must exist")
	code, _, _ = b.cli(cfg, "health", "--timeout", "soon")
	require.Equal(t, 2, code)
	code, _, _ = b.cli(cfg, "health", "--url", "://nope")
	require.Equal(t, 2, code)
}

// parley health against a real parley run.
func TestHealthCommandAgainstRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.writeConfig(t, "")
	r := b.start(t, cfg)
	code, out, errOut := b.cli(cfg, "health", "--url", "http://"+r.addr+"/healthz")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"store":"ok"`)
}
