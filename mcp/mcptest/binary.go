package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

const testServerPkg = "github.com/parleybot/parley/mcp/mcptest/testserver"

var buildOnce = sync.OnceValues(buildTestServer)

// TestServerBinary builds the test server (./testserver) once per test
// process and returns the path of the binary.
func TestServerBinary(t testing.TB) string {
	t.Helper()
	path, err := buildOnce()
	if err != nil {
		t.Fatalf("mcptest: building the test server: %v", err)
	}
	return path
}

// buildTestServer builds into the user's cache directory, under a
// temporary name renamed into place, so that test processes building at
// once do not trip over each other and nothing piles up in /tmp.
func buildTestServer() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "parley-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	path := filepath.Join(dir, "mcp-testserver"+exe)
	tmp, err := os.CreateTemp(dir, "mcp-testserver-*"+exe)
	if err != nil {
		return "", err
	}
	_ = tmp.Close()
	defer os.Remove(tmp.Name())
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build the test server: %w", err)
	}
	out, err := exec.Command(goBin, "build", "-o", tmp.Name(), testServerPkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", testServerPkg, err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}
