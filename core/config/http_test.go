package config_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

func TestHTTPDefaults(t *testing.T) {
	t.Parallel()
	c := setup(t).mustParse(t, "")
	require.Equal(t, config.HTTP{Listen: "127.0.0.1:8080", TrustedProxies: []string{}, MaxConnections: 2048,
		MaxConnectionsPerIP: 64, ReadTimeout: 30 * time.Second, MinBodyRate: 1024}, c.HTTP)
	require.False(t, c.HTTP.BeyondLoopback())
}

func TestHTTPKeys(t *testing.T) {
	t.Parallel()
	c := setup(t).mustParse(t, `http:
  listen: 127.0.0.1:9000
  api_token: 0123456789abcdef
  public: true
  trusted_proxies: ["10.0.0.0/8", "127.0.0.1", "::ffff:192.168.1.7", "fd00::1/64"]
  max_connections: 100
  max_connections_per_ip: 0
  read_timeout: 5s
  min_body_rate: 4KiB
`)
	require.True(t, c.HTTP.Public)
	require.Equal(t, 100, c.HTTP.MaxConnections)
	require.Zero(t, c.HTTP.MaxConnectionsPerIP)
	require.Equal(t, config.ByteSize(4096), c.HTTP.MinBodyRate)
	require.Equal(t, 5*time.Second, c.HTTP.ReadTimeout)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("fd00::/64")}, c.HTTP.TrustedPrefixes())
}

func TestHTTPProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.parse(`http:
  api_token: tok123
  trusted_proxies: ["10.0.0.0/8", "proxy.internal"]
  max_connections: 3
  read_timeout: 10ms
  max_connections_per_ip: -1
  min_body_rate: 10B
`)
	errs := configErrors(t, err)
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
		require.NotContains(t, e.Error(), "tok123")
	}
	require.Equal(t, []string{
		"config.yaml:2: http.api_token: has 6 characters: it must have at least 16 (make one with `openssl rand -hex 32`); " +
			"leave it empty (or ${PARLEY_API_TOKEN} unset) to turn the API and the console off",
		`config.yaml:3: http.trusted_proxies[1]: must be an address or a CIDR (e.g. "10.0.0.0/8" or "127.0.0.1"), got "proxy.internal"`,
		"config.yaml:4: http.max_connections: must be between 16 and 1048576, got 3",
		"config.yaml:5: http.read_timeout: must be at least 1s, got 10ms",
		"config.yaml:6: http.max_connections_per_ip: must be between 0 and 1048576, got -1",
		`config.yaml:7: http.min_body_rate: must be at least 64B (a second), got "10B"`,
	}, got)
}

// A short token from the environment is refused too, without its value;
// an unset variable leaves the API and the console off, as before.
func TestAPITokenFromTheEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["PARLEY_API_TOKEN"] = "short-secret"
	_, err := b.parse("http:\n  api_token: ${PARLEY_API_TOKEN}\n")
	errs := configErrors(t, err)
	require.Len(t, errs, 1)
	require.Equal(t, "http.api_token", errs[0].Key)
	require.Equal(t, 2, errs[0].Line)
	require.Contains(t, errs[0].Msg, "has 12 characters: it must have at least 16")
	require.NotContains(t, errs[0].Error(), "short-secret")

	// The default source, without the key in the file.
	_, err = b.parse("")
	require.Equal(t, "http.api_token", configErrors(t, err)[0].Key)

	c := setup(t).mustParse(t, "http:\n  api_token: ${PARLEY_API_TOKEN}\n")
	require.Empty(t, c.HTTP.APIToken.Reveal(), "unset: the API is off, not an error")
	// Characters, not bytes: 16 of them in 32 bytes is long enough, 15 is not.
	b.env["PARLEY_API_TOKEN"] = "éèêëàâäôöûüùçîïÿ"
	b.mustParse(t, "")
	b.env["PARLEY_API_TOKEN"] = "éèêëàâäôöûüùçîï"
	_, err = b.parse("")
	require.Contains(t, configErrors(t, err)[0].Msg, "has 15 characters")
}

