package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/store"
)

// runUntilExit runs `parley run` with the config text and returns its
// exit code and standard error once it has exited.
func (b *testBundle) runUntilExit(t *testing.T, text string) (int, string) {
	t.Helper()
	path := filepath.Join(b.dir, "exit.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	var stderr coretest.Logs
	code := Run(context.Background(), []string{"run", "-c", path}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr}, b.lookup)
	return code, stderr.String()
}

// A database that cannot be opened or written stops `parley run` before
// any adapter starts, with an error that names the file and the likely
// cause.
func TestStartRefusesAStoreThatCannotWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	missing := filepath.Join(b.dir, "no-such-dir", "parley.db")
	code, stderr := b.runUntilExit(t, readConfig(t, b.writeConfigFor(t, "sqlite", missing, "adapters:\n  web: {}\n")))
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "sqlite "+missing+": the directory "+filepath.Dir(missing)+" does not exist: create it, or point store.dsn elsewhere")
	require.NotContains(t, stderr, "adapter started")
	require.NotContains(t, stderr, "http server listening")

	// A database that opens and reads, but refuses writes (mode=ro opens
	// it as it opens a file the process may not write; root may write
	// any). It is migrated as this build migrates, the plugins' tables
	// too, so that starting has nothing to migrate.
	st, err := store.Open(context.Background(), store.Options{Driver: "sqlite", DSN: b.dbPath})
	require.NoError(t, err)
	require.NoError(t, st.Migrate(context.Background(), pluginMigrators()...))
	require.NoError(t, st.Close())
	code, stderr = b.runUntilExit(t, readConfig(t, b.writeConfigFor(t, "sqlite", "file:"+b.dbPath+"?mode=ro", "adapters:\n  web: {}\n")))
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "the store cannot write: sqlite "+b.dbPath+": store.dsn opens the database read-only (mode=ro) "+
		"(attempt to write a readonly database)")
	require.NotContains(t, stderr, "adapter started")
}

func readConfig(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// The web chat on an address other machines reach needs http.public; a
// short http.api_token is refused; both at load, with file, line and key.
func TestPublicWebChatAndShortTokensAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := strings.Replace(readConfig(t, b.writeConfig(t, "adapters:\n  web: {}\n")), "listen: 127.0.0.1:0", "listen: 0.0.0.0:0", 1)
	code, stderr := b.runUntilExit(t, base)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "exit.yaml:13: http.listen: is reachable from other machines and the web chat (adapters.web) is on")
	require.NotContains(t, stderr, "http server listening")

	b.env["PARLEY_API_TOKEN"] = "tiny-token"
	code, stderr = b.runUntilExit(t, readConfig(t, b.writeConfig(t, "adapters:\n  web: {}\n")))
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "exit.yaml:14: http.api_token: has 10 characters: it must have at least 16")
	require.NotContains(t, stderr, "tiny-token")
}

// A token of 16 characters that is one character repeated, or mostly
// white space, stops `parley run` as a short one does (issue 30).
func TestWeakTokensAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for token, want := range map[string]string{
		"zzzzzzzzzzzzzzzz":  "exit.yaml:14: http.api_token: uses only 1 different characters: it must use at least 5",
		"x              yz": "exit.yaml:14: http.api_token: has 3 characters besides white space: it must have at least 16",
	} {
		b.env["PARLEY_API_TOKEN"] = token
		code, stderr := b.runUntilExit(t, readConfig(t, b.writeConfig(t, "adapters:\n  web: {}\n")))
		require.Equal(t, 2, code, stderr)
		require.Contains(t, stderr, want)
		require.NotContains(t, stderr, token)
		require.NotContains(t, stderr, "http server listening")
	}
}

// What other machines can reach is said at start, in words.
func TestExposureIsSaidAtStart(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		http config.HTTP
		web  bool
		want string
	}{
		"loopback":         {config.HTTP{Listen: "127.0.0.1:8080", APIToken: "0123456789abcdef"}, true, ""},
		"console and api":  {config.HTTP{Listen: "0.0.0.0:8080", APIToken: "0123456789abcdef"}, false, "level=WARN msg=\"http.listen 0.0.0.0:8080 can be reached from other machines, and the console (/console/) and the API (/api/) are served there, guarded only by http.api_token, which plain HTTP sends in clear text. Put a TLS reverse proxy in front, or listen on 127.0.0.1; set http.public: true if this is meant\""},
		"nothing to guard": {config.HTTP{Listen: ":8080"}, false, ""},
		"public":           {config.HTTP{Listen: ":8080", APIToken: "0123456789abcdef", Public: true}, false, ""},
		"public web chat":  {config.HTTP{Listen: ":8080", Public: true}, true, "level=INFO msg=\"http.listen is public (http.public: true): anyone who reaches it can use the web chat"},
	} {
		cfg := config.Default()
		cfg.HTTP = tc.http
		// No section is the web chat on, as by default.
		cfg.Adapters["web"] = config.Section{Enabled: tc.web}
		var logs coretest.Logs
		warnExposure(cfg, logs.Logger())
		if tc.want == "" {
			require.Empty(t, logs.String(), name)
		} else {
			require.Contains(t, logs.String(), tc.want, name)
		}
		require.NotContains(t, logs.String(), "0123456789abcdef", name)
	}
}

// A post that declares 1,000 bytes and sends one is cut at
// http.read_timeout on every route that takes a body: the web chat, the
// API, the console's login and the Slack webhook (the probe in issue 24
// found each open after 35 s).
func TestSlowBodiesAreCutOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := slacktest.NewServer(t)
	path := b.writeConfig(t, strings.Replace(slackConfig(fake, "events"), "web: {enabled: false}", "web: {}", 1))
	text := strings.Replace(readConfig(t, path), "  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:0\n  read_timeout: 1s\n", 1)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	r := b.start(t, path)

	var wg sync.WaitGroup
	for route, ctype := range map[string]string{"/web/messages": "application/json", "/api/v1/messages": "application/json",
		"/console/login": "application/x-www-form-urlencoded", "/webhooks/slack/events": "application/json"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", r.addr)
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			start := time.Now()
			_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: %s\r\nContent-Length: 1000\r\n\r\n{", route, r.addr, b.env["PARLEY_API_TOKEN"], ctype)
			assert.NoError(t, err)
			_ = c.SetReadDeadline(start.Add(10 * time.Second))
			got, err := io.ReadAll(c)
			took := time.Since(start)
			assert.NoError(t, err, "%s: the connection was closed, not left open", route)
			assert.GreaterOrEqual(t, took, time.Second, route)
			assert.Less(t, took, 4*time.Second, route)
			assert.True(t, strings.HasPrefix(string(got), "HTTP/1.1 4"), "%s answered %q", route, got)
		}()
	}
	wg.Wait()
	require.NotContains(t, r.stderr.String(), "console login refused", "a body cut short is no wrong token")
}
