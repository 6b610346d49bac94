//go:build linux

package mcp

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/mcp/mcptest"
)

// stdioServer is the test server as a configured stdio server.
func stdioServer(t *testing.T, name string, args ...string) Server {
	return Server{Name: name, Command: mcptest.TestServerBinary(t), Args: args}
}

func newStdioManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	require.NoError(t, err)
	startManager(t, m)
	return m
}

func TestStdioRoundTrip(t *testing.T) {
	t.Parallel()
	logs := newLogRecorder()
	const secret = "s3cr3t-token-value"
	srv := stdioServer(t, "ts", "-stderr-env", "TS_TOKEN")
	srv.Env = map[string]string{"TS_TOKEN": secret, "TS_PLAIN": "visible"}
	m := newStdioManager(t, Options{Servers: []Server{srv}, Logger: logs.logger(), Vision: true})
	waitState(t, m, "ts", isOK)

	names := toolsByName(t, m)
	for _, want := range []string{"ts__echo", "ts__add", "ts__sleep", "ts__image", "ts__crash", "ts__getenv", "ts__add_tool"} {
		require.Contains(t, names, want)
	}
	out, err := call(names["ts__echo"], `{"text":"hello"}`)
	require.NoError(t, err)
	require.Equal(t, "hello", out.Text)
	out, err = call(names["ts__add"], `{"a":2,"b":3}`)
	require.NoError(t, err)
	require.Equal(t, "5", out.Text)
	_, err = call(names["ts__add"], `{"a":2}`)
	require.ErrorContains(t, err, `missing properties: ["b"]`)
	out, err = call(names["ts__getenv"], `{"name":"TS_PLAIN"}`)
	require.NoError(t, err)
	require.Equal(t, "visible", out.Text, "Env reaches the process")
	out, err = call(names["ts__image"], `{}`)
	require.NoError(t, err)
	require.Len(t, out.Images, 1)
	require.True(t, strings.HasPrefix(out.Images[0], "data:image/png;base64,"), out.Images[0])

	// stderr is logged at debug, line by line, with the server's name,
	// and with the secrets taken out.
	require.Eventually(t, func() bool { return logs.count("DEBUG", "server stderr", "server=ts", "testserver: starting") == 1 }, waitFor, poll)
	require.Eventually(t, func() bool { return logs.count("server stderr", "TS_TOKEN=[redacted]") == 1 }, waitFor, poll)
	for _, l := range logs.all() {
		require.NotContains(t, l, secret)
	}
}

func TestStdioCrashAndRestart(t *testing.T) {
	t.Parallel()
	var obs observed
	m := newStdioManager(t, Options{
		Servers:    []Server{stdioServer(t, "ts")},
		Observe:    obs.observe,
		RestartMin: 300 * time.Millisecond, // long enough to see it down
		RestartMax: time.Second,
	})
	waitState(t, m, "ts", isOK)
	echo := tool(t, m, "ts__echo")

	_, err := call(tool(t, m, "ts__crash"), `{}`)
	require.ErrorContains(t, err, "the ts server is not available right now")
	waitState(t, m, "ts", func(s string) bool { return strings.HasPrefix(s, "down: the server exited (exit status 3)") })
	require.Contains(t, m.State("ts"), "crashing on purpose", "the last stderr line says why")
	_, err = call(echo, `{"text":"x"}`)
	require.ErrorContains(t, err, "the ts server is not available right now: the server exited (exit status 3)")

	waitState(t, m, "ts", isOK)
	out, err := call(echo, `{"text":"again"}`)
	require.NoError(t, err)
	require.Equal(t, "again", out.Text)
	require.Equal(t, []string{"ts crash unavailable", "ts echo unavailable", "ts echo ok"}, obs.all())
}

func TestStdioListChanged(t *testing.T) {
	t.Parallel()
	m := newStdioManager(t, Options{Servers: []Server{stdioServer(t, "ts")}})
	waitState(t, m, "ts", isOK)
	out, err := call(tool(t, m, "ts__add_tool"), `{"name":"fresh"}`)
	require.NoError(t, err)
	require.Equal(t, "added fresh", out.Text)
	require.Eventually(t, func() bool { _, ok := toolsByName(t, m)["ts__fresh"]; return ok }, waitFor, poll)
	out, err = call(tool(t, m, "ts__fresh"), `{}`)
	require.NoError(t, err)
	require.Equal(t, "I am fresh", out.Text)
}

