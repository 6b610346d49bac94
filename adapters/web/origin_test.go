package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// The probe from issue 24: a page on another site posts text/plain (no
// CORS preflight) to the local bot. It is refused and nothing reaches the
// core; so is every other request a browser makes for another site's page,
// and anything but JSON. The chat page's own requests pass: no Origin
// (same-origin GET), its own origin, the same host through a
// TLS-terminating proxy, an origin the owner allowed.
func TestOnlyJSONFromTheChatsOwnOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{allowedOrigins: []string{"https://chat.example.com"}})
	host := mustHost(t, b.server.URL)
	body := `{"client_id": "client-0001", "text": "call the model for me"}`
	const cross = "requests from other sites are refused: use the chat page itself"
	const notJSON = "Content-Type must be application/json"
	cases := []struct {
		name   string
		header map[string]string
		status int
		err    string
	}{
		{"text/plain from evil.example", map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, 403, cross},
		{"JSON from evil.example", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403, cross},
		{"a form from evil.example", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}, 403, cross},
		{"cross-site without Origin", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, cross},
		{"a sandboxed page", map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403, cross},
		{"another port of this host", map[string]string{"Content-Type": "application/json", "Origin": "http://" + mustHostname(t, b.server.URL) + ":1"}, 403, cross},
		{"a site that ends like this host", map[string]string{"Content-Type": "application/json", "Origin": "http://evil" + host}, 403, cross},
		{"text/plain, same origin", map[string]string{"Content-Type": "text/plain"}, 415, notJSON},
		{"no Content-Type", map[string]string{}, 415, notJSON},
		{"multipart", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, notJSON},
		{"JSON-ish", map[string]string{"Content-Type": "application/json-patch+json"}, 415, notJSON},
	}
	for _, tc := range cases {
		a := b.do(t, request{method: http.MethodPost, path: "/web/messages", header: tc.header, body: body})
		require.Equal(t, tc.status, a.Status, tc.name)
		require.Equal(t, map[string]any{"error": tc.err}, a.Body, tc.name)
	}
	require.Empty(t, b.core.messages(), "nothing from another site or in another type reached the core")

	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"the page's own fetch", map[string]string{"Content-Type": "application/json", "Origin": b.server.URL, "Sec-Fetch-Site": "same-origin"}},
		{"with a charset", map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{"a script (no browser headers)", map[string]string{"Content-Type": "application/json"}},
		{"through a TLS proxy that passes Host", map[string]string{"Content-Type": "application/json", "Origin": "https://" + host}},
		{"an allowed origin", map[string]string{"Content-Type": "application/json", "Origin": "https://chat.example.com"}},
		{"an allowed origin, spelt otherwise", map[string]string{"Content-Type": "application/json", "Origin": "HTTPS://Chat.Example.com:443"}},
		{"typed in the address bar", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "none"}},
	} {
		a := b.do(t, request{method: http.MethodPost, path: "/web/messages", header: tc.header, body: body})
		require.Equal(t, http.StatusAccepted, a.Status, "%s: %v", tc.name, a.Body)
	}
	require.Len(t, b.core.messages(), 7)
}

// Another site's page cannot open a stream or read a history either; the
// chat page itself can still be linked to from anywhere.
func TestOtherRoutesRefuseOtherSites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	evil := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	for _, path := range []string{"/web/events?client_id=client-0001", "/web/history?client_id=client-0001"} {
		a := b.do(t, request{method: http.MethodGet, path: path, header: evil})
		require.Equal(t, http.StatusForbidden, a.Status, path)
		require.Equal(t, map[string]any{"error": "requests from other sites are refused: use the chat page itself"}, a.Body, path)
	}
	require.Equal(t, 0, b.adapter.OpenStreams())
	a := b.do(t, request{method: http.MethodGet, path: "/", header: map[string]string{"Sec-Fetch-Site": "cross-site"}})
	require.Equal(t, http.StatusOK, a.Status, "a link from another site opens the chat page")
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Host
}

func mustHostname(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Hostname()
}
