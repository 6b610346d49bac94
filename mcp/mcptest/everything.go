package mcptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// EverythingPackage is the reference server EverythingServer installs.
const EverythingPackage = "@modelcontextprotocol/server-everything@2026.8.31"

var everythingOnce = sync.OnceValues(installEverything)

// EverythingServer returns the command and arguments that run the
// official reference server @modelcontextprotocol/server-everything over
// stdio. It installs the package with npm once, into $PARLEY_TEST_NPM_DIR
// or else the user's cache directory (parley-test-npm), and skips the
// install when it is there already. Without node or npm the test fails.
func EverythingServer(t testing.TB) (command string, args []string) {
	t.Helper()
	bin, err := everythingOnce()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	return bin, []string{"stdio"}
}

func installEverything() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed (apt-get install nodejs npm): the interoperability tests need it to run %s", EverythingPackage)
	}
	dir := os.Getenv("PARLEY_TEST_NPM_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a directory for npm packages: %w (set PARLEY_TEST_NPM_DIR)", err)
		}
		dir = filepath.Join(cache, "parley-test-npm")
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed (apt-get install npm): the interoperability tests need it to install %s", EverythingPackage)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Another test process may be installing into the same directory.
	unlock, err := lockDir(dir)
	if err != nil {
		return "", fmt.Errorf("locking %s: %w", dir, err)
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", dir, EverythingPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s into %s: %v\n%s", EverythingPackage, dir, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("npm installed %s but %s is missing: %w", EverythingPackage, bin, err)
	}
	return bin, nil
}
