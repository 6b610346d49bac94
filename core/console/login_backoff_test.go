package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
