package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/console"
)

// consoleClient talks to the console of a running bot from one loopback
// address, without following redirects.
type consoleClient struct {
	base   string
	client *http.Client
}

func newConsoleClient(t *testing.T, addr, from string) *consoleClient {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &consoleClient{base: "http://" + addr, client: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request (a form when form is not nil) with the cookie and
// headers, and returns the response with its body read.
func (c *consoleClient) do(t *testing.T, method, path string, form url.Values, cookie *http.Cookie, header ...string) (*http.Response, string) {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := c.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(raw)
}

// login logs in with token and returns the response's session cookie.
func (c *consoleClient) login(t *testing.T, token string, header ...string) *http.Cookie {
	t.Helper()
	resp, body := c.do(t, http.MethodPost, "/console/login", url.Values{"token": {token}}, nil, header...)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	for _, ck := range resp.Cookies() {
		if ck.Name == console.CookieName {
			return ck
		}
	}
	t.Fatal("no session cookie after a good login")
	return nil
}

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// Logging out ends the session on the server: the cookie a browser (or
// whoever copied it) kept is refused from then on, by every replica,
// while another browser's session goes on (issue 30: a saved cookie
// worked for 7 days after logout).
func TestConsoleLogoutRevokesTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	c := newConsoleClient(t, r.addr, "127.0.0.1")
	token := b.env["PARLEY_API_TOKEN"]
	kept, other := c.login(t, token), c.login(t, token)

	resp, body := c.do(t, http.MethodGet, "/console/", nil, kept)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	m := consoleCSRF.FindStringSubmatch(body)
	require.NotNil(t, m, "the page has a logout form")
	resp, _ = c.do(t, http.MethodPost, "/console/logout", url.Values{"csrf": {m[1]}}, kept)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/login", resp.Header.Get("Location"))

	// The saved cookie, sent again: a page sends it to the login form,
	// a stream and a form are refused.
	resp, _ = c.do(t, http.MethodGet, "/console/", nil, kept)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the logged-out cookie no longer opens the console")
	require.Equal(t, "/console/login?next=%2Fconsole%2F", resp.Header.Get("Location"))
	resp, _ = c.do(t, http.MethodGet, "/console/events/", nil, kept)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = c.do(t, http.MethodPost, "/console/logout", url.Values{"csrf": {m[1]}}, kept)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, body = c.do(t, http.MethodGet, "/console/login", nil, kept)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the login form shows, rather than a redirect into the console")
	require.Contains(t, body, `name="token"`)

	// Another browser's session is its own.
	resp, _ = c.do(t, http.MethodGet, "/console/", nil, other)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, r.stderr.String(), token)
}

// The session cookie is Secure when the request came over TLS, and a
// proxy's X-Forwarded-Proto says so only from http.trusted_proxies: from
// any other peer it is a header anyone can write (issue 30).
func TestConsoleCookieIsSecureOnlyThroughTrustedProxies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := b.writeConfig(t, "")
	text := strings.Replace(readConfig(t, path), "  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:0\n  trusted_proxies: [\"127.0.0.2\"]\n", 1)
	r := b.start(t, writeText(t, path, text))
	token := b.env["PARLEY_API_TOKEN"]

	direct := newConsoleClient(t, r.addr, "127.0.0.1")
	require.False(t, direct.login(t, token, "X-Forwarded-Proto", "https").Secure, "a peer that is no trusted proxy")
	require.False(t, direct.login(t, token).Secure)
	require.Contains(t, r.stderr.String(), "X-Forwarded-Proto: https came from a peer that is not in http.trusted_proxies")
	require.Contains(t, r.stderr.String(), "peer=127.0.0.1")

	proxy := newConsoleClient(t, r.addr, "127.0.0.2")
	require.True(t, proxy.login(t, token, "X-Forwarded-Proto", "https", "X-Forwarded-For", "198.51.100.7").Secure)
	require.False(t, proxy.login(t, token, "X-Forwarded-Proto", "http").Secure)
	require.False(t, proxy.login(t, token).Secure)
}

// writeText writes text to path and returns path.
func writeText(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}
