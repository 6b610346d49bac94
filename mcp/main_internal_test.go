package mcp

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// parentEnv, when set, makes the test binary act as a parent process that
// runs a Manager with the test server (its value: the server binary) and
// then waits to be killed; see TestParentKilled.
const (
	parentEnv     = "PARLEY_MCP_TEST_PARENT"
	parentPIDFile = "PARLEY_MCP_TEST_PIDFILE"
)

func TestMain(m *testing.M) {
	if bin := os.Getenv(parentEnv); bin != "" {
		runParent(bin, os.Getenv(parentPIDFile))
		return
	}
	goleak.VerifyTestMain(m)
}

// runParent starts a Manager with the test server, which writes its pid to
// pidFile, and waits until it is killed. The server is -stubborn (it stays
// when stdin closes), so only the parent-death signal can end it.
func runParent(bin, pidFile string) {
	m, err := New(Options{Servers: []Server{{Name: "t", Command: bin, Args: []string{"-stubborn", "-pidfile", pidFile}}}})
	if err == nil {
		err = m.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "parent:", err)
		os.Exit(1)
	}
	// Not a wait for a condition: this process exists to be killed.
	time.Sleep(time.Hour)
}
