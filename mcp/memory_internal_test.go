package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

const objectSchema = `{"type":"object"}`

func echoTool(s *sdk.Server, name string) {
	addTool(s, name, `{"type":"object","properties":{"text":{"type":"string"}}}`,
		func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
			return textResult(fmt.Sprint(args["text"])), nil
		})
}

func TestNamesTheModelSees(t *testing.T) {
	t.Parallel()
	logs := newLogRecorder()
	long := strings.Repeat("n", 70)
	srv := newSDKServer()
	for _, name := range []string{"read", "do.thing", long, "a.b", "a_b"} {
		echoTool(srv, name)
	}
	m := memManager(t, Options{Logger: logs.logger()}, map[string]*sdk.Server{"files": srv})
	waitState(t, m, "files", isOK)

	names := toolsByName(t, m)
	require.Len(t, names, 5)
	for _, want := range []string{"files__read", "files__do_thing", toolName("files", long), "files__a_b", uniqueName("files", "a.b")} {
		require.Contains(t, names, want)
	}
	require.Equal(t, "the read tool", names["files__read"].Description)
	require.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string"}}}`, string(names["files__read"].Parameters))
	// The tool really called "a_b" keeps its name; "a.b" gives way.
	out, err := call(names["files__a_b"], `{"text":"hi"}`)
	require.NoError(t, err)
	require.Equal(t, "hi", out.Text)
	out, err = call(names[toolName("files", long)], `{"text":"long"}`)
	require.NoError(t, err)
	require.Equal(t, "long", out.Text)

	require.Equal(t, 1, logs.count("tool renamed", "server=files", "tool=do.thing", "name=files__do_thing"))
	// A change of the list renames again but does not log again.
	echoTool(srv, "later")
	require.Eventually(t, func() bool { _, ok := toolsByName(t, m)["files__later"]; return ok }, waitFor, poll)
	require.Equal(t, 1, logs.count("tool renamed", "tool=do.thing"))
	require.Equal(t, 1, logs.count("tool renamed", "tool="+long))
}

func TestNamesAreUniqueAcrossServers(t *testing.T) {
	t.Parallel()
	// "a_" + "__" + "b" and "a" + "__" + "_b" are both "a___b".
	s1, s2 := newSDKServer(), newSDKServer()
	echoTool(s1, "b")
	echoTool(s2, "_b")
	m := memManager(t, Options{}, map[string]*sdk.Server{"a_": s1, "a": s2})
	waitState(t, m, "a", isOK)
	waitState(t, m, "a_", isOK)
	names := toolsByName(t, m)
	require.Len(t, names, 2)
	require.Contains(t, names, "a___b")
	require.Contains(t, names, uniqueName("a_", "b"), "servers in name order: a first")
}

