package app

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `parley reload` asks the parley on http.listen, with http.api_token, to
// read its config again, and prints its answer; a refusal exits 1.
func TestReloadCommandAsksTheRunningParley(t *testing.T) {
	t.Parallel()
	b := setup(t)
	answers := []int{http.StatusOK, http.StatusConflict}
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "POST /api/v1/reload", r.Method+" "+r.URL.Path)
		auths = append(auths, r.Header.Get("Authorization"))
		code := answers[0]
		answers = answers[1:]
		w.WriteHeader(code)
		if code == http.StatusOK {
			_, _ = w.Write([]byte(`{"reloaded":"1 bots unchanged; added bob"}`))
		} else {
			_, _ = w.Write([]byte(`{"error":"the config was not reloaded, the running one is kept: store changed"}`))
		}
	}))
	t.Cleanup(srv.Close)
	cfg := b.writeConfig(t, "")
	// The config's http.listen is the test server's address.
	raw, err := os.ReadFile(cfg)
	require.NoError(t, err)
	body := strings.Replace(string(raw), "listen: 127.0.0.1:0", "listen: "+srv.Listener.Addr().String(), 1)
	require.NoError(t, os.WriteFile(cfg, []byte(body), 0o600))

	code, out, _ := b.cli(cfg, "reload")
	require.Equal(t, 0, code)
	require.Contains(t, out, "added bob")
	code, out, stderr := b.cli(cfg, "reload")
	require.Equal(t, 1, code)
	require.Contains(t, out, "store changed")
	require.Contains(t, stderr, "409")
	require.Equal(t, []string{"Bearer " + b.env["PARLEY_API_TOKEN"], "Bearer " + b.env["PARLEY_API_TOKEN"]}, auths)
}