func TestStdioMisbehavingServers(t *testing.T) {
	t.Parallel()
	logs := newLogRecorder()
	m, err := New(Options{
		Servers: []Server{
			stdioServer(t, "garbage", "-garbage"),
			stdioServer(t, "noinit", "-noinit"),
			{Name: "missing", Command: "/nonexistent/server"},
			stdioServer(t, "good"),
		},
		Logger:      logs.logger(),
		InitTimeout: 500 * time.Millisecond,
		RestartMin:  time.Minute, // one attempt each in this test
	})
	require.NoError(t, err)
	began := time.Now()
	startManager(t, m)
	require.Less(t, time.Since(began), 100*time.Millisecond, "Start does not wait for servers")

	waitState(t, m, "good", isOK)
	waitState(t, m, "garbage", isDown)
	waitState(t, m, "noinit", isDown)
	waitState(t, m, "missing", isDown)
	require.Contains(t, m.State("garbage"), "initialize failed")
	require.Contains(t, m.State("garbage"), "invalid character")
	require.Equal(t, "down: no answer to initialize within 500ms", m.State("noinit"))
	require.Contains(t, m.State("missing"), "cannot start /nonexistent/server")
	for _, name := range []string{"garbage", "noinit", "missing"} {
		require.Equal(t, 1, logs.count("WARN", "server is down", "server="+name), name)
	}
	require.ElementsMatch(t, []string{"good__echo", "good__add", "good__sleep", "good__image", "good__crash", "good__getenv", "good__add_tool"},
		toolNames(t, m), "only the good server's tools are offered")
}

func TestStdioStopLeavesNoProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	m, err := New(Options{Servers: []Server{stdioServer(t, "ts", "-pidfile", pidFile, "-spawn", "-childpid", childFile)}})
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background()))
	waitState(t, m, "ts", isOK)
	pid, child := readPID(t, pidFile), readPID(t, childFile)
	t.Cleanup(func() { killIfFailed(t, pid, child) })
	require.False(t, processGone(pid))
	require.False(t, processGone(child))

	// A slow call in flight when Stop comes fails as unavailable.
	errc := make(chan error, 1)
	sleep := tool(t, m, "ts__sleep")
	go func() { _, err := call(sleep, `{"ms":60000}`); errc <- err }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, m.Stop(ctx))
	require.Equal(t, "down: stopped", m.State("ts"))
	require.ErrorContains(t, <-errc, "the ts server is not available right now")
	require.Eventually(t, func() bool { return processGone(pid) }, waitFor, poll, "the server is gone")
	require.Eventually(t, func() bool { return processGone(child) }, waitFor, poll, "the server's child is gone")
}

func TestParentKilled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), parentEnv+"="+mcptest.TestServerBinary(t), parentPIDFile+"="+pidFile)
	parent.Stderr = os.Stderr
	require.NoError(t, parent.Start())
	parentDone := make(chan error, 1)
	go func() { parentDone <- parent.Wait() }()
	t.Cleanup(func() { _ = parent.Process.Kill() })

	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil }, waitFor, poll, "the server never started")
	pid := readPID(t, pidFile)
	require.False(t, processGone(pid))
	// If the test fails, the server must not outlive it either.
	t.Cleanup(func() { killIfFailed(t, pid) })

	require.NoError(t, parent.Process.Signal(syscall.SIGKILL))
	<-parentDone
	require.Eventually(t, func() bool { return processGone(pid) }, waitFor, poll, "the server outlived its parent")
}

func TestProbe(t *testing.T) {
	t.Parallel()
	allow := stdioServer(t, "some")
	allow.Tools = []string{"echo", "add"}
	m, err := New(Options{
		Servers:     []Server{stdioServer(t, "ts"), allow, stdioServer(t, "garbage", "-garbage")},
		InitTimeout: 5 * time.Second,
	})
	require.NoError(t, err)
	ctx := context.Background()
	n, err := m.Probe(ctx, "ts")
	require.NoError(t, err)
	require.Equal(t, 7, n)
	n, err = m.Probe(ctx, "some")
	require.NoError(t, err)
	require.Equal(t, 2, n, "the allow-list counts")
	_, err = m.Probe(ctx, "garbage")
	require.ErrorContains(t, err, "mcp: garbage: initialize failed")
	_, err = m.Probe(ctx, "nope")
	require.EqualError(t, err, `mcp: no server named "nope"`)
	require.Equal(t, StateStarting, m.State("ts"), "Probe does not touch the loop")
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var b []byte
	require.Eventually(t, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil && len(b) > 0
	}, waitFor, poll, "no pid in %s", path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie nobody has reaped yet (in a container, PID 1 may not reap).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command, which is in parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

func TestStdioStopEscalates(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	m, err := New(Options{Servers: []Server{stdioServer(t, "ts", "-stubborn", "-pidfile", pidFile)}})
	require.NoError(t, err)
	m.grace = 100 * time.Millisecond
	require.NoError(t, m.Start(context.Background()))
	waitState(t, m, "ts", isOK)
	pid := readPID(t, pidFile)
	t.Cleanup(func() { killIfFailed(t, pid) })

	// Closing stdin and SIGTERM are not enough: SIGKILL to the group is.
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, m.Stop(ctx))
	require.Less(t, time.Since(began), 5*time.Second)
	require.True(t, processGone(pid), "Stop waited for the process to end")
}

// killIfFailed kills the processes a failed test may have left behind.
func killIfFailed(t *testing.T, pids ...int) {
	if t.Failed() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
