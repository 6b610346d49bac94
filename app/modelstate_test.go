package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// containsAll reports whether s holds every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// logLine returns the first line of logs holding every one of parts, or
// "".
func logLine(logs string, parts ...string) string {
	for _, l := range strings.Split(logs, "\n") {
		if containsAll(l, parts...) {
			return l
		}
	}
	return ""
}

// TestRunSaysWhichModel: before it serves, `parley run` names the model
// and where it is, never the key.
func TestRunSaysWhichModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	logs := r.stderr.String()
	line := logLine(logs, "msg=model ")
	require.NotEmpty(t, line, "no model line in:\n%s", logs)
	require.Contains(t, line, "base_url="+b.model.URL())
	require.Contains(t, line, "model=test-model")
	require.Contains(t, line, "light_model=test-model")
	require.Contains(t, line, "api_key_set=true")
	require.Less(t, strings.Index(logs, "msg=model "), strings.Index(logs, "http server listening"), "said before serving")
	require.NotContains(t, logs, "DONOTLEAK")
	require.NotContains(t, logs, "OPENAI_API_KEY", "no warning: a key is set")
}

// TestRunWithoutConfigWarnsAboutTheMissingKey: a newcomer's first `parley
// run`, no config and no OPENAI_API_KEY: it starts, names OpenAI and the
// default model, and says what to set.
func TestRunWithoutConfigWarnsAboutTheMissingKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Only what a test must change from the built-in defaults: a free
	// port and a database in the test's directory. No llm section.
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("store: {dsn: \""+filepath.Join(dir, "parley.db")+"\"}\nhttp: {listen: 127.0.0.1:0}\n"), 0o600))
	var logs coretest.Logs
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, []string{"run", "-c", cfg}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &logs},
			func(string) (string, bool) { return "", false })
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "http server listening") }, waitFor, 10*time.Millisecond,
		"parley run did not start:\n%s", &logs)
	cancel()
	require.Equal(t, 0, <-code, "%s", &logs)

	line := logLine(logs.String(), "msg=model ")
	require.Contains(t, line, "base_url=https://api.openai.com/v1")
	require.Contains(t, line, "model=gpt-4o-mini")
	require.Contains(t, line, "api_key_set=false")
	warn := logLine(logs.String(), "level=WARN", "OPENAI_API_KEY")
	require.NotEmpty(t, warn, "no warning about the key in:\n%s", &logs)
	require.Contains(t, warn, "llm.base_url")
	require.Contains(t, warn, "Pointing it at a model")
}

// health is /healthz's answer.
type health struct {
	Status     string            `json:"status"`
	Components map[string]string `json:"components"`
}

func getHealth(t *testing.T, addr string) (int, health) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var h health
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return resp.StatusCode, h
}

// webStatus is the web chat's GET /web/status.
func webStatus(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/web/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var s struct {
		Model struct{ State string } `json:"model"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	return s.Model.State
}

// TestHealthzFollowsTheModelThroughAnAuthFailure: the llm component is
// unknown before the first call, auth after a 401 (the log names
// llm.api_key), ok again once the key is accepted; the status code stays
// 200 throughout, and the web chat's status follows.
func TestHealthzFollowsTheModelThroughAnAuthFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.SetAPIKey("sk-the-right-key-5678") // the bot's key is not it
	r := b.start(t, b.writeConfig(t, ""))

	code, h := getHealth(t, r.addr)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "unknown", h.Components["llm"], "no call yet")
	require.Equal(t, "unknown", webStatus(t, r.addr))

	const client = "client-health-1"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "hello?")
	require.Equal(t, config.DefaultFailureMessage, events.nextMessage(t))
	code, h = getHealth(t, r.addr)
	require.Equal(t, http.StatusOK, code, "the model's state never fails the check: %+v", h)
	require.Equal(t, "ok", h.Status)
	require.Equal(t, "auth", h.Components["llm"])
	require.Equal(t, "auth", webStatus(t, r.addr), "the page shows its banner")
	line := logLine(r.stderr.String(), "level=ERROR", "401 Unauthorized")
	require.Contains(t, line, "llm.api_key", "the log says which key to check")
	require.NotContains(t, r.stderr.String(), "DONOTLEAK")

	b.model.SetAPIKey("sk-live-DONOTLEAK-1234567890")
	b.model.Enqueue(llmtest.Text("Hello again!"))
	postMessage(t, r.addr, client, "now?")
	require.Equal(t, "Hello again!", events.nextMessage(t))
	_, h = getHealth(t, r.addr)
	require.Equal(t, "ok", h.Components["llm"])
	require.Equal(t, "ok", webStatus(t, r.addr))
}

// The owner trying the web chat on the bot's own machine is told what is
// wrong with the model and how to fix it; a page from elsewhere, or
// through a proxy, gets only the state.
func TestWebStatusTellsTheOwnerOnThisMachine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.SetAPIKey("sk-the-right-key-5678") // the bot's key is not it
	r := b.start(t, b.writeConfig(t, ""))
	const client = "client-detail-1"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "hello?")
	require.Equal(t, config.DefaultFailureMessage, events.nextMessage(t))

	status := func(header ...string) (state, detail string) {
		req, err := http.NewRequest(http.MethodGet, "http://"+r.addr+"/web/status", nil)
		require.NoError(t, err)
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var s struct {
			Model struct{ State, Detail string } `json:"model"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
		return s.Model.State, s.Model.Detail
	}
	state, detail := status()
	require.Equal(t, "auth", state)
	require.Contains(t, detail, "401")
	require.Contains(t, detail, "the key in llm.api_key was refused: check it")
	require.NotContains(t, detail, "DONOTLEAK")
	_, detail = status("X-Forwarded-For", "203.0.113.7")
	require.Empty(t, detail, "a proxied page is not the owner's")
}
