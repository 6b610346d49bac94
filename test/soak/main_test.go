//go:build linux

package soak

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The binary is built once per test binary and removed by TestMain.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// parleyBinary builds ./cmd/parley once (with -race when PARLEY_SOAK_RACE
// is set) and returns its path.
func parleyBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		if binDir, err = os.MkdirTemp("", "parley-soak-"); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(binDir, "parley")
		args := []string{"build", "-o", binPath}
		if os.Getenv("PARLEY_SOAK_RACE") != "" {
			args = append(args, "-race")
		}
		// go test puts $GOROOT/bin first on the PATH of the test binary.
		cmd := exec.Command("go", append(args, "./cmd/parley")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/parley: %w\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// moduleRoot is the nearest directory at or above the working directory
// with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// artifactDir is where the suite leaves its report and the replicas' logs:
// $PARLEY_TEST_ARTIFACTS, else test-artifacts/ at the repository's root,
// in a folder per test.
func artifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("PARLEY_TEST_ARTIFACTS")
	if dir == "" {
		root, err := moduleRoot()
		require.NoError(t, err)
		dir = filepath.Join(root, "test-artifacts")
	}
	dir, err := filepath.Abs(filepath.Join(dir, "soak", t.Name()))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}
