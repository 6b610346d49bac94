package dice_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/app"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/examples/dice"
	_ "github.com/parleybot/parley/standard" // the web chat and the built-in plugins
)

const waitFor = 15 * time.Second

// writeConfig writes a config for Parley with the web chat on a free
// port, a fresh SQLite file and the fake model, plus plugins.
func writeConfig(t *testing.T, model *llmtest.Server, plugins string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`store: {driver: sqlite, dsn: %q}
llm: {base_url: %q, api_key: test, model: test-model, timeout: 5s}
runs: {debounce: 0s}
http: {listen: "127.0.0.1:0", api_token: ""}
log: {level: debug}
plugins:
%s`, filepath.Join(dir, "parley.db"), model.URL(), plugins)
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

func noEnv(string) (string, bool) { return "", false }

// TestInParley runs `parley run` in-process with the dice plugin
// configured, and a user writing in the web chat: the model is offered
// roll_dice with the dice layer in its system prompt, calls it, gets the
// roll, and the user sees the answer built on it.
func TestInParley(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(t, llmtest.WithResponder(func(r llmtest.Request) llmtest.Response {
		if m, ok := r.ToolMessage("call_1"); ok {
			var roll dice.Roll
			if err := json.Unmarshal([]byte(m.Content), &roll); err != nil {
				return llmtest.Text("the tool said: " + m.Content)
			}
			return llmtest.Text(fmt.Sprintf("You rolled %v, %d in all.", roll.Rolls, roll.Total))
		}
		return llmtest.ToolCalls(llmtest.Call("call_1", "roll_dice", `{"notation":"3d6+2"}`))
	}))
	cfg := writeConfig(t, model, "  dice: {max_dice: 5}\n")

	ctx, cancel := context.WithCancel(context.Background())
	var stderr coretest.Logs
	code := make(chan int, 1)
	go func() {
		code <- app.Run(ctx, []string{"run", "-c", cfg}, app.IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr}, noEnv)
	}()
	defer func() {
		cancel()
		select {
		case c := <-code:
			require.Equal(t, 0, c, "stderr:\n%s", stderr.String())
		case <-time.After(waitFor):
			t.Fatalf("parley did not stop; stderr:\n%s", stderr.String())
		}
	}()
	addr := listening(t, &stderr)

	events := openEvents(t, addr, "client-0001")
	post(t, addr, "client-0001", "roll 3d6+2 for my attack")
	shown := events.next(t)

	reqs := model.WaitRequests(t, 2, waitFor)
	require.Contains(t, reqs[0].ToolNames(), "roll_dice", "the model is offered the tool")
	require.Contains(t, reqs[0].Messages()[0].Content, "## Dice\nYou can roll dice", "the dice layer is in the system prompt")
	m, ok := reqs[1].ToolMessage("call_1")
	require.True(t, ok, "the tool's result went back to the model")
	var roll dice.Roll
	require.NoError(t, json.Unmarshal([]byte(m.Content), &roll), m.Content)
	require.Len(t, roll.Rolls, 3)
	sum := roll.Modifier
	for _, r := range roll.Rolls {
		require.True(t, r >= 1 && r <= 6, "a d6 rolled %d", r)
		sum += r
	}
	require.Equal(t, 2, roll.Modifier)
	require.Equal(t, sum, roll.Total)
	require.Equal(t, fmt.Sprintf("You rolled %v, %d in all.", roll.Rolls, roll.Total), shown)
}

// TestConfigErrors: plugins.dice is decoded strictly and validated; a bad
// value or an unknown key stops Parley with status 2 and a message naming it.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(t)
	for section, want := range map[string]string{
		"  dice: {max_dice: 0}\n":        "max_dice must be 1 to 1000, got 0",
		"  dice: {max_sides: 1000001}\n": "max_sides must be 2 to 1000000",
		"  dice: {max_sides: many}\n":    "plugins.dice.max_sides",
		"  dice: {max_die: 3}\n":         "plugins.dice.max_die",
		"  dice: {rand: something}\n":    "plugins.dice.rand",
	} {
		var stderr coretest.Logs
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		code := app.Run(ctx, []string{"run", "-c", writeConfig(t, model, section)},
			app.IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr}, noEnv)
		cancel()
		require.Equal(t, 2, code, "%s: %s", section, stderr.String())
		require.Contains(t, stderr.String(), want, section)
	}
}

// listening waits for the HTTP server's address in the log.
func listening(t *testing.T, stderr *coretest.Logs) string {
	t.Helper()
	re := regexp.MustCompile(`http server listening.* addr=(\S+)`)
	var addr string
	require.Eventually(t, func() bool {
		m := re.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, waitFor, 10*time.Millisecond, "parley did not start; stderr:\n%s", stderr)
	return addr
}

// events reads the web chat's event stream of one client.
type events struct{ messages chan string }

func openEvents(t *testing.T, addr, client string) *events {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/web/events?client_id=" + client)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { resp.Body.Close() })
	e := &events{messages: make(chan string, 16)}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ": connected"):
				close(ready)
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && name == "message":
				var m struct{ Text string }
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m)
				e.messages <- m.Text
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(waitFor):
		t.Fatal("the event stream did not open")
	}
	return e
}

func (e *events) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-e.messages:
		return m
	case <-time.After(waitFor):
		t.Fatal("no message reached the chat page")
		return ""
	}
}

func post(t *testing.T, addr, client, text string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"client_id": client, "name": "Ada", "text": text})
	resp, err := http.Post("http://"+addr+"/web/messages", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}