func TestBeyondLoopback(t *testing.T) {
	t.Parallel()
	for listen, want := range map[string]bool{
		"127.0.0.1:8080":        false,
		"127.0.0.2:8080":        false,
		"[::1]:8080":            false,
		"localhost:8080":        false,
		"[::ffff:127.0.0.1]:80": false,
		":8080":                 true,
		"0.0.0.0:8080":          true,
		"[::]:8080":             true,
		"192.168.1.10:8080":     true,
		"bot.example.com:8080":  true,
	} {
		require.Equal(t, want, config.HTTP{Listen: listen}.BeyondLoopback(), listen)
	}
}

// The web chat on an address other machines reach is refused unless
// http.public says it is meant; the console or API alone are not (the
// start warns about them instead).
func TestPublicWebChatNeedsHTTPPublic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.parse("http:\n  listen: 0.0.0.0:8080\nadapters:\n  web: {enabled: true}\n")
	errs := configErrors(t, err)
	require.Len(t, errs, 1)
	require.Equal(t, 2, errs[0].Line)
	require.Equal(t, "http.listen", errs[0].Key)
	require.Contains(t, errs[0].Error(), `config.yaml:2: http.listen: is reachable from other machines and the web chat (adapters.web) is on: `+
		`anyone who reaches it can talk to the model at your cost`)
	require.Contains(t, errs[0].Error(), `set http.public: true if the bot is meant to be public, got "0.0.0.0:8080"`)

	for _, ok := range []string{
		"http:\n  listen: 0.0.0.0:8080\n  public: true\nadapters:\n  web: {enabled: true}\n",
		"http:\n  listen: 127.0.0.1:8080\nadapters:\n  web: {enabled: true}\n",
		"http:\n  listen: 0.0.0.0:8080\nadapters:\n  web: {enabled: false}\n",
		"http:\n  listen: 0.0.0.0:8080\n  api_token: 0123456789abcdef\nadapters:\n  web: {enabled: false}\n",
	} {
		b.mustParse(t, ok)
	}
	// With no adapters.web section the web chat is on, as by default.
	_, err = b.parse("http:\n  listen: 0.0.0.0:8080\n")
	errs = configErrors(t, err)
	require.Len(t, errs, 1)
	require.Equal(t, "http.listen", errs[0].Key)
}

// A token long enough by count but weak is refused at load, with file,
// line and key and never the token: one character repeated, a handful
// of characters over and over, mostly white space, white space at an
// end (the API trims what a client sends, so it could never match), a
// control character (no header can carry it). Random tokens pass.
func TestWeakAPITokensAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for token, want := range map[string]string{
		"aaaaaaaaaaaaaaaa":                 "uses only 1 different characters: it must use at least 5",
		"abababababababababababababababab": "uses only 2 different characters: it must use at least 5",
		"abcdabcdabcdabcd":                 "uses only 4 different characters: it must use at least 5",
		"a               b":                "has 2 characters besides white space: it must have at least 16",
		"ab c  d   e    f       g":         "has 7 characters besides white space: it must have at least 16",
		" 0123456789abcdef":                "begins or ends with white space",
		"0123456789abcdef\t":               "begins or ends with white space",
		"0123456789\x01abcdef":             "holds a control character",
	} {
		b.env["PARLEY_API_TOKEN"] = token
		_, err := b.parse("log:\n  level: info\nhttp:\n  api_token: ${PARLEY_API_TOKEN}\n")
		errs := configErrors(t, err)
		require.Len(t, errs, 1, "%q", token)
		require.Equal(t, "http.api_token", errs[0].Key, "%q", token)
		require.Equal(t, 4, errs[0].Line, "%q", token)
		require.Contains(t, errs[0].Error(), "config.yaml:4: http.api_token: "+want, "%q", token)
		require.Contains(t, errs[0].Error(), "openssl rand -hex 32", "%q: says how to make a good one", token)
		require.NotContains(t, errs[0].Error(), token, "never the token")
	}
	for _, ok := range []string{
		"0123456789abcdef",
		"3f9a1c0b7e2d4a6f8b1c3e5d7f9a0b2c4d6e8f0a1b3c5d7e9f0a2b4c6d8e0f1a", // openssl rand -hex 32
		"correct horse battery staple",
		"éééééééééééééééA-b+c_d",
	} {
		b.env["PARLEY_API_TOKEN"] = ok
		b.mustParse(t, "http:\n  api_token: ${PARLEY_API_TOKEN}\n")
	}
}
