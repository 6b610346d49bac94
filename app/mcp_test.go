//go:build linux

package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/mcp/mcptest"
)

// toolResult is the content of the tool message answering callID in any
// request the model got.
func toolResult(t *testing.T, model *llmtest.Server, callID string) string {
	t.Helper()
	for _, r := range model.Requests() {
		if m, ok := r.ToolMessage(callID); ok {
			return m.Content
		}
	}
	t.Fatalf("no request holds the result of %s", callID)
	return ""
}

// pidIn reads a pid a test server wrote to path.
func pidIn(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	}, waitFor, 10*time.Millisecond, "no pid in %s", path)
	return pid
}

// gone reports whether no process has pid (a zombie left for its reaper
// counts as gone: it runs no more).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(data))
	return len(fields) > 2 && fields[2] == "Z"
}

// TestMCPToolsThroughParleyRun: `parley run` with four MCP servers — the
// test server over stdio (allow-listed, with a secret in its env), the
// official reference server from npm, a streamable HTTP server, and one
// that writes garbage — offers the tools of the three that are up as
// SERVER__TOOL, runs calls the model makes, sends back schema violations
// and timeouts as tool errors, survives a crash of a server, shows each on
// /healthz and in /metrics, and leaves no process behind when it stops.
func TestMCPToolsThroughParleyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bin := mcptest.TestServerBinary(t)
	everything, everythingArgs := mcptest.EverythingServer(t)
	httpURL := mcptest.NewHTTPServer(t, mcptest.Tool{
		Name:        "lookup",
		Description: "Looks a word up.",
		Handler: func(_ context.Context, args map[string]any) (*sdkmcp.CallToolResult, error) {
			return mcptest.Text(fmt.Sprintf("%v: a small word", args["word"])), nil
		},
	})
	pidFile, childFile := filepath.Join(b.dir, "tools.pid"), filepath.Join(b.dir, "child.pid")
	quote := func(ss ...string) string {
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	cfg := b.writeConfig(t, fmt.Sprintf(`runs: {debounce: 0s}
mcp:
  servers:
    tools:
      command: %q
      args: %s
      env: {MCP_SECRET: mcp-secret-DONOTLEAK-42}
      tools: [echo, add, sleep, crash]
      timeout: 1s
    everything:
      command: %q
      args: %s
      tools: [echo]
    dictionary:
      url: %s
      headers: {Authorization: "Bearer header-DONOTLEAK-7"}
    broken:
      command: %q
      args: ["-garbage"]
`, bin, quote("-pidfile", pidFile, "-spawn", "-childpid", childFile, "-stderr-env", "MCP_SECRET"),
		everything, quote(everythingArgs...), httpURL, bin))
	r := b.start(t, cfg)

	// Every server is shown; the broken one is down, and the bot serves.
	require.Eventually(t, func() bool {
		code, h := getHealth(t, r.addr)
		return code == 200 && h.Components["mcp:tools"] == "ok" && h.Components["mcp:everything"] == "ok" &&
			h.Components["mcp:dictionary"] == "ok" && strings.HasPrefix(h.Components["mcp:broken"], "down: ")
	}, 60*time.Second, 20*time.Millisecond, "mcp servers never settled; stderr:\n%s", r.stderr)

	events := openEvents(t, r.addr, "client-mcp")
	ask := func(text string, answers ...llmtest.Response) string {
		t.Helper()
		b.model.Enqueue(answers...)
		postMessage(t, r.addr, "client-mcp", text)
		return events.nextMessage(t)
	}

	// A round trip, and what the model was offered.
	require.Equal(t, "It said hello.", ask("say hello through the tool",
		llmtest.ToolCalls(llmtest.Call("c1", "tools__echo", `{"text":"hello from mcp"}`)), llmtest.Text("It said hello.")))
	require.Equal(t, "hello from mcp", toolResult(t, b.model, "c1"))
	offered := b.model.Requests()[0].ToolNames()
	for _, name := range []string{"tools__echo", "tools__add", "tools__sleep", "tools__crash", "everything__echo", "dictionary__lookup"} {
		require.Contains(t, offered, name)
	}
	for _, name := range []string{"tools__image", "tools__getenv", "everything__get-sum"} {
		require.NotContains(t, offered, name, "not on the allow-list")
	}
	for _, name := range offered {
		require.False(t, strings.HasPrefix(name, "broken__"), "a server that is down offers nothing")
	}

	// The reference server and the HTTP one answer too.
	ask("echo it and look it up",
		llmtest.ToolCalls(llmtest.Call("c2", "everything__echo", `{"message":"hi there"}`),
			llmtest.Call("c3", "dictionary__lookup", `{"word":"cat"}`)), llmtest.Text("Done."))
	require.Contains(t, toolResult(t, b.model, "c2"), "hi there")
	require.Equal(t, "cat: a small word", toolResult(t, b.model, "c3"))

	// A schema violation and a timeout go back to the model as tool errors.
	ask("add two and two",
		llmtest.ToolCalls(llmtest.Call("c4", "tools__add", `{"a":"two","b":2}`)), llmtest.Text("I could not."))
	bad := toolResult(t, b.model, "c4")
	require.Contains(t, bad, "error")
	require.Contains(t, bad, "invalid arguments for tools__add")
	ask("sleep a while",
		llmtest.ToolCalls(llmtest.Call("c5", "tools__sleep", `{"ms":20000}`)), llmtest.Text("It took too long."))
	require.Contains(t, toolResult(t, b.model, "c5"), "tools__sleep did not answer within 1s")

	// A crash: the call fails, the server is down, then back, and works.
	firstPID, firstChild := pidIn(t, pidFile), pidIn(t, childFile)
	ask("crash it",
		llmtest.ToolCalls(llmtest.Call("c6", "tools__crash", `{}`)), llmtest.Text("It fell over."))
	require.Contains(t, toolResult(t, b.model, "c6"), "error")
	require.Eventually(t, func() bool {
		_, h := getHealth(t, r.addr)
		return h.Components["mcp:tools"] == "ok" && pidIn(t, pidFile) != firstPID
	}, 30*time.Second, 20*time.Millisecond, "the crashed server did not come back; stderr:\n%s", r.stderr)
	require.Eventually(t, func() bool { return gone(firstPID) && gone(firstChild) }, waitFor, 10*time.Millisecond,
		"the crashed server's process group was left behind")
	require.Equal(t, "Back.", ask("echo again",
		llmtest.ToolCalls(llmtest.Call("c7", "tools__echo", `{"text":"back again"}`)), llmtest.Text("Back.")))
	require.Equal(t, "back again", toolResult(t, b.model, "c7"))

	metrics := scrape(t, r.addr)
	for _, want := range []string{
		`parley_mcp_tool_calls_total{bot="default",outcome="ok",server="tools",tool="echo"} 2`,
		`parley_mcp_tool_calls_total{bot="default",outcome="ok",server="everything",tool="echo"} 1`,
		`parley_mcp_tool_calls_total{bot="default",outcome="ok",server="dictionary",tool="lookup"} 1`,
		`parley_mcp_tool_calls_total{bot="default",outcome="invalid_arguments",server="tools",tool="add"} 1`,
		`parley_mcp_tool_calls_total{bot="default",outcome="timeout",server="tools",tool="sleep"} 1`,
		`parley_mcp_tool_call_duration_seconds_count{bot="default",server="tools",tool="echo"} 2`,
	} {
		require.Contains(t, metrics, want)
	}

	// Stopping ends the server and the child it spawned.
	pid, child := pidIn(t, pidFile), pidIn(t, childFile)
	r.stop(t)
	require.Eventually(t, func() bool { return gone(pid) && gone(child) }, waitFor, 10*time.Millisecond,
		"an MCP server process outlived parley run")
	logs := r.stderr.String()
	require.Contains(t, logs, "server=broken", "the broken server is named in the log")
	require.NotContains(t, logs, "DONOTLEAK", "a secret reached the log")
}

