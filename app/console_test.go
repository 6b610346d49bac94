package app

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleIsServedOnlyWithAToken: `parley run` serves the console
// behind the login form when http.api_token is set, and not at all (404,
// with a log line) when it is empty.
func TestConsoleIsServedOnlyWithAToken(t *testing.T) {
	t.Parallel()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(t *testing.T, url string) *http.Response {
		t.Helper()
		resp, err := noRedirect.Get(url)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}

	t.Run("with a token", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.start(t, b.writeConfig(t, ""))
		resp := get(t, "http://"+r.addr+"/console/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/console/login?next=%2Fconsole%2F", resp.Header.Get("Location"))
		require.Equal(t, http.StatusOK, get(t, "http://"+r.addr+"/console/login").StatusCode)
	})
	t.Run("without a token", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		delete(b.env, "PARLEY_API_TOKEN")
		r := b.start(t, b.writeConfig(t, ""))
		for _, path := range []string{"/console/", "/console/login"} {
			require.Equal(t, http.StatusNotFound, get(t, "http://"+r.addr+path).StatusCode, path)
		}
		require.Contains(t, r.stderr.String(), "http.api_token is empty: the web console is disabled")
	})
}