func TestAllowList(t *testing.T) {
	t.Parallel()
	logs := newLogRecorder()
	srv := newSDKServer()
	for _, name := range []string{"a", "b", "c"} {
		echoTool(srv, name)
	}
	m := memManager(t, Options{Logger: logs.logger(), Servers: []Server{{Name: "s", Command: "x", Tools: []string{"a", "missing"}}}},
		map[string]*sdk.Server{"s": srv})
	waitState(t, m, "s", isOK)
	require.Equal(t, []string{"s__a"}, toolNames(t, m))
	require.Equal(t, 1, logs.count("WARN", "allow-listed tool not offered", "server=s", "tool=missing"))

	// The list changes; the warning is not repeated, and "missing" now
	// comes in while "d" stays out.
	echoTool(srv, "d")
	echoTool(srv, "missing")
	require.Eventually(t, func() bool { return len(toolNames(t, m)) == 2 }, waitFor, poll)
	require.ElementsMatch(t, []string{"s__a", "s__missing"}, toolNames(t, m))
	require.Equal(t, 1, logs.count("allow-listed tool not offered"))
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	logs := newLogRecorder()
	var obs observed
	var calls atomic.Int32
	srv := newSDKServer()
	addTool(srv, "add", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`,
		func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
			calls.Add(1)
			return textResult("sum"), nil
		})
	addTool(srv, "loose", `{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`,
		func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
			calls.Add(1)
			return textResult("reached"), nil
		})
	m := memManager(t, Options{Logger: logs.logger(), Observe: obs.observe}, map[string]*sdk.Server{"calc": srv})
	waitState(t, m, "calc", isOK)

	add := tool(t, m, "calc__add")
	_, err := call(add, `{"a":1}`)
	require.EqualError(t, err, `invalid arguments for calc__add: required: missing properties: ["b"]`)
	_, err = call(add, `{"a":"one","b":2}`)
	require.ErrorContains(t, err, "/properties/a")
	require.ErrorContains(t, err, `want "integer"`)
	require.Zero(t, calls.Load(), "invalid arguments never reach the server")
	out, err := call(add, `{"a":1,"b":2}`)
	require.NoError(t, err)
	require.Equal(t, "sum", out.Text)

	// A schema that does not compile is not used to check arguments.
	require.Equal(t, 1, logs.count("WARN", "input schema does not compile", "tool=loose"))
	out, err = call(tool(t, m, "calc__loose"), `{"a":"anything"}`)
	require.NoError(t, err)
	require.Equal(t, "reached", out.Text)

	require.Equal(t, []string{"calc add invalid_arguments", "calc add invalid_arguments", "calc add ok", "calc loose ok"}, obs.all())
}

func TestToolError(t *testing.T) {
	t.Parallel()
	var obs observed
	srv := newSDKServer()
	addTool(srv, "fail", objectSchema, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the disk is full"}}}, nil
	})
	addTool(srv, "mute", objectSchema, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true}, nil
	})
	m := memManager(t, Options{Observe: obs.observe}, map[string]*sdk.Server{"s": srv})
	waitState(t, m, "s", isOK)
	_, err := call(tool(t, m, "s__fail"), `{}`)
	require.EqualError(t, err, "the disk is full")
	_, err = call(tool(t, m, "s__mute"), `{}`)
	require.EqualError(t, err, "s__mute failed without saying why")
	require.Equal(t, []string{"s fail tool_error", "s mute tool_error"}, obs.all())
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	var obs observed
	cancelled := make(chan struct{})
	srv := newSDKServer()
	addTool(srv, "block", objectSchema, func(ctx context.Context, _ map[string]any) (*sdk.CallToolResult, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	m := memManager(t, Options{Observe: obs.observe, Servers: []Server{{Name: "slow", Command: "x", Timeout: 100 * time.Millisecond}}},
		map[string]*sdk.Server{"slow": srv})
	waitState(t, m, "slow", isOK)
	began := time.Now()
	_, err := call(tool(t, m, "slow__block"), `{}`)
	require.EqualError(t, err, "slow__block did not answer within 100ms")
	require.Less(t, time.Since(began), 5*time.Second)
	select {
	case <-cancelled: // the server was told the call was cancelled
	case <-time.After(waitFor):
		t.Fatal("the server never saw the call cancelled")
	}
	require.Equal(t, []string{"slow block timeout"}, obs.all())
	require.Equal(t, StateOK, m.State("slow"), "a slow tool does not bring the server down")
}

func TestToolListChanged(t *testing.T) {
	t.Parallel()
	var obs observed
	srv := newSDKServer()
	echoTool(srv, "first")
	m := memManager(t, Options{Observe: obs.observe}, map[string]*sdk.Server{"s": srv})
	waitState(t, m, "s", isOK)
	first := tool(t, m, "s__first")

	echoTool(srv, "second")
	require.Eventually(t, func() bool { _, ok := toolsByName(t, m)["s__second"]; return ok }, waitFor, poll)
	out, err := call(tool(t, m, "s__second"), `{"text":"new"}`)
	require.NoError(t, err)
	require.Equal(t, "new", out.Text)

	srv.RemoveTools("first")
	require.Eventually(t, func() bool { _, ok := toolsByName(t, m)["s__first"]; return !ok }, waitFor, poll)
	_, err = call(first, `{"text":"old"}`)
	require.EqualError(t, err, "s__first is no longer offered by the s server")
	require.Equal(t, []string{"s second ok", "s first unavailable"}, obs.all())
}

func TestServerDownAndBack(t *testing.T) {
	t.Parallel()
	logs := newLogRecorder()
	var obs observed
	srv := newSDKServer()
	echoTool(srv, "echo")
	var (
		mu       sync.Mutex
		sessions []*sdk.ServerSession
		refuse   atomic.Bool
	)
	m, err := New(Options{
		Servers:    []Server{{Name: "s", Command: "x"}},
		Logger:     logs.logger(),
		Observe:    obs.observe,
		RestartMin: 5 * time.Millisecond,
		RestartMax: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	m.dialHook = func(ctx context.Context, _ string) (sdk.Transport, error) {
		if refuse.Load() {
			return nil, fmt.Errorf("connection refused")
		}
		st, ct := sdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct, nil
	}
	require.Equal(t, StateStarting, m.State("s"))
	startManager(t, m)
	waitState(t, m, "s", isOK)
	echo := tool(t, m, "s__echo")

	// The server goes away and refuses to come back for now.
	refuse.Store(true)
	mu.Lock()
	require.NoError(t, sessions[0].Close())
	mu.Unlock()
	waitState(t, m, "s", func(s string) bool { return s == "down: connection refused" })
	require.Empty(t, toolNames(t, m), "a down server's tools are not offered")
	_, err = call(echo, `{"text":"x"}`)
	require.EqualError(t, err, "the s server is not available right now: connection refused")
	// Retries are logged, but only the first failure at warn.
	require.Eventually(t, func() bool { return logs.count("DEBUG", "server is down", "connection refused") >= 2 }, waitFor, poll)
	require.Equal(t, 1, logs.count("WARN", "server went down"))
	require.Zero(t, logs.count("WARN", "server is down"))

	refuse.Store(false)
	waitState(t, m, "s", isOK)
	out, err := call(echo, `{"text":"back"}`)
	require.NoError(t, err, "a tool offered before the restart works after it")
	require.Equal(t, "back", out.Text)
	require.Equal(t, []string{"s echo unavailable", "s echo ok"}, obs.all())
}

func TestConcurrentTurns(t *testing.T) {
	t.Parallel()
	srv := newSDKServer()
	echoTool(srv, "echo")
	m := memManager(t, Options{}, map[string]*sdk.Server{"s": srv})
	waitState(t, m, "s", isOK)
	var wg sync.WaitGroup
	errs := make(chan error, 16*10)
	for g := range 16 {
		wg.Go(func() {
			for i := range 10 {
				ts, err := m.Tools(context.Background(), nil)
				if err != nil || len(ts) != 1 {
					errs <- fmt.Errorf("tools: %v %d", err, len(ts))
					return
				}
				want := fmt.Sprintf("%d-%d", g, i)
				out, err := call(ts[0], fmt.Sprintf(`{"text":%q}`, want))
				if err != nil || out.Text != want {
					errs <- fmt.Errorf("call: %v %q", err, out.Text)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestToolsFollowPages(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "paged", Version: "v1"}, &sdk.ServerOptions{PageSize: 2})
	for i := range 5 {
		echoTool(srv, fmt.Sprintf("t%d", i))
	}
	m := memManager(t, Options{}, map[string]*sdk.Server{"p": srv})
	waitState(t, m, "p", isOK)
	require.ElementsMatch(t, []string{"p__t0", "p__t1", "p__t2", "p__t3", "p__t4"}, toolNames(t, m))
}
