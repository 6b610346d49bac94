// Package testskip skips a test that needs what the machine lacks
// (Chromium, PostgreSQL) and tells the person running the tests. `go test
// ./...` shows a passing package's output only with -v, so a skip would
// go unseen and a missing browser would pass for a tested page: the first
// test of a run to skip for a reason writes one line to the terminal
// itself (/dev/tty), once per reason however many packages skip for it.
package testskip

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Skip skips t, saying why (what is missing) and how to run what it
// skips; the person at the terminal reads it once per `go test` run.
func Skip(t testing.TB, why, enable string) {
	t.Helper()
	var w io.Writer = io.Discard
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		w = tty
	}
	SkipTo(t, w, os.TempDir(), os.Getppid(), why, enable)
}

// SkipTo is Skip telling w, with Tell's dir and run.
func SkipTo(t testing.TB, w io.Writer, dir string, run int, why, enable string) {
	t.Helper()
	Tell(w, dir, run, why, enable)
	t.Skip("!!! SKIPPED: needs " + why + " (" + enable + ")")
}

// Tell writes the line about a skip to w unless it was written already
// in this run: run is the go command's process id (every test binary of
// one `go test` is its child), and a marker file in dir records the
// reason for it. It reports whether it wrote.
func Tell(w io.Writer, dir string, run int, why, enable string) bool {
	sum := sha256.Sum256([]byte(why))
	marker := filepath.Join(dir, fmt.Sprintf("parley-test-skip-%d-%s", run, hex.EncodeToString(sum[:6])))
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false // told already in this run (or the directory is not writable: better silent than repeated)
	}
	_ = f.Close()
	_, err = fmt.Fprintf(w, "parley tests: SKIPPED the tests that need %s: %s\n", why, enable)
	return err == nil
}
