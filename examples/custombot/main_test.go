package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/examples/dice"
	"github.com/parleybot/parley/examples/ircadapter/irctest"
)

const (
	waitFor  = 30 * time.Second
	password = "irc-pass-DONOTLEAK-7781"
)

// TestCustomBinary builds this directory's main with `go build`, runs it
// as `custombot run` against a fake IRC server and a fake model, and has
// a user talk to it in a private message: the bot answers, rolls dice
// with the dice plugin's tool when asked, and quits cleanly on SIGTERM.
func TestCustomBinary(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the test builds the binary with the go command")
	dir := t.TempDir()
	bin := filepath.Join(dir, "custombot")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	srv := irctest.NewServer(t, irctest.Options{Password: password})
	model := llmtest.NewServer(t, llmtest.WithResponder(answer))
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`store: {driver: sqlite, dsn: %q}
llm: {base_url: %q, api_key: test, model: test-model, timeout: 10s}
runs: {debounce: 0s}
http: {listen: "127.0.0.1:0", api_token: ""}
log: {level: debug}
adapters:
  web: {enabled: false}
  irc:
    enabled: true
    server: %q
    nick: dicebot
    password: ${IRC_PASSWORD}
    send_rate: {per_second: 20, burst: 10}
plugins:
  dice: {max_dice: 10}
`, filepath.Join(dir, "parley.db"), model.URL(), srv.Addr())), 0o600))

	var stderr coretest.Logs
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Env = append(os.Environ(), "IRC_PASSWORD="+password)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	defer func() {
		if t.Failed() {
			t.Logf("custombot's output:\n%s", stderr.String())
		}
	}()

	require.Equal(t, "dicebot", srv.WaitRegistered(t, 1, waitFor))
	require.Contains(t, srv.Received(), "PASS "+password, "the password from the environment reached the server")

	srv.PrivMsg(t, "Ada", "hi there")
	require.Equal(t, "Hello Ada, I'm on IRC now.", srv.WaitMessages(t, "Ada", 1, waitFor)[0].Text)

	srv.PrivMsg(t, "Ada", "roll 2d6 for me")
	got := srv.WaitMessages(t, "Ada", 2, waitFor)[1].Text

	var roll dice.Roll
	var offered, layer bool
	for _, r := range model.Requests() {
		offered = offered || strings.Contains(strings.Join(r.ToolNames(), " "), "roll_dice")
		layer = layer || strings.Contains(r.Messages()[0].Content, "## Dice")
		if m, ok := r.ToolMessage("call_roll"); ok {
			require.NoError(t, json.Unmarshal([]byte(m.Content), &roll), m.Content)
		}
	}
	require.True(t, offered, "the model was offered roll_dice")
	require.True(t, layer, "the dice layer was in the system prompt")
	require.Len(t, roll.Rolls, 2, "the tool rolled and its result reached the model")
	require.Equal(t, said(roll), got, "the user sees the roll the tool made")
	for _, r := range roll.Rolls {
		require.True(t, r >= 1 && r <= 6)
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status 0 on SIGTERM")
	case <-time.After(waitFor):
		t.Fatal("custombot did not stop on SIGTERM")
	}
	srv.WaitReceived(t, "QUIT", waitFor)
	require.Empty(t, srv.Violations())
	require.NotContains(t, stderr.String(), password, "the IRC password is never logged")
}

// answer is the fake model: it rolls when asked to, reports the roll it
// got back, and greets otherwise.
func answer(r llmtest.Request) llmtest.Response {
	if m, ok := r.ToolMessage("call_roll"); ok {
		var roll dice.Roll
		if err := json.Unmarshal([]byte(m.Content), &roll); err != nil || len(roll.Rolls) != 2 {
			return llmtest.Text("the tool said: " + m.Content)
		}
		return llmtest.Text(said(roll))
	}
	if strings.Contains(r.LastUserMessage(), "roll") {
		return llmtest.ToolCalls(llmtest.Call("call_roll", "roll_dice", `{"notation":"2d6"}`))
	}
	return llmtest.Text("Hello Ada, I'm on IRC now.")
}

// said is how the model reports a roll.
func said(r dice.Roll) string {
	return fmt.Sprintf("You rolled %d and %d: %d in all.", r.Rolls[0], r.Rolls[1], r.Total)
}