// Through parley run on Telegram with an MCP server whose tool returns a
// PNG: the model calls the tool, whose result names the image's handle,
// then share_image with it, and the user gets the model's reply and then
// the picture (sendPhoto). In the next turn a handle names
// nothing (images are kept per turn): the model is told by a tool error,
// and the user gets its words alone.
func TestMCPImageSharedThroughParleyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	cfg := b.writeConfig(t, telegramConfig(fake, "")+fmt.Sprintf(`mcp:
  servers:
    tools:
      command: %q
      tools: [image]
`, mcptest.TestServerBinary(t)))
	r := b.start(t, cfg)
	require.Eventually(t, func() bool {
		_, h := getHealth(t, r.addr)
		return h.Components["mcp:tools"] == "ok"
	}, 60*time.Second, 20*time.Millisecond, "the mcp server never came up; stderr:\n%s", r.stderr)

	b.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "tools__image", `{}`)),
		llmtest.ToolCalls(llmtest.Call("c2", "share_image", `{"image":"mcp-1"}`)),
		llmtest.Text("Here is the red square."),
		llmtest.ToolCalls(llmtest.Call("c3", "share_image", `{"image":"mcp-1"}`)),
		llmtest.Text("I have no picture to show this time."),
	)
	fake.SendPrivate(ada, "show me the square")
	files := fake.WaitFiles(t, ada.ID, 1, waitFor)
	require.Equal(t, "sendPhoto", files[0].Method)
	require.Equal(t, "photo", files[0].Kind)
	// A streamed reply finishes its text first, then the picture follows
	// alone, as a generated picture does.
	sent := fake.WaitSent(t, ada.ID, 2, waitFor)
	require.Len(t, sent, 2)
	require.Equal(t, "Here is the red square.", sent[0].Plain)
	require.Equal(t, files[0].MessageID, sent[1].MessageID, "the picture after its caption")
	require.Empty(t, files[0].CaptionPlain)
	pic, err := png.Decode(bytes.NewReader(files[0].Data))
	require.NoError(t, err, "the tool's PNG")
	require.Equal(t, image.Rect(0, 0, 2, 2), pic.Bounds())
	r8, g8, b8, _ := pic.At(1, 1).RGBA()
	require.Equal(t, [3]uint32{0xffff, 0, 0}, [3]uint32{r8, g8, b8}, "red, as the tool drew it")
	require.Contains(t, toolResult(t, b.model, "c1"), `call share_image {"image":"mcp-1"}`)
	require.Contains(t, toolResult(t, b.model, "c2"), "will be sent with your reply")
	require.Contains(t, b.model.Requests()[0].ToolNames(), "share_image")

	fake.SendPrivate(ada, "and again?")
	sent = fake.WaitSent(t, ada.ID, 3, waitFor)
	require.Equal(t, "I have no picture to show this time.", sent[len(sent)-1].Plain)
	bad := toolResult(t, b.model, "c3")
	require.Contains(t, bad, `"error"`)
	require.Contains(t, bad, `share_image: there is no image \"mcp-1\": no MCP tool has returned an image`)
	require.Len(t, fake.Files(ada.ID), 1, "no picture the second time")
}
