// Package browsertest drives headless Chromium for the tests that look at
// a page as a person would (the web chat, the web console): it finds the
// browser, starts it on a closed network, and keeps screenshots where
// people can open them.
package browsertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/internal/testskip"
)

// Find returns the Chromium to drive. Without one the test skips, loudly,
// except in CI (CI set), where a missing browser is a failure: .ci/run
// installs it, so its absence there is a broken set-up. what names the
// test's subject for the message.
func Find(t testing.TB, what string) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium" // Debian's package
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium: install it with apt-get install chromium (" + what + "'s browser test needs it); CI is set, so this is a failure, not a skip")
	}
	testskip.Skip(t, "Chromium (the pages, looked at in a browser)", "apt-get install chromium, then run them again")
	return ""
}

// Start starts headless Chromium at path with a window of width×height and
// returns a tab's context bounded by timeout; the browser is gone when the
// test ends.
func Start(t testing.TB, path string, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	profile := t.TempDir() // made before the browser's cleanup, removed after it
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
		// Nothing may phone home on a closed network, or wait for it.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
	})
	// The first call starts the browser; its context must be the tab's own,
	// so the deadline is set on what follows.
	require.NoError(t, chromedp.Do(ctx), "starting %s", path)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return ctx
}

// ArtifactDir is where the tests keep files for people to look at:
// $PARLEY_TEST_ARTIFACTS, else test-artifacts/ at the repository's root.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("PARLEY_TEST_ARTIFACTS")
	if dir == "" {
		wd, err := os.Getwd()
		require.NoError(t, err)
		root, err := moduleRoot(wd)
		require.NoError(t, err)
		dir = filepath.Join(root, "test-artifacts")
	}
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// moduleRoot is the nearest directory at or above dir with a go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no go.mod at or above " + dir)
		}
	}
}
